"""Batches of ops: the check each op passes first, and the distinct ops of a batch.

A graph repeats its shapes (the layers of a stack, the blocks of a stage, the steps of a
trace), so :meth:`opsched.cost.profile.Profile.predict_many` prices each distinct
``(kind, attrs)`` once and hands its price to every copy (every zoo network 20 times over:
22 -> 2 us per op, ``benchmarks/bench_cost_predict.py``). An op's price never depends on
the other ops of its batch, so this changes no price (at most the last bits of vectorised
arithmetic; ``tests/cost/test_batch.py`` compares a batch with repeats to each op priced
alone).

Examples
--------
>>> first, inverse = distinct_ops(["matmul"] * 3, [{"M": 2, "N": 2, "K": 2},
...                                                {"K": 2, "N": 2, "M": 2},
...                                                {"M": 2, "N": 2, "K": True}])
>>> first, inverse.tolist()
([0, 2], [0, 0, 1])
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from opsched.errors import GraphError
from opsched.ir import kinds

__all__ = ["check_op", "distinct_ops", "gc_paused"]


def check_op(kind: str, attrs: Mapping[str, Any]) -> None:
    """A known kind with every attr its kind needs (:data:`opsched.ir.kinds.KINDS`) and
    sizes that are non-negative integers (:func:`opsched.ir.kinds.check_sizes`), else
    :class:`GraphError` naming what is missing or wrong."""
    if kind not in kinds.KINDS:
        raise GraphError(f"unknown op kind {kind!r}; known: {', '.join(kinds.KINDS)}")
    missing = [k for k in kinds.KINDS[kind] if k not in attrs]
    if missing:
        raise GraphError(f"{kind} op needs attrs {', '.join(map(repr, missing))}")
    kinds.check_sizes(kind, attrs)


def distinct_ops(
    kind_list: Sequence[str], attrs_list: Sequence[Mapping[str, Any]]
) -> tuple[list[int], np.ndarray]:
    """The first index of each distinct (kind, attrs) and, per op, the position of its
    distinct op in that list. Values compare with their types (``1``, ``1.0`` and ``True``
    differ: the checks treat them differently); a list of plain values (a zoo op's
    ``out_shape``) compares by its items; an op with another unhashable attr value (a fused
    op's parts) is distinct from all others."""
    first: list[int] = []
    seen: dict[Any, int] = {}
    inverse = np.empty(len(kind_list), dtype=np.int64)
    for i, (kind, a) in enumerate(zip(kind_list, attrs_list, strict=True)):
        try:  # the same attrs in another order are the same op
            key: Any = (kind, frozenset((k, type(v), tuple(v) if type(v) is list else v)
                                        for k, v in a.items()))  # fmt: skip
            j = seen.setdefault(key, len(first))
        except TypeError:
            j = len(first)
        if j == len(first):
            first.append(i)
        inverse[i] = j
    return first, inverse


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cycle collector off for the block (pricing makes many small containers and
    no cycles, and each full collection walks every live object of a large graph: 1 -> 8 us
    per op for :func:`distinct_ops` when one lands there); refcounting still frees all."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()

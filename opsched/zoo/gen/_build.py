"""Shared parts of the generators: seeded sampling and a fast array -> OpGraph builder.

Generators describe a graph as NumPy arrays (one entry per op, one per edge) and call
:func:`build_graph`. At a million ops the per-field checks of :class:`~opsched.ir.graph.Op`
dominate the build time, and every value a generator makes is already of the checked type
(a finite float duration, an int size in range, a plain string name), so ops are created
without re-running those checks. :class:`~opsched.ir.graph.OpGraph` still checks what can
go wrong structurally (names, dependencies, cycles).
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from opsched.errors import ProblemError
from opsched.ir.graph import MAX_SIZE, Op, OpGraph

__all__ = [
    "build_graph", "check_count", "draw_durations", "draw_sizes", "finish_graph", "is_real",
    "rng_for",
]  # fmt: skip

# The fields this module fills in directly; if Op ever changes, fall back to the checked
# constructor rather than building an incomplete object.
_OP_FIELDS = (
    "name",
    "duration",
    "deps",
    "output_bytes",
    "workspace_bytes",
    "demands",
    "kind",
    "output",
    "attrs",
    "reads",
    "writes",
)
_FAST = tuple(f.name for f in dataclasses.fields(Op)) == _OP_FIELDS


def rng_for(seed: int) -> np.random.Generator:
    """The NumPy generator every generator draws from (PCG64 seeded with ``seed``)."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ProblemError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.default_rng(int(seed))


def check_count(value: int, what: str, lo: int = 1) -> int:
    """Return ``value`` if it is an integer ``>= lo``, else raise :class:`ProblemError`."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < lo:
        raise ProblemError(f"{what} must be an integer >= {lo}, got {value!r}")
    return int(value)


def is_real(x: object) -> bool:
    """Whether ``x`` is a real number (a ``bool`` is not one here, nor text or None)."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool | np.bool_)


def draw_durations(rng: np.random.Generator, n: int, max_duration: int) -> np.ndarray:
    """Integer durations uniform in ``[1, max_duration]`` (as float64)."""
    check_count(max_duration, "max_duration")
    return rng.integers(1, max_duration + 1, size=n).astype(np.float64)


def draw_sizes(
    rng: np.random.Generator,
    n: int,
    size_unit: int,
    max_size: int,
    workspace_prob: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Output sizes ``size_unit * U[1, max_size]`` and workspaces (with ``workspace_prob``).

    Workspaces are ``size_unit * U[1, max(1, max_size // 2)]``. Sizes are multiples of
    ``size_unit`` so that the CP-SAT memory quantum stays exact.
    """
    check_count(size_unit, "size_unit")
    check_count(max_size, "max_size")
    if size_unit * max_size > MAX_SIZE:
        raise ProblemError("size_unit * max_size must be <= 2^62")
    if not 0.0 <= workspace_prob <= 1.0:
        raise ProblemError(f"workspace_prob must be in [0, 1], got {workspace_prob}")
    out = size_unit * rng.integers(1, max_size + 1, size=n, dtype=np.int64)
    ws = size_unit * rng.integers(1, max(1, max_size // 2) + 1, size=n, dtype=np.int64)
    ws[rng.random(n) >= workspace_prob] = 0
    return out, ws


def build_graph(
    durations: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    *,
    name: str,
    prefix: str = "v",
    kind: str | None = None,
    output_bytes: np.ndarray | None = None,
    workspace_bytes: np.ndarray | None = None,
    outputs: np.ndarray | None = None,
    attrs: Mapping[str, Any] | None = None,
    names: Sequence[str] | None = None,
) -> OpGraph:
    """Build an :class:`OpGraph` from per-op arrays and an edge list ``src[i] -> dst[i]``.

    Ops are named ``prefix + index`` (or ``names``) and listed in index order; duplicate
    edges are dropped. The edges must form a DAG (:class:`OpGraph` checks it).

    Examples
    --------
    >>> import numpy as np
    >>> g = build_graph(np.array([1.0, 2.0, 3.0]), np.array([0, 0, 0]), np.array([1, 2, 2]),
    ...                 name="tiny")
    >>> [op.deps for op in g.ops], g.work
    ([(), ('v0',), ('v0',)], 6.0)
    """
    n = len(durations)
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if len(src):
        if src.min() < 0 or dst.min() < 0 or max(src.max(), dst.max()) >= n:
            raise ProblemError("edge endpoint out of range")
        code = np.sort(dst * n + src)  # by consumer, then producer
        code = code[np.concatenate(([True], code[1:] != code[:-1]))]  # drop duplicates
        dst, src = np.divmod(code, n)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=ptr[1:])
    names_l = list(names) if names is not None else [f"{prefix}{i}" for i in range(n)]
    src_names = [names_l[j] for j in src.tolist()]
    ptr_l = ptr.tolist()
    dur_l = np.asarray(durations, dtype=np.float64).tolist()
    zeros = [0] * n
    out_l = zeros if output_bytes is None else np.asarray(output_bytes).tolist()
    ws_l = zeros if workspace_bytes is None else np.asarray(workspace_bytes).tolist()
    is_out = [False] * n if outputs is None else np.asarray(outputs, dtype=bool).tolist()
    deps_l = [tuple(src_names[ptr_l[i] : ptr_l[i + 1]]) for i in range(n)]
    if _FAST:
        ops = _fast_ops(names_l, dur_l, deps_l, out_l, ws_l, kind, is_out)
    else:
        ops = [
            Op(a, d, deps=p, output_bytes=o, workspace_bytes=w, kind=kind, output=y)
            for a, d, p, o, w, y in zip(names_l, dur_l, deps_l, out_l, ws_l, is_out, strict=True)
        ]
    return OpGraph(tuple(ops), name=name, attrs=dict(attrs or {}))


def _fast_ops(
    names: list[str],
    durations: list[float],
    deps: list[tuple[str, ...]],
    out: list[int],
    ws: list[int],
    kind: str | None,
    outputs: list[bool],
) -> list[Op]:
    """Ops from already-checked values, without :meth:`Op.__post_init__`'s checks."""
    new, put = object.__new__, object.__setattr__
    ops = []
    for a, d, p, o, w, y in zip(names, durations, deps, out, ws, outputs, strict=True):
        op = new(Op)
        put(op, "name", a)
        put(op, "duration", d)
        put(op, "deps", p)
        put(op, "output_bytes", o)
        put(op, "workspace_bytes", w)
        put(op, "demands", {"units": 1})
        put(op, "kind", kind)
        put(op, "output", y)
        put(op, "attrs", {})
        put(op, "reads", ())
        put(op, "writes", ())
        ops.append(op)
    return ops


def finish_graph(
    rng: np.random.Generator,
    n: int,
    src: np.ndarray,
    dst: np.ndarray,
    *,
    max_duration: int,
    memory: bool,
    size_unit: int,
    max_size: int,
    workspace_prob: float,
    name: str,
    prefix: str,
    kind: str,
    durations: np.ndarray | None = None,
) -> OpGraph:
    """Draw durations (unless given) and, with ``memory``, tensor sizes for a generated edge
    list, then build the graph; ops without a consumer are graph outputs."""
    if durations is None:
        durations = draw_durations(rng, n, max_duration)
    out = ws = outputs = None
    if memory:
        out, ws = draw_sizes(rng, n, size_unit, max_size, workspace_prob)
        outputs = np.bincount(src, minlength=n) == 0
    return build_graph(
        durations,
        src,
        dst,
        name=name,
        prefix=prefix,
        kind=kind,
        output_bytes=out,
        workspace_bytes=ws,
        outputs=outputs,
    )

"""Random op-graph generators with seeded, reproducible output.

* :func:`layered`: ops in layers; each op depends on a few ops of earlier layers (mostly the
  previous one), like the stages of a network.
* :func:`gnp`: G(n, p) in topological order, every edge ``i -> j`` (``i < j``) present with
  probability ``p`` (the STG set's "sameprob" generator).

Durations are integers in ``[1, max_duration]``; output sizes are multiples of ``size_unit``
bytes so that the CP-SAT memory quantum stays exact.
"""

from __future__ import annotations

import itertools
import random

from opsched.errors import ProblemError
from opsched.ir.graph import Op, OpGraph

__all__ = ["gnp", "layered"]


def _check(ops: int, what: str, lo: int = 1) -> None:
    if ops < lo:
        raise ProblemError(f"{what} must be >= {lo}, got {ops}")


def layered(
    ops: int,
    *,
    layers: int | None = None,
    max_deps: int = 3,
    max_duration: int = 10,
    size_unit: int = 1 << 20,
    max_size: int = 16,
    workspace_prob: float = 0.3,
    seed: int = 0,
    name: str | None = None,
) -> OpGraph:
    """A layered DAG of ``ops`` ops with memory sizes.

    Each op in layer ``l > 0`` depends on 1..``max_deps`` ops, drawn from layer ``l - 1``
    (always at least one) and, with lower probability, from earlier layers (skip connections).
    Ops of the last layer are graph outputs.

    Examples
    --------
    >>> g = layered(30, layers=6, seed=1)
    >>> g.num_ops, g.name, all(op.output_bytes > 0 for op in g.ops)
    (30, 'layered-30-s1', True)
    >>> layered(30, layers=6, seed=1).to_dict() == g.to_dict()
    True
    """
    _check(ops, "ops")
    rng = random.Random(seed)
    layers = layers or max(2, round(ops**0.5))
    layers = min(layers, ops)
    # split ops into layers of random positive sizes
    cuts = sorted(rng.sample(range(1, ops), layers - 1)) if layers > 1 else []
    bounds = [0, *cuts, ops]
    layer_of: list[list[int]] = [list(range(a, b)) for a, b in itertools.pairwise(bounds)]
    records: list[Op] = []
    names = [f"op{i}" for i in range(ops)]
    for li, members in enumerate(layer_of):
        for i in members:
            deps: set[int] = set()
            if li > 0:
                k = rng.randint(1, max_deps)
                prev = layer_of[li - 1]
                deps.add(rng.choice(prev))
                earlier = [j for lj in layer_of[:li] for j in lj]
                while len(deps) < min(k, len(earlier)):
                    pool = prev if rng.random() < 0.7 else earlier
                    deps.add(rng.choice(pool))
            ws = (
                size_unit * rng.randint(1, max_size // 2 or 1)
                if rng.random() < workspace_prob
                else 0
            )
            records.append(
                Op(
                    names[i],
                    rng.randint(1, max_duration),
                    deps=tuple(names[j] for j in sorted(deps)),
                    output_bytes=size_unit * rng.randint(1, max_size),
                    workspace_bytes=ws,
                    kind="layer",
                    output=li == len(layer_of) - 1,
                )
            )
    return OpGraph(tuple(records), name=name or f"layered-{ops}-s{seed}")


def gnp(
    ops: int,
    p: float,
    *,
    max_duration: int = 10,
    seed: int = 0,
    name: str | None = None,
) -> OpGraph:
    """G(n, p) DAG in topological order: edge ``i -> j`` for ``i < j`` with probability ``p``.

    >>> g = gnp(20, 0.2, seed=3)
    >>> g.num_ops, all(g.index(d) < g.index(op.name) for op in g.ops for d in op.deps)
    (20, True)
    """
    _check(ops, "ops")
    if not 0.0 <= p <= 1.0:
        raise ProblemError(f"edge probability must be in [0, 1], got {p}")
    rng = random.Random(seed)
    records = [
        Op(
            f"t{j}",
            rng.randint(1, max_duration),
            deps=tuple(f"t{i}" for i in range(j) if rng.random() < p),
            kind="task",
        )
        for j in range(ops)
    ]
    return OpGraph(tuple(records), name=name or f"gnp-{ops}-p{p:g}-s{seed}")

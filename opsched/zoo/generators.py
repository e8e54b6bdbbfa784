"""Random op-graph generators with seeded, reproducible output.

* :func:`layered`: ops in layers; each op depends on a few ops of earlier layers (mostly the
  previous one), like the stages of a network.
* :func:`gnp`: G(n, p) in topological order, every edge ``i -> j`` (``i < j``) present with
  probability ``p`` (the STG set's "sameprob" generator).
* :func:`fork_join`, :func:`series_parallel`: structured families
  (:mod:`opsched.zoo.gen.structured`).
* :func:`random_network`: conv / GEMM / elementwise blocks with shapes from
  :mod:`opsched.ir.kinds` (:mod:`opsched.zoo.gen.network`), the input of the fusion pass.
* :func:`example_graph`: the seed document's two examples.
* The planted-optimum generator is :func:`opsched.zoo.planted.planted`.

Durations are integers in ``[1, max_duration]``; output sizes are multiples of ``size_unit``
bytes so that the CP-SAT memory quantum stays exact.
"""

from __future__ import annotations

import itertools
import random

import numpy as np

from opsched.errors import ProblemError
from opsched.ir.graph import MAX_SIZE, Op, OpGraph
from opsched.problem import check_seed
from opsched.zoo.gen._build import check_count, draw_durations, finish_graph, is_real, rng_for
from opsched.zoo.gen.network import random_network
from opsched.zoo.gen.structured import EXAMPLES, example_graph, fork_join, series_parallel

__all__ = [
    "EXAMPLES",
    "example_graph",
    "fork_join",
    "gnp",
    "layered",
    "random_network",
    "series_parallel",
]


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
    ops = check_count(ops, "ops")
    if layers is not None:
        layers = check_count(layers, "layers")
    max_deps = check_count(max_deps, "max_deps")
    max_duration = check_count(max_duration, "max_duration")
    size_unit = check_count(size_unit, "size_unit")
    max_size = check_count(max_size, "max_size")
    if size_unit * max_size > MAX_SIZE:
        raise ProblemError("size_unit * max_size must be <= 2^62")
    if not is_real(workspace_prob) or not 0.0 <= workspace_prob <= 1.0:
        raise ProblemError(f"workspace_prob must be in [0, 1], got {workspace_prob!r}")
    rng = random.Random(check_seed(seed))  # the seeds rng_for takes
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
                # every op of layers 0..li-1: ops are numbered layer by layer
                earlier = range(bounds[li])
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
    memory: bool = False,
    size_unit: int = 1 << 20,
    max_size: int = 16,
    workspace_prob: float = 0.0,
    seed: int = 0,
    name: str | None = None,
) -> OpGraph:
    """G(n, p) DAG in topological order: edge ``i -> j`` for ``i < j`` with probability ``p``.

    The edge count is drawn from its binomial law and that many distinct pairs are sampled
    (NumPy), so the cost is O(n + edges): a million ops with p = 2e-6 take seconds.

    Parameters
    ----------
    ops
        Number of ops ``t0 .. t{n-1}``, in topological order.
    p
        Probability of each of the ``n (n - 1) / 2`` forward edges.
    max_duration
        Durations are integers uniform in ``[1, max_duration]``.
    memory, size_unit, max_size, workspace_prob
        With ``memory``, output sizes ``size_unit * U[1, max_size]``, and a workspace with
        probability ``workspace_prob``; ops without a consumer are graph outputs.
    seed
        Seed of the NumPy generator: equal arguments give equal graphs.

    Examples
    --------
    >>> g = gnp(20, 0.2, seed=3)
    >>> g.num_ops, all(g.index(d) < g.index(op.name) for op in g.ops for d in op.deps)
    (20, True)
    >>> gnp(20, 0.2, seed=3).to_dict() == g.to_dict(), gnp(6, 1.0).num_edges
    (True, 15)
    """
    ops = check_count(ops, "ops")  # 2.5 or True had failed inside NumPy with a TypeError
    if not is_real(p) or not 0.0 <= p <= 1.0:
        raise ProblemError(f"p (the edge probability) must be a number in [0, 1], got {p!r}")
    p = float(p)
    rng = rng_for(seed)
    durations = draw_durations(rng, ops, max_duration)
    pairs = ops * (ops - 1) // 2
    m = int(rng.binomial(pairs, p)) if pairs else 0
    k = np.sort(rng.choice(pairs, size=m, replace=False)) if m else np.zeros(0, np.int64)
    src, dst = _pair_of_index(k.astype(np.int64))
    return finish_graph(
        rng, ops, src, dst, max_duration=max_duration, memory=memory, size_unit=size_unit,
        max_size=max_size, workspace_prob=workspace_prob,
        name=name or f"gnp-{ops}-p{p:g}-s{seed}", prefix="t", kind="task", durations=durations,
    )  # fmt: skip


def _pair_of_index(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Invert the pair numbering ``k = j (j - 1) / 2 + i`` (``0 <= i < j``)."""
    j = np.floor((1.0 + np.sqrt(1.0 + 8.0 * k.astype(np.float64))) / 2.0).astype(np.int64)
    # float rounding can be off by one for huge k: correct both ways
    j -= (j * (j - 1) // 2) > k
    j += ((j + 1) * j // 2) <= k
    return k - j * (j - 1) // 2, j

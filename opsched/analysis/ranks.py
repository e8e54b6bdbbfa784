"""Priority ranks for list scheduling, one array per rule (larger = scheduled first).

Every rule returns one float per op, in graph order. Ties are broken by op index (file
order) in the schedulers, so each rule gives one deterministic schedule.

Rules
-----
``b-level``
    Longest path from the op's start to the end (critical path first; Graham/Hu).
``t-level``
    Earliest start with unlimited units: smaller first (the rank is its negation).
``heft``
    HEFT's upward rank (Topcuoglu et al. 2002): mean duration plus the largest
    ``communication + rank`` over the successors. On identical units without a link model it
    equals the b-level; with ``bandwidth`` (bytes per time unit) an edge costs
    ``output_bytes / bandwidth + latency``.
``cpop``
    CPOP's priority: upward rank + downward rank (the longest path through the op).
``lpt``
    Longest processing time first.
``successors``
    Most immediate successors first.
``random``
    Uniform random ranks from ``numpy.random.default_rng(seed)``.
``perturbed``
    The b-level times a random factor in ``[1, 1.2)`` (seeded): near-critical ops trade
    places, which gives a portfolio diverse but still good candidates.

Examples
--------
>>> from opsched.ir import Op, OpGraph
>>> g = OpGraph((Op("a", 2), Op("b", 3), Op("c", 1, deps=("a", "b"))))
>>> priority(g, "b-level").tolist()
[3.0, 4.0, 1.0]
>>> priority(g, "cpop").tolist()
[3.0, 4.0, 4.0]
>>> priority(g, "successors").tolist()
[1.0, 1.0, 0.0]
"""

from __future__ import annotations

import numpy as np

from opsched._jit import call
from opsched.analysis._kernels import backward_longest, forward_longest
from opsched.analysis.paths import b_level, earliest_starts
from opsched.analysis.topo import topo_indices
from opsched.errors import ProblemError
from opsched.ir.graph import OpGraph

__all__ = [
    "PRIORITY_RULES",
    "downward_rank",
    "priority",
    "upward_rank",
]

#: Names accepted by :func:`priority`.
PRIORITY_RULES = (
    "b-level", "t-level", "heft", "cpop", "lpt", "successors", "random", "perturbed",
)  # fmt: skip


def _edge_cost(graph: OpGraph, bandwidth: float | None, latency: float) -> np.ndarray:
    if bandwidth is None:
        return np.zeros(graph.num_ops)
    if not bandwidth > 0:
        raise ProblemError(f"bandwidth must be > 0, got {bandwidth!r}")
    return graph.output_sizes / float(bandwidth) + float(latency)


def upward_rank(graph: OpGraph, bandwidth: float | None = None, latency: float = 0.0) -> np.ndarray:
    """HEFT's upward rank; the b-level when ``bandwidth`` is None.

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 2, output_bytes=10), Op("b", 1, deps=("a",))))
    >>> upward_rank(g, bandwidth=5).tolist()
    [5.0, 1.0]
    """
    if bandwidth is None:
        return b_level(graph)
    cost = _edge_cost(graph, bandwidth, latency)
    size = graph.num_ops + graph.num_edges
    return call(
        backward_longest, size, topo_indices(graph), graph.durations, graph.succ_ptr,
        graph.succ_idx, cost,
    )  # fmt: skip


def downward_rank(
    graph: OpGraph, bandwidth: float | None = None, latency: float = 0.0
) -> np.ndarray:
    """Longest path from the graph's start to the op's start (the t-level), with edge costs.

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 2, output_bytes=10), Op("b", 1, deps=("a",))))
    >>> downward_rank(g, bandwidth=5).tolist()
    [0.0, 4.0]
    """
    if bandwidth is None:
        return earliest_starts(graph)
    cost = _edge_cost(graph, bandwidth, latency)
    # an edge u -> v costs cost[u]: fold it into u's duration for the forward sweep
    size = graph.num_ops + graph.num_edges
    return call(
        forward_longest, size, topo_indices(graph), graph.durations + cost, graph.pred_ptr,
        graph.pred_idx,
    )  # fmt: skip


def priority(
    graph: OpGraph,
    rule: str = "b-level",
    *,
    seed: int = 0,
    bandwidth: float | None = None,
    latency: float = 0.0,
) -> np.ndarray:
    """The rank of every op under ``rule`` (see the module docstring); larger goes first.

    Raises
    ------
    ProblemError
        For an unknown rule (the message lists the known ones).
    """
    if rule in ("b-level", "blevel", "critical-path"):
        return b_level(graph)
    if rule == "t-level":
        return -earliest_starts(graph)
    if rule == "heft":
        return upward_rank(graph, bandwidth, latency)
    if rule == "cpop":
        return upward_rank(graph, bandwidth, latency) + downward_rank(graph, bandwidth, latency)
    if rule == "lpt":
        return graph.durations.copy()
    if rule == "successors":
        return np.diff(graph.succ_ptr).astype(np.float64)
    if rule == "random":
        return np.random.default_rng(seed).random(graph.num_ops)
    if rule == "perturbed":
        return b_level(graph) * (1.0 + 0.2 * np.random.default_rng(seed).random(graph.num_ops))
    raise ProblemError(f"unknown priority rule {rule!r}; known: {', '.join(PRIORITY_RULES)}")

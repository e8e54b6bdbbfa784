"""Longest-path quantities on a DAG with node durations.

``t-level`` (earliest start, ASAP), ``b-level`` (longest path from an op's start to the end,
its own duration included), ALAP latest starts, slack and the critical path. Each runs in
O(V + E) over the graph's CSR arrays.

References
----------
Y.-K. Kwok and I. Ahmad, "Static scheduling algorithms for allocating directed task graphs to
multiprocessors", ACM Computing Surveys 31(4), 1999 (t-level and b-level).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from opsched._jit import call
from opsched.analysis._kernels import backward_longest, forward_longest
from opsched.analysis.topo import topo_indices
from opsched.errors import ProblemError
from opsched.ir.graph import OpGraph, require_graph

__all__ = [
    "CriticalPath",
    "b_level",
    "critical_path",
    "earliest_starts",
    "latest_starts",
    "min_lifetimes",
    "slack",
    "t_level",
]


def earliest_starts(graph: OpGraph) -> np.ndarray:
    """ASAP start of every op with unlimited units (the t-level), in graph order.

    Examples
    --------
    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 2), Op("b", 3), Op("c", 1, deps=("a", "b"))))
    >>> earliest_starts(g).tolist()
    [0.0, 0.0, 3.0]
    """
    require_graph(graph, "earliest_starts (t_level)")
    size = graph.num_ops + graph.num_edges
    return call(
        forward_longest, size, topo_indices(graph), graph.durations, graph.pred_ptr,
        graph.pred_idx,
    )  # fmt: skip


t_level = earliest_starts


def b_level(graph: OpGraph) -> np.ndarray:
    """Longest path from each op's start to the end of the graph, its duration included.

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 2), Op("b", 3), Op("c", 1, deps=("a", "b"))))
    >>> b_level(g).tolist()
    [3.0, 4.0, 1.0]
    """
    require_graph(graph, "b_level")
    size = graph.num_ops + graph.num_edges
    return call(
        backward_longest, size, topo_indices(graph), graph.durations, graph.succ_ptr,
        graph.succ_idx, np.zeros(graph.num_ops),
    )  # fmt: skip


def latest_starts(graph: OpGraph, horizon: float | None = None) -> np.ndarray:
    """ALAP: the latest start of each op that still finishes everything by ``horizon``.

    ``horizon`` defaults to the critical-path length.

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 2), Op("b", 3), Op("c", 1, deps=("a", "b"))))
    >>> latest_starts(g).tolist()
    [1.0, 0.0, 3.0]
    """
    require_graph(graph, "latest_starts")
    bl = b_level(graph)
    cp = float(bl.max()) if len(bl) else 0.0
    if horizon is None:
        horizon = cp
    elif not (math.isfinite(horizon) and horizon >= cp - 1e-9 * max(1.0, cp)):
        raise ProblemError(
            f"horizon must be a finite time >= the critical path ({cp:g}), got {horizon!r}: "
            "no schedule finishes sooner"
        )
    return horizon - bl


def slack(graph: OpGraph, horizon: float | None = None) -> np.ndarray:
    """How far each op can be delayed from its ASAP start without passing ``horizon``.

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 2), Op("b", 3), Op("c", 1, deps=("a", "b"))))
    >>> slack(g).tolist()
    [1.0, 0.0, 0.0]
    """
    require_graph(graph, "slack")
    return latest_starts(graph, horizon) - earliest_starts(graph)


@dataclass(frozen=True)
class CriticalPath:
    """The length of the longest path (sum of node durations) and one such path."""

    length: float
    ops: list[str]

    def __str__(self) -> str:
        return f"{self.length:g}: {' -> '.join(self.ops)}"


def critical_path(graph: OpGraph) -> CriticalPath:
    """Longest path through the DAG, weighted by op durations.

    Ties are broken by file order. Unlike ``networkx.dag_longest_path``, weights are on the
    nodes, which is what operator durations are.

    Examples
    --------
    >>> from opsched.demo import seed_graph
    >>> cp = critical_path(seed_graph())
    >>> cp.length, " -> ".join(cp.ops)
    (6.0, 'Input -> Conv1 -> Conv2 -> ReLU -> Add -> Output')
    """
    require_graph(graph, "critical_path")
    if graph.num_ops == 0:
        return CriticalPath(0.0, [])
    bl = b_level(graph)
    est = earliest_starts(graph)
    length = float(bl.max())
    tol = 1e-9 * max(1.0, length)
    names = graph.names
    d = graph.durations
    # start: the first op (file order) that starts at 0 and lies on a longest path
    v = int(np.flatnonzero((est <= tol) & (bl >= length - tol))[0])
    path = [v]
    ptr, idx = graph.succ_ptr, graph.succ_idx
    while True:
        nxt = None
        for s in idx[ptr[v] : ptr[v + 1]]:
            if abs(bl[s] - (bl[v] - d[v])) <= tol:
                nxt = int(s)
                break
        if nxt is None:
            break
        path.append(nxt)
        v = nxt
    return CriticalPath(length, [names[i] for i in path])


#: Largest ``ops x edges`` for which :func:`min_lifetimes` runs the exact all-pairs sweep
#: (pure Python, about a second at this size); above it, direct consumers only.
MIN_LIFETIME_EXACT_WORK = 2_000_000


def min_lifetimes(graph: OpGraph) -> np.ndarray:
    """Least time from each op's start to the end of its last consumer, in any schedule.

    A consumer ``c`` of ``v`` cannot start before ``start(v)`` plus the longest path from
    ``v`` to ``c`` (durations of ``v`` and of the ops between), so ``v``'s output lives at
    least ``max_c longest(v -> c) + d(c)``. Ops without consumers get their own duration.
    Exact on graphs with up to :data:`MIN_LIFETIME_EXACT_WORK` ops x edges; above that the
    path is taken as the direct edge (``d(v) + d(c)``), still a valid lower bound.

    Examples
    --------
    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 2), Op("b", 3, deps=("a",)), Op("c", 1, deps=("a", "b"))))
    >>> min_lifetimes(g).tolist()   # a is read by c, which waits for b: 2 + 3 + 1
    [6.0, 4.0, 1.0]
    """
    n = graph.num_ops
    d = graph.durations.astype(float)
    succ = graph.consumers()
    out = d.copy()
    if n * max(graph.num_edges, 1) > MIN_LIFETIME_EXACT_WORK:
        for v in range(n):
            out[v] = max([d[v] + d[c] for c in succ[v]], default=d[v])
        return out
    order = topo_indices(graph)
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    for v in range(n):
        if not succ[v]:
            continue
        last = max(pos[c] for c in succ[v])  # no consumer of v comes later in the order
        dist = {v: 0.0}  # longest path from start(v) to start(u), u reachable from v
        for u in order[pos[v] : last + 1].tolist():
            du = dist.get(u)
            if du is None:
                continue
            for w in succ[u]:
                if pos[w] <= last and dist.get(w, -1.0) < du + d[u]:
                    dist[w] = du + d[u]
        out[v] = max(dist[c] + d[c] for c in succ[v])
    return out

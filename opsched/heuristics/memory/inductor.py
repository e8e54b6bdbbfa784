"""PyTorch Inductor's peak-memory reordering, reimplemented for opsched graphs.

Inductor's ``reorder_for_peak_memory`` (``torch/_inductor/memory.py``) tries a few
topological orders of the scheduler nodes, estimates the peak memory of each, and keeps the
lowest. The candidates, as its documentation describes them:

* **baseline**: the order the graph came in (here: the file order, see
  :func:`~opsched.heuristics.memory.common.file_order`);
* **LPMF** ("least peak memory first", after Kim et al., DAC 2006): a greedy over the ready
  nodes that tracks the largest memory so far. For each ready node it knows the memory
  *during* the node (live + what it allocates) and the change *after* it (what it allocates
  minus what it frees). Among nodes that stay under the peak so far it takes the one that
  leaves the least memory behind; if none does, the one with the smallest memory during it;
  ties by original position;
* **BFS**: FIFO by predecessors: a ready node's priority is the sorted list of the positions
  at which its predecessors were scheduled, smallest (lexicographically) first, ties by
  position; it keeps tensors short-lived;
* **DFS**: a depth-first post-order whose roots, and each node's dependencies, are visited
  in increasing "size with reads" (own output plus the outputs it reads), ties by position.

This reimplementation works on opsched's model: one output tensor per op, freed when its last
consumer ends, graph outputs without consumers held to the end, and workspace held while an
op runs (counted in the memory *during* a node). The orders are compared by their exact peak
(:func:`~opsched.heuristics.memory.common.order_peak`), not an estimate.

References
----------
Inductor's ``torch/_inductor/memory.py`` (``topological_sort_lpmf``, ``topological_sort_bfs``,
``topological_sort_dfs``, ``reorder_for_peak_memory``).
"""

from __future__ import annotations

import bisect
import heapq
import time
from typing import Any

import numpy as np

from opsched.heuristics.memory.common import (
    MemoryModel,
    as_graph,
    file_order,
    order_peak,
    order_schedule,
    post_order,
)
from opsched.ir.graph import OpGraph
from opsched.problem import Problem, require_problem
from opsched.schedule import Schedule

__all__ = [
    "inductor_bfs_order",
    "inductor_dfs_order",
    "inductor_lpmf_order",
    "inductor_memory",
    "inductor_memory_order",
    "inductor_orders",
]


def inductor_lpmf_order(problem_or_graph: Problem | OpGraph) -> np.ndarray:
    """Inductor's LPMF (least peak memory first) greedy order.

    Examples
    --------
    ``a`` feeds a big ``b`` and a small ``c``; ``d`` frees ``c``. LPMF runs the small branch
    first, and ``d`` as soon as it frees memory:

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 1, output_bytes=1), Op("b", 1, deps=("a",), output_bytes=8),
    ...              Op("c", 1, deps=("a",), output_bytes=2), Op("d", 1, deps=("c",))))
    >>> inductor_lpmf_order(g).tolist()
    [0, 2, 3, 1]
    """
    g = as_graph(problem_or_graph)
    m = MemoryModel.of(g)
    n = m.n
    indeg = [len(p) for p in m.preds]
    # unscheduled uses of each tensor (+1 for a held graph output, which is never freed)
    uses = [len(m.succs[v]) + (1 if m.held[v] else 0) for v in range(n)]
    # bytes freed right after each node, kept up to date as uses drop to one
    to_free = [0] * n
    for v in range(n):
        for p in m.preds[v]:
            if uses[p] == 1:
                to_free[v] += m.out[p]
        if uses[v] == 0:
            to_free[v] += m.out[v]  # used only by itself: freed at once
    # The key of a ready op u is (max(live + c(u), max_mem), kept(u), u) with c(u) what it
    # allocates while running (0 if it takes no time): live + max(c(u), A) with the headroom
    # A = max_mem - live. Every op with c(u) <= A ties on the first term, so the least is the
    # op of least (kept, index) among those, found in a min tree over the ops sorted by c;
    # when there is none, the op of least (c, kept, index), from a heap. Taking the minimum
    # over the whole ready set each step was quadratic on wide graphs (10,000 ops fanned out
    # from one: 11.3 s).
    alloc = [m.out[v] + (m.ws[v] if m.runs[v] else 0) for v in range(n)]
    c = [alloc[v] if m.runs[v] else 0 for v in range(n)]
    by_c = sorted(range(n), key=lambda v: c[v])
    pos = [0] * n
    for i, v in enumerate(by_c):
        pos[v] = i
    sorted_c = [c[v] for v in by_c]
    tree = _MinTree(n)
    heap: list[tuple[int, int, int]] = []  # (c, kept, op); stale once not ready or rekeyed
    is_ready = [False] * n

    def kept(u: int) -> int:
        return m.out[u] - to_free[u]

    def rekey(u: int) -> None:  # u became ready, or its kept bytes changed
        if is_ready[u]:
            tree.set(pos[u], (kept(u), u))
            heapq.heappush(heap, (c[u], kept(u), u))

    def make_ready(u: int) -> None:
        is_ready[u] = True
        rekey(u)

    live = m.persistent
    max_mem = m.persistent + sum(m.out[v] for v in range(n) if m.held[v])
    for v in range(n):
        if indeg[v] == 0:
            make_ready(v)
    order: list[int] = []
    for _ in range(n):
        k = bisect.bisect_right(sorted_c, max_mem - live)
        best = tree.prefix_min(k)
        if best is not None:
            v = best[1]
        else:
            while True:  # the least (c, kept, index) still ready with that kept
                _, kv, v = heapq.heappop(heap)
                if is_ready[v] and kv == kept(v):
                    break
        is_ready[v] = False
        tree.set(pos[v], None)
        order.append(v)
        if m.runs[v]:
            max_mem = max(max_mem, live + alloc[v])
        live += kept(v)
        for w in m.succs[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                make_ready(w)
        for p in m.preds[v]:
            uses[p] -= 1
            if uses[p] == 1:  # the one remaining consumer will free it
                for w in m.succs[p]:
                    to_free[w] += m.out[p]
                    rekey(w)
    return np.asarray(order, dtype=np.int64)


class _MinTree:
    """Minimum of ``(kept, op)`` pairs over positions, with point updates (``None``: empty)
    and prefix queries, each in O(log n)."""

    __slots__ = ("size", "vals")

    def __init__(self, n: int) -> None:
        self.size = 1
        while self.size < max(n, 1):
            self.size *= 2
        self.vals: list[tuple[int, int] | None] = [None] * (2 * self.size)

    def set(self, i: int, val: tuple[int, int] | None) -> None:
        vals = self.vals
        i += self.size
        vals[i] = val
        i //= 2
        while i:
            a, b = vals[2 * i], vals[2 * i + 1]
            vals[i] = a if b is None or (a is not None and a < b) else b
            i //= 2

    def prefix_min(self, k: int) -> tuple[int, int] | None:
        """The least value at positions ``0 .. k-1``."""
        best: tuple[int, int] | None = None
        lo, hi = self.size, self.size + min(k, self.size)
        vals = self.vals
        while lo < hi:
            if lo & 1:
                x = vals[lo]
                if x is not None and (best is None or x < best):
                    best = x
                lo += 1
            if hi & 1:
                hi -= 1
                x = vals[hi]
                if x is not None and (best is None or x < best):
                    best = x
            lo //= 2
            hi //= 2
        return best


def inductor_bfs_order(problem_or_graph: Problem | OpGraph) -> np.ndarray:
    """Inductor's BFS order: the ready op whose predecessors ran earliest goes first.

    Examples
    --------
    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 1), Op("b", 1), Op("c", 1, deps=("b",)), Op("d", 1, deps=("a",))))
    >>> inductor_bfs_order(g).tolist()
    [0, 1, 3, 2]
    """
    g = as_graph(problem_or_graph)
    m = MemoryModel.of(g)
    indeg = [len(p) for p in m.preds]
    when = [-1] * m.n
    heap: list[tuple[list[int], int]] = [([], v) for v in range(m.n) if indeg[v] == 0]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        _, v = heapq.heappop(heap)
        when[v] = len(order)
        order.append(v)
        for w in m.succs[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                heapq.heappush(heap, (sorted({when[p] for p in m.preds[w]}), w))
    return np.asarray(order, dtype=np.int64)


def inductor_dfs_order(problem_or_graph: Problem | OpGraph) -> np.ndarray:
    """Inductor's DFS order: post-order, smallest "size with reads" first.

    Examples
    --------
    The lighter of two independent chains is emitted first:

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 1, output_bytes=9), Op("b", 1, deps=("a",), output_bytes=1),
    ...              Op("c", 1, output_bytes=1), Op("d", 1, deps=("c",), output_bytes=1)))
    >>> inductor_dfs_order(g).tolist()
    [2, 3, 0, 1]
    """
    g = as_graph(problem_or_graph)
    m = MemoryModel.of(g)
    weight = [m.out[v] + sum(m.out[p] for p in m.preds[v]) for v in range(m.n)]
    deps_sorted = [sorted(m.preds[v], key=lambda p: (weight[p], p)) for v in range(m.n)]
    roots = sorted(range(m.n), key=lambda v: (weight[v], v))
    return post_order(roots, deps_sorted, m.n)


def inductor_orders(problem_or_graph: Problem | OpGraph) -> dict[str, tuple[np.ndarray, int]]:
    """Every candidate of ``reorder_for_peak_memory`` with its exact peak, by method name.

    Examples
    --------
    >>> from opsched.demo import seed_graph
    >>> sorted(inductor_orders(seed_graph()))
    ['baseline', 'bfs', 'dfs', 'lpmf']
    """
    g = as_graph(problem_or_graph)
    out: dict[str, tuple[np.ndarray, int]] = {}
    for name, fn in (
        ("baseline", file_order),
        ("lpmf", inductor_lpmf_order),
        ("bfs", inductor_bfs_order),
        ("dfs", inductor_dfs_order),
    ):
        order = fn(g)
        out[name] = (order, order_peak(g, order))
    return out


def _best(cands: dict[str, tuple[np.ndarray, int]]) -> tuple[str, np.ndarray, int]:
    name = min(cands, key=lambda k: cands[k][1])  # first of the lowest, in trial order
    return name, cands[name][0], cands[name][1]


def inductor_memory_order(problem_or_graph: Problem | OpGraph) -> np.ndarray:
    """The order Inductor's ``reorder_for_peak_memory`` keeps: the lowest-peak candidate.

    Examples
    --------
    >>> from opsched.demo import seed_graph
    >>> len(inductor_memory_order(seed_graph()))
    7
    """
    return _best(inductor_orders(problem_or_graph))[1]


def inductor_memory(problem: Problem, **_: Any) -> Schedule:
    """Serial schedule (unit 0) of Inductor's peak-memory order.

    ``info`` names the chosen method and the peak of every candidate. Status FEASIBLE, or
    UNKNOWN (no schedule, ``info["reason"]``) if the order peaks above the memory cap.

    Examples
    --------
    >>> from opsched.demo import seed_problem
    >>> s = inductor_memory(seed_problem(units=1))
    >>> s.status.value, s.makespan, s.info["method"] in s.info["peaks"]
    ('FEASIBLE', 7.0, True)
    """
    require_problem(problem, "inductor_memory")
    t0 = time.perf_counter()
    cands = inductor_orders(problem)
    name, order, _peak = _best(cands)
    info = {"method": name, "peaks": {k: v[1] for k, v in cands.items()}}
    return order_schedule(problem, order, solver="inductor-memory", t0=t0, info=info)

"""XLA's default memory scheduler, reimplemented for opsched graphs.

XLA's ``DefaultMemoryScheduler`` (``hlo_memory_scheduler.cc``) runs three schedulers on each
computation and keeps the sequence with the least memory:

* **List**: a greedy over the ready instructions. Priority: bytes freed by scheduling the
  instruction (its operands' buffers whose only unscheduled use it is) minus the bytes it
  defines; ties by its number of users; among equal priorities the entry put in the ready
  queue last. When a buffer drops to one unscheduled use, the ready users of that buffer get
  their priority recomputed. Buffers that leave the computation have one extra, implicit use
  at the end, so they are never counted as freed; parameters and constants are ignored.
* **DFS**: a post-order from the roots that visits operands by decreasing "extra users"
  (``users - 1``, summed transitively over operands), then decreasing transitive buffer size,
  then name. Both sums are capped like XLA caps them (the count at the number of ops, the
  size at the total so far).
* **PostOrder**: the plain depth-first post-order (operands in their listed order) from each
  instruction without users, in program order.

Mapped onto opsched: each op defines one buffer (its output); its uses are its consumers;
graph outputs without consumers are the live-out buffers; ops of kind ``"input"`` without
dependencies play XLA's parameters and constants. XLA's extra rules for infeed/outfeed and for
effective scalars have no counterpart in opsched's model and are left out. The three orders
are compared by their exact peak (:func:`~opsched.heuristics.memory.common.order_peak`); ties
go to List, then DFS, then PostOrder, as in XLA.

Known weakness, documented in XLA's source: on a 7-op graph the List scheduler defers a branch
whose output is bigger than its input and pays for it later, where the optimum does not (see
``tests/heuristics/memory/test_xla.py``).
"""

from __future__ import annotations

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
    "xla_dfs_order",
    "xla_list_order",
    "xla_memory",
    "xla_memory_order",
    "xla_orders",
    "xla_postorder_order",
]


def _ignored(g: OpGraph, m: MemoryModel) -> list[bool]:
    """Ops that stand for XLA parameters / constants: kind ``input`` and no dependencies."""
    return [op.kind == "input" and not m.preds[v] for v, op in enumerate(g.ops)]


def xla_list_order(problem_or_graph: Problem | OpGraph) -> np.ndarray:
    """XLA's List scheduler: greedy by bytes freed minus bytes defined.

    Examples
    --------
    ``a`` feeds ``b`` (which grows memory) and ``c`` (which does not); List defers ``b``:

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 1, output_bytes=2), Op("b", 1, deps=("a",), output_bytes=5),
    ...              Op("c", 1, deps=("a",), output_bytes=1), Op("d", 1, deps=("b", "c"))))
    >>> xla_list_order(g).tolist()
    [0, 2, 1, 3]
    """
    g = as_graph(problem_or_graph)
    m = MemoryModel.of(g)
    n = m.n
    ignored = _ignored(g, m)
    uses = [len(m.succs[v]) + (1 if m.held[v] else 0) for v in range(n)]
    defined = [0 if ignored[v] else m.out[v] for v in range(n)]
    indeg = [len(p) for p in m.preds]
    in_ready = [False] * n
    version = [0] * n
    heap: list[tuple[int, int, int, int, int]] = []
    seq = 0

    def push(v: int) -> None:
        nonlocal seq
        freed = sum(m.out[p] for p in m.preds[v] if uses[p] == 1 and not ignored[p])
        seq += 1
        version[v] = seq
        # max priority first; among equals, the entry pushed last (largest seq)
        heapq.heappush(heap, (defined[v] - freed, -len(m.succs[v]), -seq, v, seq))

    for v in range(n):
        if indeg[v] == 0:
            in_ready[v] = True
            push(v)
    order: list[int] = []
    while heap:
        _, _, _, v, stamp = heapq.heappop(heap)
        if not in_ready[v] or stamp != version[v]:
            continue  # stale entry
        in_ready[v] = False
        order.append(v)
        now_single: list[int] = []
        for p in m.preds[v]:
            uses[p] -= 1
            if uses[p] == 1:
                now_single.append(p)
        for w in m.succs[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                in_ready[w] = True
                push(w)
        for p in now_single:  # priorities of the last remaining user may go up
            for w in m.succs[p]:
                if in_ready[w]:
                    push(w)
    return np.asarray(order, dtype=np.int64)


def xla_dfs_order(problem_or_graph: Problem | OpGraph) -> np.ndarray:
    """XLA's DFS scheduler: post-order, operands with more (transitive) fan-out first.

    Examples
    --------
    ``d`` reads ``b`` (whose producer ``a`` has two users) and ``c``; the fan-out side is
    visited first:

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 1, output_bytes=1), Op("b", 1, deps=("a",), output_bytes=1),
    ...              Op("c", 1, output_bytes=1), Op("d", 1, deps=("c", "b")),
    ...              Op("e", 1, deps=("a",))))
    >>> xla_dfs_order(g).tolist()
    [0, 1, 2, 3, 4]
    """
    g = as_graph(problem_or_graph)
    m = MemoryModel.of(g)
    n = m.n
    ignored = _ignored(g, m)
    extra = [0] * n
    total = [0] * n
    cumulative = 0
    for v in file_order(g).tolist():
        if ignored[v]:
            continue
        extra[v] = max(len(m.succs[v]) - 1, 0) + sum(extra[p] for p in m.preds[v])
        cumulative += m.out[v]
        total[v] = min(m.out[v] + sum(total[p] for p in m.preds[v]), cumulative)
        extra[v] = min(extra[v], n)
    names = g.names
    operands = [
        sorted(m.preds[v], key=lambda p: (-extra[p], -total[p], names[p])) for v in range(n)
    ]
    roots = [v for v in range(n) if not m.succs[v]]
    return post_order(roots, operands, n)


def xla_postorder_order(problem_or_graph: Problem | OpGraph) -> np.ndarray:
    """XLA's PostOrder scheduler: depth-first post-order from every op without users.

    Examples
    --------
    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 1), Op("b", 1), Op("c", 1, deps=("b", "a"))))
    >>> xla_postorder_order(g).tolist()
    [1, 0, 2]
    """
    g = as_graph(problem_or_graph)
    m = MemoryModel.of(g)
    roots = [v for v in range(m.n) if not m.succs[v]]
    return post_order(roots, m.preds, m.n)


def xla_orders(problem_or_graph: Problem | OpGraph) -> dict[str, tuple[np.ndarray, int]]:
    """The three candidates of ``DefaultMemoryScheduler`` with their exact peaks.

    Examples
    --------
    >>> from opsched.demo import seed_graph
    >>> list(xla_orders(seed_graph()))
    ['list', 'dfs', 'postorder']
    """
    g = as_graph(problem_or_graph)
    out: dict[str, tuple[np.ndarray, int]] = {}
    for name, fn in (
        ("list", xla_list_order),
        ("dfs", xla_dfs_order),
        ("postorder", xla_postorder_order),
    ):
        order = fn(g)
        out[name] = (order, order_peak(g, order))
    return out


def xla_memory_order(problem_or_graph: Problem | OpGraph) -> np.ndarray:
    """The order XLA's ``DefaultMemoryScheduler`` keeps (lowest peak; ties: List, DFS,
    PostOrder).

    Examples
    --------
    >>> from opsched.demo import seed_graph
    >>> len(xla_memory_order(seed_graph()))
    7
    """
    cands = xla_orders(problem_or_graph)
    return cands[min(cands, key=lambda k: cands[k][1])][0]


def xla_memory(problem: Problem, **_: Any) -> Schedule:
    """Serial schedule (unit 0) of XLA's default memory-scheduler order.

    ``info`` names the chosen method and the peak of every candidate. Status FEASIBLE, or
    UNKNOWN (no schedule, ``info["reason"]``) if the order peaks above the memory cap.

    Examples
    --------
    >>> from opsched.demo import seed_problem
    >>> s = xla_memory(seed_problem(units=1))
    >>> s.status.value, s.info["method"]
    ('FEASIBLE', 'list')
    """
    require_problem(problem, "xla_memory")
    t0 = time.perf_counter()
    cands = xla_orders(problem)
    name = min(cands, key=lambda k: cands[k][1])
    info = {"method": name, "peaks": {k: v[1] for k, v in cands.items()}}
    return order_schedule(problem, cands[name][0], solver="xla-memory", t0=t0, info=info)

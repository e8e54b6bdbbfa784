"""Shared pieces of the single-unit memory orders: the step model, peaks, schedules.

Every order in this package runs the ops one after another on one compute unit, back to back
(``start`` of each op = sum of the durations before it). Under opsched's liveness rule
(:mod:`opsched.liveness`) the memory of such a schedule is constant while an op of positive
duration runs, so the peak is a maximum over *steps*:

``step(i) = persistent + live(i) + output(v_i) + workspace(v_i)`` for each op ``v_i`` of
positive duration, where ``live(i)`` is the output of every earlier op that is still needed:
it has a consumer at position ``>= i``, or it is a graph output without consumers (held to
the end). A zero-duration op runs over an empty interval, so it adds no step of its own, but
its output still lives until its last consumer ends. With no step at all the peak is the
persistent memory. :func:`order_peak` computes this in O(V + E) with NumPy; the tests check it
against :func:`opsched.liveness.peak_memory` and the validator.
"""

from __future__ import annotations

import heapq
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from opsched.errors import ProblemError
from opsched.ir.graph import OpGraph
from opsched.problem import Problem
from opsched.schedule import Schedule, Status

__all__ = [
    "MemoryModel",
    "as_graph",
    "check_order",
    "file_order",
    "order_peak",
    "order_schedule",
    "post_order",
    "step_memory",
]


def as_graph(problem_or_graph: Problem | OpGraph) -> OpGraph:
    """The graph of a :class:`~opsched.problem.Problem`, or the graph itself."""
    if isinstance(problem_or_graph, Problem):
        return problem_or_graph.graph
    if isinstance(problem_or_graph, OpGraph):
        return problem_or_graph
    raise TypeError(f"expected a Problem or an OpGraph, got {type(problem_or_graph).__name__}")


@dataclass(frozen=True)
class MemoryModel:
    """Plain-list view of a graph for the memory orders (fast to index from Python loops).

    Attributes
    ----------
    preds, succs
        Producer / consumer op indices of each op (``deps`` order / file order).
    out, ws
        Output and workspace bytes.
    runs
        True where the duration is positive (the op has a step of its own).
    held
        Graph outputs without consumers: live from their start to the end.
    kept
        Bytes an op adds to the live memory after its step: its output if it has a consumer
        or is held, else 0.
    need
        Memory of the op's own step beyond the live tensors (output + workspace), 0 for
        zero-duration ops.
    persistent
        Persistent bytes.
    bound
        A lower bound on the peak of every order (:func:`opsched.analysis.min_memory_bound`).
    topo
        The ops in a topological order (:func:`opsched.analysis.topo.topo_indices`).
    """

    n: int
    preds: list[list[int]]
    succs: list[list[int]]
    out: list[int]
    ws: list[int]
    runs: list[bool]
    held: list[bool]
    kept: list[int]
    need: list[int]
    persistent: int
    bound: int
    topo: list[int]

    @classmethod
    def of(cls, graph: OpGraph) -> MemoryModel:
        """The model of ``graph``, built once per graph (graphs are immutable, and the seven
        baselines and the search each ask for it). Its lists are shared, so callers only
        read them. It is dropped with the graph, and held as long as the graph is.

        Examples
        --------
        >>> from opsched.ir import Op, OpGraph
        >>> g = OpGraph((Op("a", 1, output_bytes=4), Op("b", 0, deps=("a",), output_bytes=2)))
        >>> m = MemoryModel.of(g)
        >>> m.preds, m.succs, m.kept, m.need
        ([[], [0]], [[1], []], [4, 0], [4, 0])
        """
        model = _MODELS.get(graph)
        if model is None:
            model = _MODELS[graph] = cls._build(graph)
        return model

    @classmethod
    def _build(cls, graph: OpGraph) -> MemoryModel:
        from opsched.analysis.bounds import min_memory_bound
        from opsched.analysis.topo import topo_indices

        n = graph.num_ops
        pp, pi = graph.pred_ptr.tolist(), graph.pred_idx.tolist()
        sp, si = graph.succ_ptr.tolist(), graph.succ_idx.tolist()
        preds = [pi[pp[v] : pp[v + 1]] for v in range(n)]
        succs = [si[sp[v] : sp[v + 1]] for v in range(n)]
        out = [int(x) for x in graph.output_sizes.tolist()]
        ws = [int(x) for x in graph.workspace_sizes.tolist()]
        runs = (graph.durations > 0).tolist()
        held = [op.output and not succs[v] for v, op in enumerate(graph.ops)]
        kept = [out[v] if (succs[v] or held[v]) else 0 for v in range(n)]
        need = [out[v] + ws[v] if runs[v] else 0 for v in range(n)]
        return cls(
            n, preds, succs, out, ws, runs, held, kept, need, graph.persistent_bytes,
            min_memory_bound(graph)[0], topo_indices(graph).tolist(),
        )  # fmt: skip


_MODELS: weakref.WeakKeyDictionary[OpGraph, MemoryModel] = weakref.WeakKeyDictionary()


def file_order(graph: OpGraph) -> np.ndarray:
    """The graph's own op order when it is topological, else the topological order closest
    to it (always the ready op that comes first in the file).

    Examples
    --------
    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("b", 1, deps=("a",)), Op("a", 1), Op("c", 1)))
    >>> file_order(g).tolist()
    [1, 0, 2]
    """
    n = graph.num_ops
    indeg = np.diff(graph.pred_ptr).tolist()
    sp, si = graph.succ_ptr.tolist(), graph.succ_idx.tolist()
    heap = [v for v in range(n) if indeg[v] == 0]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        v = heapq.heappop(heap)
        order.append(v)
        for w in si[sp[v] : sp[v + 1]]:
            indeg[w] -= 1
            if indeg[w] == 0:
                heapq.heappush(heap, w)
    return np.asarray(order, dtype=np.int64)


def post_order(roots: Sequence[int], children: Sequence[Sequence[int]], n: int) -> np.ndarray:
    """Depth-first post-order over ``children`` (the producers of each op), starting from
    ``roots`` in the given order and visiting each op's children in the given order. Ops not
    reachable from ``roots`` are left out. Iterative, so deep chains do not hit Python's
    recursion limit.

    Examples
    --------
    >>> post_order([2], [[], [], [1, 0]], 3).tolist()
    [1, 0, 2]
    """
    seen = [False] * n
    order: list[int] = []
    for root in roots:
        if seen[root]:
            continue
        seen[root] = True
        stack = [(root, 0)]  # (op, next child to look at)
        while stack:
            v, k = stack[-1]
            kids = children[v]
            while k < len(kids) and seen[kids[k]]:
                k += 1
            if k < len(kids):
                stack[-1] = (v, k + 1)
                seen[kids[k]] = True
                stack.append((kids[k], 0))
            else:
                stack.pop()
                order.append(v)
    return np.asarray(order, dtype=np.int64)


def check_order(graph: OpGraph, order: Any) -> np.ndarray:
    """Return ``order`` as an int64 array, or raise ProblemError if it is not a topological
    order of every op (naming the first op out of place).

    Examples
    --------
    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 1), Op("b", 1, deps=("a",))))
    >>> check_order(g, [1, 0])
    Traceback (most recent call last):
    ...
    opsched.errors.ProblemError: op 'b': placed before its dependency 'a'
    """
    arr = np.asarray(order, dtype=np.int64).reshape(-1)
    n = graph.num_ops
    if len(arr) != n or (n and (arr.min() < 0 or arr.max() >= n)):
        raise ProblemError(f"an order must list each of the {n} ops once, got {len(arr)} entries")
    pos = np.full(n, -1, dtype=np.int64)
    pos[arr] = np.arange(n)
    if (pos < 0).any():
        missing = graph.names[int(np.argmin(pos))]
        raise ProblemError("an order must list every op once", f"op {missing!r}")
    consumer = np.repeat(np.arange(n), np.diff(graph.pred_ptr))
    bad = pos[graph.pred_idx] > pos[consumer]
    if bad.any():
        k = int(np.argmax(bad))
        who, dep = graph.names[int(consumer[k])], graph.names[int(graph.pred_idx[k])]
        raise ProblemError(f"placed before its dependency {dep!r}", f"op {who!r}")
    return arr


def step_memory(graph: OpGraph, order: Any) -> np.ndarray:
    """Memory in use during each step of ``order`` (persistent bytes included).

    Entry ``i`` is the memory while ``order[i]`` runs; for a zero-duration op (which has no
    step of its own) it is the persistent plus live memory at that moment, which never exceeds
    a neighbouring step. ``order`` must be topological (not checked here; see
    :func:`check_order`).

    Examples
    --------
    ``a`` (4 B) feeds ``b`` (2 B, 1 B workspace), a graph output:

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 1, output_bytes=4),
    ...              Op("b", 1, deps=("a",), output_bytes=2, workspace_bytes=1, output=True)))
    >>> step_memory(g, [0, 1]).tolist()
    [4, 7]
    """
    order = np.asarray(order, dtype=np.int64)
    n = graph.num_ops
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    out = graph.output_sizes.astype(np.int64)
    ws = graph.workspace_sizes.astype(np.int64)
    runs = graph.durations > 0
    n_cons = np.diff(graph.succ_ptr)
    held = np.fromiter((op.output for op in graph.ops), dtype=bool, count=n) & (n_cons == 0)
    # the step after which each tensor is freed: its last consumer's, or the end if held
    last = np.full(n, -1, dtype=np.int64)
    consumer = np.repeat(np.arange(n), np.diff(graph.pred_ptr))
    if len(consumer):
        np.maximum.at(last, graph.pred_idx, pos[consumer])
    kept = np.where((n_cons > 0) | held, out, 0)
    free_at = np.where(held, n, last)  # live during steps pos+1 .. free_at
    delta = np.zeros(n + 2, dtype=np.int64)
    np.add.at(delta, pos + 1, kept)
    np.add.at(delta, np.maximum(free_at, pos) + 1, -kept)
    live = np.cumsum(delta)[:n]  # live[i]: kept outputs of earlier ops still needed at step i
    own = np.where(runs, out + ws, 0)
    return graph.persistent_bytes + live + own[order]


def order_peak(graph: OpGraph, order: Any) -> int:
    """Peak memory of running ``order`` back to back on one unit (opsched's liveness rule).

    Equals :func:`opsched.liveness.peak_memory` of the serial schedule of ``order``.

    Examples
    --------
    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 1, output_bytes=4), Op("b", 1, output_bytes=4),
    ...              Op("c", 1, deps=("a",), output_bytes=1), Op("d", 1, deps=("b", "c"))))
    >>> order_peak(g, [0, 2, 1, 3]), order_peak(g, [0, 1, 2, 3])
    (5, 9)
    """
    order = np.asarray(order, dtype=np.int64)
    steps = step_memory(graph, order)
    runs = (graph.durations > 0)[order]
    return int(max(graph.persistent_bytes, int(steps[runs].max()) if runs.any() else 0))


def order_schedule(
    problem: Problem,
    order: Any,
    *,
    solver: str,
    t0: float,
    info: Mapping[str, Any] | None = None,
) -> Schedule:
    """The serial schedule of ``order`` on unit 0, or UNKNOWN if it breaks the memory cap.

    Ops start back to back in ``order``; ops demanding exactly one unit run on unit 0.
    ``t0`` is the ``time.perf_counter()`` at which the scheduler started (for ``wall_time_s``).

    Examples
    --------
    >>> from opsched.ir import Op, OpGraph
    >>> from opsched.problem import Machine
    >>> g = OpGraph((Op("a", 2, output_bytes=8), Op("b", 3, deps=("a",))))
    >>> s = order_schedule(Problem(g, Machine(units=1)), [0, 1], solver="x", t0=0.0)
    >>> s.status.value, s.makespan, s.peak_memory, [o.unit for o in s.ops]
    ('FEASIBLE', 5.0, 8, [0, 0])
    >>> s = order_schedule(Problem(g, Machine(units=1, memory_cap=7)), [0, 1], solver="x",
    ...                    t0=0.0)
    >>> s.status.value, s.has_schedule
    ('UNKNOWN', False)
    """
    from opsched.analysis.bounds import lower_bounds

    g = problem.graph
    details = dict(info or {})
    reason = problem.infeasibility_reason()
    if reason:
        return Schedule.empty(
            problem, solver=solver, status=Status.UNKNOWN, info={**details, "reason": reason},
            wall_time_s=time.perf_counter() - t0,
        )  # fmt: skip
    order = check_order(g, order)
    starts = np.empty(g.num_ops)
    d = g.durations[order]
    starts[order] = np.concatenate([[0.0], np.cumsum(d)[:-1]]) if g.num_ops else []
    peak = order_peak(g, order)
    cap = problem.memory_cap
    if cap is not None and peak > cap:
        details["reason"] = (
            f"the best order found peaks at {peak} B, over the memory cap of {cap} B"
        )
        details["peak_memory"] = peak
        return Schedule.empty(
            problem, solver=solver, status=Status.UNKNOWN, info=details,
            wall_time_s=time.perf_counter() - t0,
        )  # fmt: skip
    units = [0 if op.demands.get("units", 0) == 1 else None for op in g.ops]
    return Schedule.build(
        problem, starts, units, solver=solver, status=Status.FEASIBLE,
        lower_bound=lower_bounds(g, problem.machine.units, problem.capacities).value,
        wall_time_s=time.perf_counter() - t0, info=details,
    )  # fmt: skip

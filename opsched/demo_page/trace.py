"""The scheduling loop of the seed document, recorded event by event for the demo page.

:func:`trace_greedy` runs the same event-driven ready-set loop as
:func:`opsched.heuristics.greedy` (FIFO or b-level priority, lowest free unit first) and
records, at every event time, the four phases the seed describes: completions and the
dependency counts they release, the ready set, the unit assignment, and the clock advance.
The recorded start times and units are then checked against ``greedy``'s own schedule, so the
page can never show a loop that differs from the library's scheduler.

:func:`layered_layout` places the ops of a small DAG in columns by depth, for drawing.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any

from opsched.analysis import b_level, critical_path, topological_order
from opsched.errors import ProblemError
from opsched.heuristics import greedy, serial
from opsched.heuristics.greedy import take_units
from opsched.ir import OpGraph
from opsched.problem import Problem

__all__ = ["layered_layout", "trace_greedy"]


def layered_layout(graph: OpGraph) -> dict[str, tuple[int, int]]:
    """Column (longest edge count from a source) and row (file order within it) of each op.

    Examples
    --------
    >>> from opsched.demo import seed_graph
    >>> pos = layered_layout(seed_graph())
    >>> pos["Input"], pos["BN"], pos["Conv2"], pos["Output"]
    ((0, 0), (2, 0), (2, 1), (5, 0))
    """
    depth: dict[str, int] = {}
    for name in topological_order(graph):
        depth[name] = max((depth[p] + 1 for p in graph[name].deps), default=0)
    rows: dict[int, int] = {}
    pos: dict[str, tuple[int, int]] = {}
    for name in graph.names:
        col = depth[name]
        pos[name] = (col, rows.get(col, 0))
        rows[col] = rows.get(col, 0) + 1
    return pos


def _check_traceable(problem: Problem) -> None:
    if problem.memory_cap is not None:
        raise ProblemError("the step-by-step trace follows units only; drop the memory cap")
    for op in problem.graph.ops:
        other = [r for r, a in op.demands.items() if r != "units" and a > 0]
        if other:
            raise ProblemError(
                f"the step-by-step trace follows units only; demands {other}",
                f"op {op.name!r}",
            )


def trace_greedy(problem: Problem, priority: str = "fifo") -> dict[str, Any]:
    """Record the greedy ready-set loop step by step and check it against ``greedy``.

    Parameters
    ----------
    problem
        A graph on a machine with ``units`` (or unlimited units); no memory cap and no
        resources other than units (the trace would not show them).
    priority
        ``"fifo"`` or ``"b-level"``, as in :func:`opsched.heuristics.greedy`.

    Returns
    -------
    dict
        ``analysis`` (in-degrees, Kahn order, critical path, serial time), ``steps`` (one per
        event time: ``t``, ``finished``, ``released`` dependency counts, ``ready``,
        ``started`` with units, ``waiting``, ``running``, ``states`` and remaining ``indeg`` of
        every op, ``next_t``),
        ``schedule`` (the greedy schedule's ops) and ``makespan``.

    Raises
    ------
    ProblemError
        If the problem has a memory cap or resources other than units.
    RuntimeError
        If the recorded starts or units differ from ``greedy``'s (a bug, never bad input).

    Examples
    --------
    >>> from opsched.demo import seed_problem
    >>> tr = trace_greedy(seed_problem(units=2))
    >>> [s["t"] for s in tr["steps"]], tr["makespan"]
    ([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 6.0)
    >>> tr["steps"][2]["started"]
    [{'op': 'BN', 'unit': 0, 'end': 3.0}, {'op': 'Conv2', 'unit': 1, 'end': 3.0}]
    """
    _check_traceable(problem)
    g = problem.graph
    n = g.num_ops
    names = g.names
    if priority == "fifo":
        prio: list[float] | None = None
    elif priority in ("b-level", "blevel", "critical-path"):
        prio = b_level(g).tolist()
    else:
        raise ValueError(f"unknown priority {priority!r}; use 'fifo' or 'b-level'")
    dur = g.durations.tolist()
    succs = [g.successors(v) for v in names]
    index = {v: i for i, v in enumerate(names)}
    indeg = [len(op.deps) for op in g.ops]
    need = [op.units for op in g.ops]
    k = problem.unit_pool  # not the machine's units, which may be huge
    free_units = list(range(k)) if k is not None else []
    next_unit = k if k is not None else 0
    ready_fifo: deque[int] = deque()
    ready_heap: list[tuple[float, int]] = []
    state = ["waiting"] * n
    starts = [0.0] * n
    unit_of: list[int | None] = [None] * n
    held: dict[int, list[int]] = {}
    running: list[tuple[float, int, int]] = []
    seq = 0

    def push(v: int) -> None:
        state[v] = "ready"
        if prio is None:
            ready_fifo.append(v)
        else:
            heapq.heappush(ready_heap, (-prio[v], v))

    def pop() -> int:
        return ready_fifo.popleft() if prio is None else heapq.heappop(ready_heap)[1]

    def ready_list() -> list[int]:
        return list(ready_fifo) if prio is None else [v for _, v in sorted(ready_heap)]

    finished_now: list[str] = []
    released: list[dict[str, Any]] = []

    def finish(v: int) -> None:
        state[v] = "done"
        finished_now.append(names[v])
        for u in held.pop(v, []):
            heapq.heappush(free_units, u)
        for w in succs[v]:
            j = index[w]
            indeg[j] -= 1
            released.append({"from": names[v], "op": w, "indeg": indeg[j]})
            if indeg[j] == 0:
                push(j)

    for v in range(n):
        if indeg[v] == 0:
            push(v)
    steps: list[dict[str, Any]] = []
    t = 0.0
    done = 0
    while True:
        ready_at_t = [names[v] for v in ready_list()]
        started: list[dict[str, Any]] = []
        progress = True
        while progress:  # zero-duration ops finish at once and may release more ops
            progress = False
            skipped: list[int] = []
            while ready_fifo or ready_heap:
                v = pop()
                if dur[v] > 0 and k is not None and need[v] > len(free_units):
                    skipped.append(v)
                    continue
                starts[v] = t
                if dur[v] > 0:
                    got, next_unit = take_units(free_units, next_unit, need[v])
                    held[v] = got
                    unit_of[v] = got[0] if need[v] == 1 else None
                    state[v] = "running"
                    heapq.heappush(running, (t + dur[v], seq, v))
                    seq += 1
                else:
                    if need[v] == 1:
                        unit_of[v] = free_units[0] if free_units else 0
                    done += 1
                    finish(v)
                    progress = True
                started.append({"op": names[v], "unit": unit_of[v], "end": t + dur[v]})
            for v in skipped:
                push(v)
        done_now = done == n
        next_t = running[0][0] if running else None
        steps.append(
            {
                "t": t,
                "finished": list(finished_now),
                "released": list(released),
                "ready": ready_at_t,
                "started": started,
                "waiting": [names[v] for v in ready_list()],
                "running": [
                    {"op": names[v], "unit": unit_of[v], "end": e} for e, _, v in sorted(running)
                ],
                "states": dict(zip(names, state, strict=True)),
                "indeg": dict(zip(names, indeg, strict=True)),
                "next_t": next_t,
            }
        )
        finished_now.clear()
        released.clear()
        if next_t is None:
            if not done_now:  # pragma: no cover - greedy cannot stall without a memory cap
                raise RuntimeError("the traced loop stalled")
            break
        t = next_t
        while running and running[0][0] <= t:
            _, _, v = heapq.heappop(running)
            done += 1
            finish(v)

    ref = greedy(problem, priority=priority)
    ref_ops = {o.name: o for o in ref.ops}
    for i, name in enumerate(names):
        ref_op = ref_ops[name]
        if ref_op.start != starts[i] or ref_op.unit != unit_of[i]:
            raise RuntimeError(
                f"trace differs from greedy at op {name!r}: start {starts[i]} unit "
                f"{unit_of[i]} vs {ref_op.start} unit {ref_op.unit}"
            )
    cp = critical_path(g)
    return {
        "graph": g.name,
        "units": k,
        "priority": priority,
        "analysis": {
            "indeg": {op.name: len(op.deps) for op in g.ops},
            "deps": {op.name: list(op.deps) for op in g.ops},
            "order": topological_order(g),
            "critical_path": cp.length,
            "critical_path_ops": cp.ops,
            "serial": serial(problem).makespan,
            "sources": [op.name for op in g.ops if not op.deps],
        },
        "steps": steps,
        "schedule": [
            {"name": o.name, "start": o.start, "end": o.end, "unit": o.unit} for o in ref.ops
        ],
        "makespan": ref.makespan,
    }

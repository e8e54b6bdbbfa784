"""Shared helpers of the solver tests: an exhaustive, solver-independent enumeration.

:func:`integer_outcomes` is deliberately naive and shares no code with opsched's solvers,
liveness or validator: it tries *every* integer start time of every op (not only the
semi-active ones the brute force enumerates), checks capacities slot by slot and computes
memory slot by slot from the problem model's rules. With integer durations every
makespan / peak-memory trade-off is reached by a semi-active schedule, whose starts are
integers and whose makespan is at most the total work (it has no idle gap), so the set of
outcomes it returns contains every Pareto-optimal pair. Exponential: graphs of <= 5 ops with
short durations only.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from opsched.problem import Problem

Outcomes = dict[tuple[int, int], dict[str, int]]


def integer_outcomes(problem: Problem) -> Outcomes:
    """Every ``(makespan, peak memory)`` of a valid schedule with integer starts and
    makespan <= total work, each with one schedule (op name -> start) reaching it."""
    g = problem.graph
    n = g.num_ops
    d = []
    for op in g.ops:
        assert float(op.duration).is_integer(), "integer durations only"
        d.append(int(op.duration))
    horizon = sum(d)
    # my own topological order: repeatedly take the first op whose deps are all taken
    order: list[int] = []
    taken: set[str] = set()
    while len(order) < n:
        v = next(i for i, op in enumerate(g.ops) if op.name not in taken and set(op.deps) <= taken)
        order.append(v)
        taken.add(g.ops[v].name)
    index = {op.name: i for i, op in enumerate(g.ops)}
    deps = [[index[x] for x in op.deps] for op in g.ops]
    consumers = [[j for j in range(n) if i in deps[j]] for i in range(n)]
    caps = {r: c for r, c in problem.capacities.items() if c is not None}
    demand = [{r: op.demands.get(r, 0) for r in caps} for op in g.ops]
    use = {r: [0] * max(horizon, 1) for r in caps}
    mem_cap = problem.memory_cap
    starts = [0] * n
    found: Outcomes = {}

    def leaf() -> None:
        ends = [starts[i] + d[i] for i in range(n)]
        makespan = max(ends, default=0)
        mem = [g.persistent_bytes] * max(makespan, 1)
        for i, op in enumerate(g.ops):
            if consumers[i]:
                release = max(ends[c] for c in consumers[i])
            else:
                release = makespan if op.output else ends[i]
            for t in range(starts[i], release):
                mem[t] += op.output_bytes
            for t in range(starts[i], ends[i]):
                mem[t] += op.workspace_bytes
        peak = max(mem)
        if mem_cap is not None and peak > mem_cap:
            return
        found.setdefault((makespan, peak), {g.ops[i].name: starts[i] for i in range(n)})

    def place(pos: int) -> None:
        if pos == n:
            leaf()
            return
        v = order[pos]
        ready = max((starts[u] + d[u] for u in deps[v]), default=0)
        for s in range(ready, horizon - d[v] + 1):
            slots = range(s, s + d[v])  # empty for a zero-duration op: it holds nothing
            if any(use[r][t] + demand[v][r] > caps[r] for r in caps for t in slots):
                continue
            for r in caps:
                for t in slots:
                    use[r][t] += demand[v][r]
            starts[v] = s
            place(pos + 1)
            for r in caps:
                for t in slots:
                    use[r][t] -= demand[v][r]

    place(0)
    return found


def pareto_of(points: set[tuple[int, int]] | list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The non-dominated ``(makespan, peak)`` pairs, by increasing makespan."""
    front: list[tuple[int, int]] = []
    for ms, pk in sorted(set(points)):
        if not front or pk < front[-1][1]:
            front.append((ms, pk))
    return front


@pytest.fixture
def exhaustive() -> Callable[[Problem], Outcomes]:
    return integer_outcomes


@pytest.fixture
def non_dominated() -> Callable[..., list[tuple[int, int]]]:
    return pareto_of

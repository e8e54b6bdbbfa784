"""Splitting at cut ops (opsched.solver.split): the definition, and exactness of the phases.

Cut ops are checked against their definition (ancestors and descendants cover the graph,
no edge from one to the other), computed with networkx. The phases are checked against the
brute force on the whole graph: solving each phase exactly and putting them end to end must
give the least makespan of the whole, under every memory cap, with a validated schedule.
"""

from __future__ import annotations

import random

import networkx as nx
import pytest

from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Status
from opsched.solver import solve_brute_force, solve_cpsat
from opsched.solver.cpsat import Params
from opsched.solver.split import cut_ops, phases, solve_phases, split_points
from opsched.validate import validate


def _blocks(rng: random.Random, blocks: int, width: int, p: float = 0.5) -> OpGraph:
    """Blocks of 1..``width`` ops, each block reading the op before it and read by the op
    after it (candidate cut ops), with random edges inside and a few jumping over."""
    ops: list[Op] = []
    prev: str | None = None
    for b in range(blocks + 1):
        name = f"x{b}"
        inner: list[str] = []
        if prev is not None:
            for i in range(rng.randint(1, width)):
                deps = [prev] + [o for o in inner if rng.random() < p]
                if ops and rng.random() < 0.1:  # sometimes an edge from further back
                    deps.append(rng.choice(ops).name)
                inner.append(f"b{b}_{i}")
                ops.append(_op(rng, inner[-1], sorted(set(deps))))
        deps = inner if inner else ([prev] if prev else [])
        ops.append(_op(rng, name, deps, last=b == blocks))
        prev = name
    return OpGraph(tuple(ops), persistent_bytes=rng.choice([0, 0, 2]))


def _op(rng: random.Random, name: str, deps: list[str], last: bool = False) -> Op:
    return Op(name, rng.choice([0, 1, 2, 3]), deps=tuple(deps),
              output_bytes=rng.choice([0, 1, 2, 4, 6]), workspace_bytes=rng.choice([0, 0, 2]),
              output=last and rng.random() < 0.5)  # fmt: skip


def _definition(g: OpGraph) -> list[int]:
    G = g.to_networkx()
    out = []
    for v, op in enumerate(g.ops):
        anc, desc = nx.ancestors(G, op.name), nx.descendants(G, op.name)
        if len(anc) + len(desc) != g.num_ops - 1:
            continue
        if any(a in anc and b in desc for a, b in G.edges):
            continue
        out.append(v)
    return out


def test_cut_ops_match_the_definition() -> None:
    rng = random.Random(11)
    found = 0
    for _ in range(300):
        if rng.random() < 0.5:
            g = _blocks(rng, rng.randint(1, 5), 3)
        else:  # any DAG
            n = rng.randint(1, 12)
            g = OpGraph(tuple(Op(f"o{i}", 1, deps=tuple(f"o{j}" for j in range(i)
                                                         if rng.random() < 0.3))
                              for i in range(n)))  # fmt: skip
        got = cut_ops(g)
        assert sorted(got) == _definition(g), g.to_dict()
        found += len(got)
    assert found >= 300


def _brute(p: Problem, seconds: float):  # type: ignore[no-untyped-def]
    return solve_brute_force(p, "makespan")


@pytest.mark.parametrize("seed", range(3))
def test_phases_equal_the_whole(seed: int) -> None:
    """Solving the phases exactly gives the whole graph's least makespan, at caps from the
    least peak up, on 1-3 units; the combined schedule passes the validator."""
    rng = random.Random(500 + seed)
    checked = infeasible = 0
    for _ in range(40):
        g = _blocks(rng, rng.randint(2, 3), 2)
        cuts = [c for c in cut_ops(g) if 0 < c < g.num_ops - 1]
        if g.num_ops > 9 or not cuts:
            continue
        base = Problem(g, Machine(units=rng.randint(1, 3)))
        low = solve_brute_force(base, "peak_memory").peak_memory
        high = solve_brute_force(base, "makespan").peak_memory
        assert low is not None and high is not None
        for cap in sorted({low - 1, low, (low + high) // 2, high} - {-1}):
            p = base.with_machine(memory_cap=cap)
            whole = solve_brute_force(p, "makespan")
            split = solve_phases(p, cuts, _brute, 10.0)
            where = (g.to_dict(), p.machine.units, cap)
            if whole.status is Status.INFEASIBLE:
                assert split.status is Status.INFEASIBLE, where
                infeasible += 1
                continue
            assert split.status is Status.OPTIMAL, where
            assert split.makespan == whole.makespan, (split.makespan, whole.makespan, where)
            report = validate(p, split)
            assert report.valid, (report.summary(), where)
            assert split.lower_bound == split.makespan
            checked += 1
    assert checked >= 30 and infeasible >= 3, (checked, infeasible)


def _two_blocks() -> OpGraph:
    """a forks into b, c, joined by the cut op x, which forks into d, e, joined by y."""
    return OpGraph(
        (
            Op("a", 2, output_bytes=3),
            Op("b", 1, deps=("a",), output_bytes=2),
            Op("c", 1, deps=("a",), output_bytes=2),
            Op("x", 1, deps=("b", "c"), output_bytes=5),
            Op("d", 2, deps=("x",), output_bytes=1),
            Op("e", 2, deps=("x",), output_bytes=1),
            Op("y", 1, deps=("d", "e"), output=True),
        )
    )


def test_phase_problems() -> None:
    """A chain of two blocks: the second phase starts with the cut op, whose inputs are
    zero-time inputs; the inner cut op ends the first phase and starts the second."""
    g = _two_blocks()
    assert [g.ops[v].name for v in cut_ops(g)] == ["a", "x", "y"]
    first, second = phases(Problem(g, Machine(units=2)), [3])
    assert first.problem.graph.names == ["a", "b", "c", "x"]
    assert second.problem.graph.names == ["b", "c", "x", "d", "e", "y"]
    assert [second.problem.graph[v].duration for v in ("b", "c")] == [0, 0]
    assert second.ops == (-1, -1, 3, 4, 5, 6)
    p = Problem(g, Machine(units=2, memory_cap=9))
    s = solve_cpsat(p, time_limit=10, params=Params(num_workers=1))
    assert s.status is Status.OPTIMAL
    # on 2 units: a, then b beside c, x, then d beside e, y: 2 + 1 + 1 + 2 + 1
    assert s.makespan == solve_brute_force(p, "makespan").makespan == 7
    assert validate(p, s).valid


def test_solver_splits_under_a_cap() -> None:
    """solve_cpsat splits a makespan under a memory cap into phases when cut ops give
    phases of at least MIN_PHASE_OPS ops; same optimum as the unsplit model."""
    rng = random.Random(3)
    split_runs = 0
    for _ in range(30):
        g = _blocks(rng, 4, 5, p=0.3)
        if not split_points(g):
            continue
        base = Problem(g, Machine(units=2))
        free = solve_cpsat(base, "peak_memory", time_limit=10, params=Params(num_workers=1))
        if free.peak_memory is None:
            continue
        p = base.with_machine(memory_cap=free.peak_memory)
        a = solve_cpsat(p, time_limit=20, params=Params(num_workers=1))
        b = solve_cpsat(p, time_limit=20, params=Params(num_workers=1, split=False))
        assert a.status is b.status is Status.OPTIMAL, (a.info, b.info)
        assert a.makespan == b.makespan
        assert validate(p, a).valid
        assert "split" in a.info and "split" not in b.info
        split_runs += 1
        if split_runs == 5:
            break
    assert split_runs == 5


def test_time_left_goes_to_the_unproven_phases() -> None:
    """A phase that comes back unproven is solved again with the time the others left, and
    keeps the better answer; the bounds of both tries count. Scripted phase answers: the
    first try of the first phase is the serial schedule (FEASIBLE, bound 0), its second the
    brute force (OPTIMAL); the second phase is proven at once."""
    g = _two_blocks()
    p = Problem(g, Machine(units=2, memory_cap=9))
    calls: list[tuple[tuple[str, ...], float]] = []

    def scripted(q: Problem, seconds: float):  # type: ignore[no-untyped-def]
        calls.append((tuple(q.graph.names), seconds))
        exact = solve_brute_force(q, "makespan")
        if q.graph.names[0] == "a" and len(calls) == 1:  # first phase, first try
            from opsched.heuristics.greedy import serial

            s = serial(q)
            s.status = Status.FEASIBLE
            return s
        return exact

    out = solve_phases(p, [3], scripted, 10.0)
    assert [c[0][0] for c in calls] == ["a", "b", "a"]  # the first phase twice
    assert calls[2][1] > 5.0  # with (nearly) all the time the phases left
    assert out.status is Status.OPTIMAL and out.makespan == 7 and out.lower_bound == 7
    assert out.info["split"]["phases"][0]["second_pass"] is True
    assert validate(p, out).valid
    # a second try that is no better is not kept, and without time left none is made
    calls.clear()

    def never_better(q: Problem, seconds: float):  # type: ignore[no-untyped-def]
        calls.append((tuple(q.graph.names), seconds))
        from opsched.heuristics.greedy import serial

        s = serial(q)
        s.status = Status.FEASIBLE
        return s

    out = solve_phases(p, [3], never_better, 10.0)
    assert len(calls) == 4 and out.status is Status.FEASIBLE
    # the first try's schedule is optimal unproven, the second one's bound proves it
    tries: list[int] = []

    def bound_later(q: Problem, seconds: float):  # type: ignore[no-untyped-def]
        exact = solve_brute_force(q, "makespan")
        if q.graph.names[0] != "a":
            return exact
        tries.append(1)
        exact.status = Status.FEASIBLE
        if len(tries) == 1:
            exact.lower_bound = 0.0
            return exact
        from opsched.heuristics.greedy import serial

        worse = serial(q)
        worse.status, worse.lower_bound = Status.FEASIBLE, exact.makespan
        return worse

    out = solve_phases(p, [3], bound_later, 10.0)
    assert len(tries) == 2 and out.status is Status.OPTIMAL
    assert out.makespan == out.lower_bound == 7
    assert "second_pass" not in out.info["split"]["phases"][0]
    calls.clear()
    solve_phases(p, [3], never_better, 0.05)
    assert len(calls) == 2


@pytest.mark.parametrize(
    "statement",
    ["from opsched.solver import cut_ops", "import opsched.solver.split"],
)
def test_split_imports_first_in_a_fresh_interpreter(statement: str) -> None:
    """``cut_ops`` is a lazy export of :mod:`opsched.solver`: loaded before the CP-SAT
    package, :mod:`opsched.solver.split` must not start a circular import (CP-SAT's solve
    imports ``solve_phases`` from it)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import opsched

    root = str(Path(opsched.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root}
    r = subprocess.run([sys.executable, "-c", statement], capture_output=True, text=True,
                       env=env, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr

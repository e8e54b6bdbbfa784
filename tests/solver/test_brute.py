"""Tests of :func:`opsched.solver.solve_brute_force`, so that the cross-checks do not just
trust it: hand-worked optima, and agreement with a naive enumeration of every integer
schedule (``integer_outcomes`` in ``conftest.py``) on random tiny graphs."""

from __future__ import annotations

import random

import pytest

from opsched.analysis import min_memory_bound
from opsched.demo import branches_graph, seed_problem
from opsched.errors import ProblemError
from opsched.heuristics import greedy
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Objective, Problem
from opsched.schedule import Status
from opsched.solver import solve_brute_force
from opsched.solver.brute import MAX_BRUTE_FORCE_OPS
from opsched.validate import validate


def _valid(p: Problem, s) -> None:  # type: ignore[no-untyped-def]
    r = validate(p, s)
    assert r.valid, r.summary()


# ----------------------------------------------------------------------------- makespan


@pytest.mark.parametrize(("units", "optimum"), [(1, 7.0), (2, 6.0), (None, 6.0)])
def test_seed_graph(units: int | None, optimum: float) -> None:
    # seven unit ops: on one unit the work, 7; with two, BN runs beside Conv2 and the
    # critical path Input-Conv1-Conv2-ReLU-Add-Output, 6, is reached
    p = seed_problem(units)
    s = solve_brute_force(p)
    assert s.status is Status.OPTIMAL
    assert s.solver == "brute-force"
    assert s.makespan == optimum
    assert s.lower_bound == optimum
    _valid(p, s)


def test_chain_beside_a_long_op() -> None:
    # 2 units: a (3) alone and the chain b (1) -> c (1) -> d (4) of length 6: work 9 / 2
    # rounds to 5, but the chain alone takes 6 and a fits beside it: optimum 6
    g = OpGraph((Op("a", 3), Op("b", 1), Op("c", 1, deps=("b",)), Op("d", 4, deps=("c",))))
    assert solve_brute_force(Problem(g, Machine(units=2))).makespan == 6.0
    # one unit: the total work, 9
    assert solve_brute_force(Problem(g, Machine(units=1))).makespan == 9.0


def test_beats_fifo_greedy() -> None:
    # 3 units, independent a (3), b (1), c (2), d (3). FIFO starts a, b, c at 0 and d at 1
    # (b's end) -> 4. Optimum: a, b, d at 0 and c at 1 -> 3, the longest op
    g = OpGraph((Op("a", 3), Op("b", 1), Op("c", 2), Op("d", 3)))
    p = Problem(g, Machine(units=3))
    assert greedy(p).makespan == 4.0
    s = solve_brute_force(p)
    assert s.makespan == 3.0
    assert s.starts()["c"] == 1.0  # the only op that cannot start at 0
    _valid(p, s)


def test_named_resource_serialises() -> None:
    # three independent 2-long ops that each hold the single "dma" slot: 3 units do not
    # help, they run one after another -> 6; with dma capacity 2 two overlap -> 4
    ops = tuple(Op(n, 2, demands={"units": 1, "dma": 1}) for n in "abc")
    g = OpGraph(ops, resources={"dma": 1})
    p = Problem(g, Machine(units=3))
    s = solve_brute_force(p)
    assert s.makespan == 6.0
    _valid(p, s)
    assert solve_brute_force(p.with_machine(resources={"dma": 2})).makespan == 4.0


def test_multi_unit_op_and_zero_duration_op() -> None:
    # w (2) takes both units of 2, so a (1) and b (1) cannot run beside it: 2 + 1 = 3 (a
    # and b together). z has duration 0: it holds no unit and costs nothing
    g = OpGraph((Op("w", 2, demands={"units": 2}), Op("a", 1), Op("b", 1), Op("z", 0, deps=("w",))))
    p = Problem(g, Machine(units=2))
    s = solve_brute_force(p)
    assert s.makespan == 3.0
    starts = s.starts()
    assert starts["a"] == starts["b"]  # side by side, never beside w
    assert abs(starts["a"] - starts["w"]) >= 1.0
    assert starts["z"] >= starts["w"] + 2
    _valid(p, s)


def test_float_durations() -> None:
    # 2 units: a (0.5) -> b (0.25) beside c (0.75): 0.75
    g = OpGraph((Op("a", 0.5), Op("b", 0.25, deps=("a",)), Op("c", 0.75)))
    s = solve_brute_force(Problem(g, Machine(units=2)))
    assert s.makespan == 0.75
    assert solve_brute_force(Problem(g, Machine(units=1))).makespan == 1.5


# ----------------------------------------------------------------------------- memory


def _two_branches() -> OpGraph:
    """a1 -> a2 and b1 -> b2 feeding c; the first op of each branch writes 10 B, the second 1 B.

    Depth first (a1, a2, b1, b2, c on one unit): a1 10; a2 10 + 1 = 11 (a1's output is freed
    at a2's end); b1 1 + 10 = 11; b2 1 + 10 + 1 = 12; c 1 + 1 = 2 -> peak 12. It is optimal:
    whichever of a2 / b2 runs second does so while the other's 1 B output waits for c, beside
    its own 10 B input and 1 B output: 12. min_memory_bound only sees 11 (one op at a time).
    Breadth first (FIFO: a1, b1, a2, b2, c): a2 runs while a1's and b1's outputs are both
    live: 10 + 10 + 1 = 21.
    """
    return branches_graph()


def test_peak_memory_needs_a_non_greedy_order() -> None:
    g = _two_branches()
    p = Problem(g, Machine(units=1))
    assert min_memory_bound(g)[0] == 11
    fifo = greedy(p)
    assert fifo.starts() == {"a1": 0.0, "b1": 1.0, "a2": 2.0, "b2": 3.0, "c": 4.0}
    assert fifo.peak_memory == 21
    s = solve_brute_force(p, "peak_memory")
    assert s.status is Status.OPTIMAL
    assert s.peak_memory == 12
    assert s.makespan == 5.0
    st = s.starts()
    # one branch completes before the other starts
    a_first = st["a2"] < st["b1"]
    assert a_first or st["b2"] < st["a1"]
    _valid(p, s)


def test_lexicographic_tie_breaks_on_two_units() -> None:
    p = Problem(_two_branches(), Machine(units=2))
    # makespan first: 3 forces a1, b1 at 0, a2, b2 at 1, c at 2; at t=1 both 10 B outputs,
    # a2's and b2's are live: 22
    fast = solve_brute_force(p, Objective.MAKESPAN)
    assert (fast.makespan, fast.peak_memory) == (3.0, 22)
    # memory first: 12 needs a1's output [start a1, end a2) and b1's [start b1, end b2) apart
    # (20 > 12): 2 + 2 time units, then c -> 5
    lean = solve_brute_force(p, Objective.PEAK_MEMORY)
    assert (lean.peak_memory, lean.makespan) == (12, 5.0)
    # the lexicographic objectives are the same two orders
    assert solve_brute_force(p, "makespan_then_memory").peak_memory == 22
    assert solve_brute_force(p, "memory_then_makespan").makespan == 5.0
    # the problem's objective is the default
    q = Problem(p.graph, p.machine, Objective.PEAK_MEMORY)
    assert solve_brute_force(q).peak_memory == 12


def test_memory_cap_lengthens_the_schedule() -> None:
    # p1 -> q1 and p2 -> q2, outputs of p1 and p2 10 B each, 2 units. Without a cap both
    # chains run side by side: makespan 2, peak 20. Under 15 B the two outputs (each live
    # from its producer's start to its consumer's end, 2 time units) cannot overlap: 4
    g = OpGraph(
        (
            Op("p1", 1, output_bytes=10),
            Op("p2", 1, output_bytes=10),
            Op("q1", 1, deps=("p1",)),
            Op("q2", 1, deps=("p2",)),
        )
    )
    free = solve_brute_force(Problem(g, Machine(units=2)))
    assert (free.makespan, free.peak_memory) == (2.0, 20)
    p = Problem(g, Machine(units=2, memory_cap=15))
    s = solve_brute_force(p)
    assert (s.makespan, s.peak_memory) == (4.0, 10)
    _valid(p, s)


def _held_outputs() -> OpGraph:
    """Two graph outputs held to the end (10 B each): whichever runs last does so beside the
    other's output and with its own workspace, so every schedule needs 21 B (b, then a),
    where both memory bounds see the 20 B held at the end."""
    return OpGraph(
        (
            Op("a", 1, output_bytes=10, workspace_bytes=1, output=True),
            Op("b", 1, output_bytes=10, workspace_bytes=3, output=True),
        )
    )


def test_infeasible_cap() -> None:
    g = _held_outputs()
    assert min_memory_bound(g)[0] == 20
    p = Problem(g, Machine(units=1, memory_cap=20))
    assert p.infeasibility_reason() is None
    s = solve_brute_force(p)
    assert s.status is Status.INFEASIBLE
    assert not s.has_schedule
    # the reason says what no schedule met (the CLI prints "no schedule exists: <reason>",
    # which had read "no schedule exists: no schedule exists")
    assert s.info["reason"] == (
        "every semi-active schedule breaks the memory cap of 20 B (exhaustive search)"
    )
    # a cap that the analysis refutes first: its reason is kept, not replaced
    tight = Problem(g, Machine(units=1, memory_cap=5))
    assert solve_brute_force(tight).info["reason"] == tight.infeasibility_reason()
    s = solve_brute_force(Problem(g, Machine(units=1, memory_cap=21)))
    assert (s.status, s.makespan, s.peak_memory) == (Status.OPTIMAL, 2.0, 21)
    assert [o.name for o in sorted(s.ops, key=lambda o: o.start)] == ["b", "a"]


def test_cap_below_the_simple_bound_and_demand_above_capacity() -> None:
    g = _held_outputs()
    s = solve_brute_force(Problem(g, Machine(units=1, memory_cap=12)))
    assert s.status is Status.INFEASIBLE and not s.ops
    big = OpGraph((Op("a", 1, demands={"units": 2}),))
    s = solve_brute_force(Problem(big, Machine(units=1)))
    assert s.status is Status.INFEASIBLE and not s.ops


def test_graph_output_held_until_the_makespan() -> None:
    # o (1, 5 B, graph output, no consumer) and l (3): o's tensor lives from its start to the
    # makespan 3, whatever its start; a zero-duration graph output z (7 B) placed at the
    # makespan holds nothing ([3, 3) is empty): peak 5
    g = OpGraph(
        (
            Op("o", 1, output_bytes=5, output=True),
            Op("l", 3),
            Op("z", 0, output_bytes=7, output=True),
        )
    )
    p = Problem(g, Machine(units=2))
    s = solve_brute_force(p, "peak_memory")
    assert (s.makespan, s.peak_memory) == (3.0, 5)
    assert s.starts()["z"] == 3.0
    _valid(p, s)


# ----------------------------------------------------------------------------- limits


def test_refuses_more_than_ten_ops() -> None:
    assert MAX_BRUTE_FORCE_OPS == 10
    chain = [Op(f"o{i}", 1, deps=(f"o{i - 1}",) if i else ()) for i in range(11)]
    with pytest.raises(ProblemError, match="at most 10 ops; this one has 11"):
        solve_brute_force(Problem(OpGraph(tuple(chain)), Machine(units=1)))
    # ten ops are accepted: a chain of ten unit ops takes 10
    s = solve_brute_force(Problem(OpGraph(tuple(chain[:10])), Machine(units=2)))
    assert s.makespan == 10.0


# ----------------------------------------------------------------------------- vs exhaustive


def _random_tiny(rng: random.Random) -> Problem:
    n = rng.randint(1, 5)
    k = rng.choice([1, 2, 3, None])
    dma = rng.randint(1, 2)
    ops = []
    for i in range(n):
        deps = tuple(f"o{j}" for j in range(i) if rng.random() < 0.35)
        units = rng.choice([1, 1, 0, 2 if k is None else min(2, k)])
        ops.append(
            Op(
                f"o{i}",
                rng.choice([0, 1, 1, 2, 3]),
                deps=deps,
                output_bytes=rng.choice([0, 2, 5, 8]),
                workspace_bytes=rng.choice([0, 0, 3]),
                output=rng.random() < 0.3,
                demands={"units": units, "dma": rng.randint(0, dma)},
            )
        )
    g = OpGraph(tuple(ops), persistent_bytes=rng.choice([0, 4]), resources={"dma": dma})
    need, _ = min_memory_bound(g)
    cap = rng.choice([None, None, need, need + 1, need + 4])
    return Problem(g, Machine(units=k, memory_cap=cap))


@pytest.mark.parametrize("seed", range(4))
def test_agrees_with_exhaustive_enumeration(seed: int, exhaustive) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(7100 + seed)
    feasible = trade_offs = 0
    for _ in range(60):
        p = _random_tiny(rng)
        outcomes = exhaustive(p)
        ms_first = solve_brute_force(p, "makespan")
        pk_first = solve_brute_force(p, "peak_memory")
        if not outcomes:
            assert ms_first.status is Status.INFEASIBLE and not ms_first.ops
            assert pk_first.status is Status.INFEASIBLE and not pk_first.ops
            continue
        feasible += 1
        best_ms = min(outcomes)  # least makespan, then least peak
        best_pk = min(outcomes, key=lambda mp: (mp[1], mp[0]))  # least peak, then makespan
        trade_offs += best_ms != best_pk
        assert ms_first.status is Status.OPTIMAL
        assert (ms_first.makespan, ms_first.peak_memory) == best_ms
        assert ms_first.lower_bound == best_ms[0]
        assert pk_first.status is Status.OPTIMAL
        assert (pk_first.makespan, pk_first.peak_memory) == best_pk
        _valid(p, ms_first)
        _valid(p, pk_first)
    # the generator is not degenerate: mostly feasible, and memory and time do conflict
    assert feasible >= 50
    assert trade_offs >= 3


def test_time_limit_returns_best_so_far_unproven() -> None:
    # Ten independent ops on three units: the full enumeration takes minutes; a limit of 1 ns
    # stops at the first look at the clock, with the first complete schedule in hand.
    g = OpGraph(tuple(Op(f"o{i}", 1 + (i * 7) % 5, output_bytes=10 + i) for i in range(10)))
    p = Problem(g, Machine(units=3))
    s = solve_brute_force(p, time_limit=1e-9)
    assert s.status is Status.FEASIBLE and s.lower_bound is None
    assert s.info["reason"] == "time limit reached"
    assert validate(p, s).valid and s.makespan >= 10.0  # work 30 on 3 units
    # a limit the search never reaches changes nothing
    small = Problem(OpGraph(tuple(g.ops[:5])), Machine(units=2))
    assert solve_brute_force(small, time_limit=60).status is Status.OPTIMAL
    # through the registry, the job's time limit is honoured
    from opsched import registry

    assert registry.run("brute-force", p, time_limit=1e-9).status is Status.FEASIBLE


def test_time_limit_without_any_schedule_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    # looking at the clock at the first node stops the search before any schedule
    from opsched.solver import brute

    monkeypatch.setattr(brute, "_CLOCK_EVERY", 1)
    g = OpGraph(tuple(Op(f"o{i}", 1, output_bytes=4) for i in range(6)))
    s = solve_brute_force(Problem(g, Machine(units=2)), time_limit=1e-9)
    assert s.status is Status.UNKNOWN and not s.has_schedule
    assert s.info["reason"] == "time limit reached"

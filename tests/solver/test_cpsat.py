"""Hand-worked cases of :func:`opsched.solver.solve_cpsat`, the published STG and PSPLIB
optima, and its limits (time limit, scaling, infeasibility reasons)."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest

from opsched.analysis import critical_path, min_memory_bound
from opsched.datasets import dataset_path, psplib_optima, stg_optima
from opsched.demo import branches_graph, seed_problem
from opsched.importers import read_psplib, read_stg
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Objective, Problem
from opsched.schedule import Schedule, Status
from opsched.solver import solve_brute_force, solve_cpsat
from opsched.solver.cpsat import Params
from opsched.validate import validate

FAST = {"time_limit": 10.0, "num_workers": 2}


def _valid(p: Problem, s: Schedule) -> None:
    r = validate(p, s)
    assert r.valid, r.summary()


def _units_in_range(p: Problem, s: Schedule) -> None:
    """Every op that demands exactly one unit names one in 0..k-1."""
    k = p.machine.units
    for o in s.ops:
        if p.graph[o.name].demands.get("units", 0) == 1:
            assert o.unit is not None
            assert k is None or 0 <= o.unit < k, (o.name, o.unit)


# ----------------------------------------------------------------------------- makespan


@pytest.mark.parametrize(("units", "optimum"), [(1, 7.0), (2, 6.0), (None, 6.0)])
def test_seed_graph(units: int | None, optimum: float) -> None:
    # seven unit ops; one unit: the work, 7. Two units: BN beside Conv2, and the critical
    # path Input-Conv1-Conv2-ReLU-Add-Output, 6, is reached; unlimited units: the same 6
    p = seed_problem(units)
    s = solve_cpsat(p, **FAST)
    assert s.status is Status.OPTIMAL
    assert s.solver == "cpsat"
    assert s.makespan == optimum
    assert s.lower_bound == optimum
    assert s.gap == 0.0
    assert s.info["objective"] == "makespan"
    assert [st["minimise"] for st in s.info["stages"]] == ["makespan"]
    assert s.info["stages"][0]["cpsat_status"] == "OPTIMAL"
    assert s.info["scaling"]["time_scale"] == 1
    _valid(p, s)
    _units_in_range(p, s)
    # without the greedy hint the optimum is the same
    assert solve_cpsat(p, hint=False, **FAST).makespan == optimum


def test_memory_cap_forces_serialisation() -> None:
    # p1 -> q1 and p2 -> q2 on 2 units; p1 and p2 write 10 B each. Without a cap the chains
    # run side by side: makespan 2, peak 20. Each 10 B output is live from its producer's
    # start to its consumer's end (2 time units); under 15 B they cannot overlap, so one
    # chain runs after the other: makespan 4, peak 10. A 20 B cap does not bind.
    g = OpGraph(
        (
            Op("p1", 1, output_bytes=10),
            Op("p2", 1, output_bytes=10),
            Op("q1", 1, deps=("p1",)),
            Op("q2", 1, deps=("p2",)),
        )
    )
    expected = {None: (2.0, 20), 20: (2.0, 20), 15: (4.0, 10), 10: (4.0, 10)}
    for cap, (makespan, peak) in expected.items():
        p = Problem(g, Machine(units=2, memory_cap=cap))
        s = solve_cpsat(p, "makespan_then_memory", **FAST)
        assert s.status is Status.OPTIMAL, cap
        assert (s.makespan, s.peak_memory) == (makespan, peak), cap
        assert s.lower_bound == makespan
        _valid(p, s)
    # under 15 B one chain ends (q's end frees p's output) before the other's producer starts
    st = solve_cpsat(Problem(g, Machine(units=2, memory_cap=15)), **FAST).starts()
    assert st["p2"] >= st["q1"] + 1 or st["p1"] >= st["q2"] + 1


def _two_branches() -> OpGraph:
    """a1 -> a2 and b1 -> b2 feeding c, unit durations; a1 and b1 write 10 B, a2 and b2 1 B.

    On 2 units: makespan 3 forces a1, b1 at 0, a2, b2 at 1, c at 2: at t=1 the two 10 B
    outputs and the two 1 B outputs are live, peak 22. Least peak: 12, one branch after the
    other (a1 10; a2 10 + 1; b1 1 + 10; b2 1 + 10 + 1 = 12), makespan 5. Makespan 4: b1 (and
    a1) must start by 1 for c to end by 4, so a1's and b1's outputs overlap; the best is a1 0,
    a2 1, b1 1, b2 2, c 3: at t=1 10 + 1 + 10 = 21 (putting a2 at 2 instead gives 22).
    """
    return branches_graph()


def test_lexicographic_objectives() -> None:
    p = Problem(_two_branches(), Machine(units=2))
    fast = solve_cpsat(p, "makespan_then_memory", **FAST)
    assert fast.status is Status.OPTIMAL
    assert (fast.makespan, fast.peak_memory, fast.lower_bound) == (3.0, 22, 3.0)
    assert [st["minimise"] for st in fast.info["stages"]] == ["makespan", "peak"]
    lean = solve_cpsat(p, Objective.MEMORY_THEN_MAKESPAN, **FAST)
    assert lean.status is Status.OPTIMAL
    assert (lean.makespan, lean.peak_memory) == (5.0, 12)
    assert [st["minimise"] for st in lean.info["stages"]] == ["peak", "makespan"]
    assert lean.info["peak_lower_bound"] == 12  # proven: the bound is the optimum
    assert lean.lower_bound == 3.0  # the makespan bound (critical path), not tight here
    for s in (fast, lean):
        _valid(p, s)
    # the problem's objective is the default
    q = Problem(p.graph, p.machine, Objective.PEAK_MEMORY)
    assert solve_cpsat(q, **FAST).peak_memory == 12


@pytest.mark.parametrize(
    ("limit", "peak"),
    [(3, 22), (4, 21), (4.5, 21), (5, 12), (6, 12), (None, 12)],
)
def test_peak_memory_with_makespan_limit(limit: float | None, peak: int) -> None:
    # see _two_branches: the least peak by makespan is 3 -> 22, 4 -> 21, 5 or more -> 12
    p = Problem(_two_branches(), Machine(units=2))
    s = solve_cpsat(p, "peak_memory", makespan_limit=limit, **FAST)
    assert s.status is Status.OPTIMAL
    assert s.peak_memory == peak
    assert s.info["peak_lower_bound"] == peak
    assert s.makespan <= (limit if limit is not None else 5.0)  # memory stage horizon: work 5
    _valid(p, s)


def test_makespan_limit_below_the_critical_path_is_infeasible() -> None:
    p = Problem(_two_branches(), Machine(units=2))
    s = solve_cpsat(p, "peak_memory", makespan_limit=2, **FAST)
    assert s.status is Status.INFEASIBLE
    assert not s.ops and s.makespan is None
    # the critical path is 3: the limit is refused before any search, with the bound named
    assert s.info["reason"].startswith("makespan limit 2 is below the lower bound 3")


def test_makespan_limit_infeasibility_is_not_blamed_on_a_loose_cap() -> None:
    # a (2) -> b (3): critical path 5 > limit 4; the 1000 B cap is irrelevant (peak 8 B)
    g = OpGraph((Op("a", 2, output_bytes=8), Op("b", 3, deps=("a",))))
    p = Problem(g, Machine(units=1, memory_cap=1000))
    assert solve_cpsat(p, "peak_memory", **FAST).peak_memory == 8
    s = solve_cpsat(p, "peak_memory", makespan_limit=4, **FAST)
    assert s.status is Status.INFEASIBLE
    assert "fits in" not in s.info["reason"]


# ----------------------------------------------------------------------------- infeasible


def test_cap_below_min_memory_bound() -> None:
    # c runs with both 4 B inputs, its 2 B output, 1 B of workspace and 10 B persistent:
    # 21 B in every schedule (min_memory_bound's docstring example)
    g = OpGraph(
        (
            Op("a", 1, output_bytes=4),
            Op("b", 1, output_bytes=4),
            Op("c", 1, deps=("a", "b"), output_bytes=2, workspace_bytes=1),
        ),
        persistent_bytes=10,
    )
    need, who = min_memory_bound(g)
    assert (need, who.split(" (")[0]) == (21, "op 'c'")
    p = Problem(g, Machine(units=2, memory_cap=20))
    s = solve_cpsat(p, **FAST)
    assert s.status is Status.INFEASIBLE
    assert s.ops == [] and not s.has_schedule
    assert s.makespan is None and s.peak_memory is None
    reason = s.info["reason"]
    assert "op 'c'" in reason and "(20 B)" in reason and "(21 B)" in reason
    assert reason.startswith("memory cap 20")
    assert validate(p, s).valid  # nothing to check
    # 21 B is enough: a and b side by side (18 B), then c (21 B): makespan 2
    ok = solve_cpsat(p.with_machine(memory_cap=21), "makespan_then_memory", **FAST)
    assert (ok.status, ok.makespan, ok.peak_memory) == (Status.OPTIMAL, 2.0, 21)


def _dead_end() -> OpGraph:
    """a's 6 B output lives until c ends, and c needs x (6 B of workspace) after it: every
    schedule holds 12 B while x runs, though no single op needs more than 6 B (the
    minimum-cut bound sees it, the simple one does not)."""
    return OpGraph(
        (
            Op("a", 1, output_bytes=6),
            Op("m", 1, deps=("a",)),
            Op("x", 1, deps=("m",), workspace_bytes=6),
            Op("c", 1, deps=("a", "x")),
        )
    )


def _held_outputs() -> OpGraph:
    """Two graph outputs held to the end (10 B each): whichever runs last does so beside the
    other's output and with its own workspace, so every schedule needs 21 B (b, then a);
    both bounds see only the 20 B held at the end."""
    return OpGraph(
        (
            Op("a", 1, output_bytes=10, workspace_bytes=1, output=True),
            Op("b", 1, output_bytes=10, workspace_bytes=3, output=True),
        )
    )


@pytest.mark.parametrize("cap", [10, 11])
def test_cap_above_the_simple_bound_caught_by_the_cut(cap: int) -> None:
    g = _dead_end()
    assert min_memory_bound(g, cut=False)[0] == 6
    assert min_memory_bound(g)[0] == 12  # the least peak: the cut is exact here
    p = Problem(g, Machine(units=2, memory_cap=cap))
    assert p.infeasibility_reason() is None  # the heuristics' cheap check
    reason = p.infeasibility_reason(cut=True)  # the exact solver's
    assert reason is not None and "op 'x'" in reason and "(12 B)" in reason
    s = solve_cpsat(p, **FAST)
    assert s.status is Status.INFEASIBLE and not s.ops
    assert s.info["reason"] == reason
    assert solve_brute_force(p).status is Status.INFEASIBLE


def test_cap_above_both_bounds_still_infeasible() -> None:
    g = _held_outputs()
    assert min_memory_bound(g)[0] == 20
    p = Problem(g, Machine(units=2, memory_cap=20))
    assert p.infeasibility_reason() is None  # only the search can tell
    # refuted by the cap's orders before any search: whichever runs last cannot run once
    # the other has started (10 B held beside its own 11 or 13 B)
    s = solve_cpsat(p, **FAST)
    assert s.status is Status.INFEASIBLE and not s.ops
    assert "cannot run in either order within the memory cap" in s.info["reason"]
    assert s.info["stages"] == []
    # without the orders, by the one-unit check, again before any search
    s = solve_cpsat(p, **FAST, params=Params(cap_orders=False))
    assert s.status is Status.INFEASIBLE
    assert not s.ops
    assert s.info["reason"].startswith("no one-unit order stays within 20B (20 B)")
    assert s.info["stages"] == []
    # without both, by CP-SAT's search
    s = solve_cpsat(p, **FAST, params=Params(serial_check=False, cap_orders=False))
    assert s.status is Status.INFEASIBLE
    assert not s.ops
    assert s.info["reason"] == (
        "CP-SAT proved that no schedule fits in 20B (20 B); the analysis bound is 20B "
        "(20 B), for the graph outputs held at the end (+ persistent 0)"
    )
    assert s.info["stages"][0]["cpsat_status"] == "INFEASIBLE"
    assert solve_brute_force(p).status is Status.INFEASIBLE


def test_dead_end_feasible_at_twelve_bytes() -> None:
    # the chain a, m, x, c: 4; peak 12 while x runs
    p = Problem(_dead_end(), Machine(units=2, memory_cap=12))
    s = solve_cpsat(p, "makespan_then_memory", **FAST)
    assert (s.status, s.makespan, s.peak_memory) == (Status.OPTIMAL, 4.0, 12)
    _valid(p, s)
    # b then a: 21 B while a runs beside b's held output
    p = Problem(_held_outputs(), Machine(units=2, memory_cap=21))
    s = solve_cpsat(p, **FAST)
    assert (s.status, s.makespan, s.peak_memory) == (Status.OPTIMAL, 2.0, 21)
    _valid(p, s)


def test_demand_above_capacity() -> None:
    g = OpGraph((Op("a", 1, demands={"units": 1, "dma": 2}), Op("b", 1)))
    p = Problem(g, Machine(units=2, resources={"dma": 1}))
    s = solve_cpsat(p, **FAST)
    assert s.status is Status.INFEASIBLE and not s.ops
    assert s.info["reason"] == "op 'a' demands 2 of 'dma' but the capacity is 1"
    w = OpGraph((Op("w", 1, demands={"units": 3}),))
    s = solve_cpsat(Problem(w, Machine(units=2)), **FAST)
    assert s.status is Status.INFEASIBLE
    assert s.info["reason"] == "op 'w' demands 3 of 'units' but the capacity is 2"
    # a zero-duration op holds nothing, so its demand does not matter
    z = OpGraph((Op("z", 0, demands={"units": 3}), Op("y", 1)))
    ok = solve_cpsat(Problem(z, Machine(units=2)), **FAST)
    assert (ok.status, ok.makespan) == (Status.OPTIMAL, 1.0)


def test_named_resource_and_multi_unit_ops() -> None:
    # 4 units; a, b, c (2 each) hold the single dma slot: they run one after another, 6.
    # w (3) takes 3 of the 4 units: it can run beside one of a, b, c, but not beside d
    # (2 units); e.g. a, w at 0; b at 2; d at 3 beside b; c at 4: optimum 6 (the dma chain)
    g = OpGraph(
        (
            Op("a", 2, demands={"units": 1, "dma": 1}),
            Op("b", 2, demands={"units": 1, "dma": 1}),
            Op("c", 2, demands={"units": 1, "dma": 1}),
            Op("w", 3, demands={"units": 3}),
            Op("d", 1, demands={"units": 2}),
        ),
        resources={"dma": 1},
    )
    p = Problem(g, Machine(units=4))
    s = solve_cpsat(p, **FAST)
    assert (s.status, s.makespan) == (Status.OPTIMAL, 6.0)
    assert solve_brute_force(p).makespan == 6.0
    _valid(p, s)
    _units_in_range(p, s)
    assert s.starts()["w"] + 3 <= s.starts()["d"] or s.starts()["d"] + 1 <= s.starts()["w"]
    # the machine's capacity overrides the graph's default. With 2 dma slots the unit work
    # 3 * 2 + 3 * 3 + 2 * 1 = 17 > 4 units * 4 forces 5, reached by a, w at 0; b at 2; c, d at 3
    wide = p.with_machine(resources={"dma": 2})
    assert solve_cpsat(wide, **FAST).makespan == 5.0
    assert solve_brute_force(wide).makespan == 5.0


# ----------------------------------------------------------------------------- scaling


def test_decimal_durations_are_exact() -> None:
    # a (0.5) -> b (0.25) and c (0.75): one unit, the work 1.5; two units, c beside the
    # chain: 0.75. Ticks of 1/100 are exact, so the result is proven optimal
    g = OpGraph((Op("a", 0.5), Op("b", 0.25, deps=("a",)), Op("c", 0.75)))
    for units, optimum in [(1, 1.5), (2, 0.75)]:
        p = Problem(g, Machine(units=units))
        s = solve_cpsat(p, **FAST)
        assert s.status is Status.OPTIMAL
        assert s.makespan == optimum and s.lower_bound == optimum
        assert s.info["scaling"]["time_scale"] == 100
        assert s.info["scaling"]["time_exact"] is True
        assert s.info["scaling"]["max_time_error"] == 0.0
        assert "note" not in s.info
        _valid(p, s)


def test_inexact_durations_are_feasible_and_nearly_optimal() -> None:
    # a (1/3) -> b (1/3) beside c (2/3) on 2 units: the chain and c both take 2/3, the
    # optimum. One unit: the work, 4/3. 1/3 is no multiple of 10^-6: durations are rounded
    # up to ticks of work / 10^6, so CP-SAT's proof is the rounded model's; the result is
    # valid, and optimal only because its makespan meets a bound of the problem itself
    # (the chain, the work). Three ops of 1/3 on 2 units end at 2/3, above every bound
    # (1/2): not claimed
    third = 1 / 3
    g = OpGraph((Op("a", third), Op("b", third, deps=("a",)), Op("c", 2 * third)))
    three = OpGraph((Op("a", third), Op("b", third), Op("c", third)))
    for graph, units, optimum in [
        (g, 2, Fraction(2, 3)), (g, 1, Fraction(4, 3)), (three, 2, Fraction(2, 3)),
    ]:  # fmt: skip
        p = Problem(graph, Machine(units=units))
        s = solve_cpsat(p, **FAST)
        assert s.info["scaling"]["time_exact"] is False
        if graph is three:
            assert s.status is Status.FEASIBLE and s.lower_bound == 0.5
            assert s.info["note"] == "durations or sizes were rounded; optimality is not claimed"
        else:
            assert s.status is Status.OPTIMAL and s.makespan == s.lower_bound
            assert "meets the problem's lower bound" in s.info["note"]
        assert s.makespan is not None
        assert float(optimum) - 1e-12 <= s.makespan <= float(optimum) + 1e-5
        assert s.lower_bound is not None and s.lower_bound <= s.makespan
        _valid(p, s)
        _units_in_range(p, s)


def test_inexact_durations_error_is_bounded() -> None:
    # 1/3, 1/7, 1/11 in a chain on one unit: the makespan is the exact sum up to the
    # rounding of each op (max_time_error each)
    durs = [1 / 3, 1 / 7, 1 / 11]
    g = OpGraph(tuple(Op(f"o{i}", d, deps=(f"o{i - 1}",) if i else ()) for i, d in enumerate(durs)))
    p = Problem(g, Machine(units=1))
    s = solve_cpsat(p, **FAST)
    assert s.status is Status.OPTIMAL  # the chain's length: met, whatever the rounding
    err = s.info["scaling"]["max_time_error"]
    assert 0 < err < 1e-5
    assert sum(durs) - 1e-12 <= s.makespan <= sum(durs) + len(durs) * err + 1e-12
    _valid(p, s)


def test_huge_sizes_exact_with_a_common_factor() -> None:
    # outputs of 2^50 and 2^51 B: the gcd 2^50 makes one quantum, so the model is exact.
    # a and b feed c; 3 * 2^50 B fits both (makespan 2 on 2 units), 2^51 B does not: then
    # c still needs both inputs live (3 * 2^50) -> the simple bound says infeasible
    b = 2**50
    g = OpGraph(
        (Op("a", 1, output_bytes=b), Op("b", 1, output_bytes=2 * b), Op("c", 1, deps=("a", "b")))
    )
    p = Problem(g, Machine(units=2, memory_cap=3 * b))
    s = solve_cpsat(p, "makespan_then_memory", **FAST)
    assert s.status is Status.OPTIMAL
    assert (s.makespan, s.peak_memory) == (2.0, 3 * b)
    assert s.info["scaling"]["memory_quantum"] == b
    _valid(p, s)
    assert solve_cpsat(p.with_machine(memory_cap=2 * b), **FAST).status is Status.INFEASIBLE


def _huge() -> OpGraph:
    """Outputs of 2^50 + 1 and 2^50 + 3 B (coprime: inexact quanta) consumed by c."""
    b = 2**50
    return OpGraph(
        (
            Op("a", 1, output_bytes=b + 1),
            Op("b", 1, output_bytes=b + 3),
            Op("c", 1, deps=("a", "b"), workspace_bytes=b),
        )
    )


def test_huge_sizes_inexact_quanta_give_a_valid_schedule() -> None:
    b = 2**50
    cap = 3 * b + 2**30  # c needs (b+1) + (b+3) + b = 3b + 4; a GiB of slack for rounding
    p = Problem(_huge(), Machine(units=2, memory_cap=cap))
    s = solve_cpsat(p, "makespan_then_memory", **FAST)
    assert s.status is Status.FEASIBLE  # sizes were rounded: not claimed optimal
    assert s.info["scaling"]["memory_exact"] is False
    assert s.info["scaling"]["memory_quantum"] > 1
    assert s.makespan == 2.0  # a and b side by side, then c
    assert s.peak_memory == 3 * b + 4 <= cap
    _valid(p, s)


def test_huge_sizes_tight_cap_is_feasible_not_infeasible() -> None:
    # a cap of exactly 3 * 2^50 + 4 B admits a schedule, but sizes rounded up and the cap
    # rounded down no longer fit: the rounded model is infeasible, which proves nothing,
    # and the greedy schedule of the problem itself is returned (it had been UNKNOWN); it
    # ends at the critical path, so it is optimal all the same
    b = 2**50
    p = Problem(_huge(), Machine(units=2, memory_cap=3 * b + 4))
    assert p.infeasibility_reason() is None
    s = solve_cpsat(p, **FAST)
    assert s.status is Status.OPTIMAL and s.makespan == 2.0 == s.lower_bound
    assert s.info["note_fallback"].startswith(
        "the rounded model is infeasible (rounding was not exact): "
    )
    assert "reason" not in s.info and "meets the problem's lower bound" in s.info["note"]
    _valid(p, s)


def test_rounded_model_infeasible_keeps_a_valid_start() -> None:
    # a (10^15 + 7 B) read by b (3 B) fits the cap exactly; rounded to quanta it does not,
    # so the cap's orders refuted the integer problem and no schedule came back
    g = OpGraph((Op("a", 1, output_bytes=10**15 + 7), Op("b", 1, output_bytes=3, deps=("a",)),
                 Op("c", 1, output_bytes=10**15 + 1)))  # fmt: skip
    p = Problem(g, Machine(units=2, memory_cap=10**15 + 10))
    s = solve_cpsat(p, time_limit=2)
    assert s.info["scaling"]["memory_exact"] is False
    assert s.status is Status.FEASIBLE  # not OPTIMAL: nothing was proven
    assert s.makespan == 3.0 and s.lower_bound == 2.0
    assert "rounded model is infeasible" in s.info["note_fallback"]
    _valid(p, s)
    # where the problem has no schedule either, nothing is invented
    tight = Problem(g, Machine(units=2, memory_cap=10**15 + 9))
    t = solve_cpsat(tight, time_limit=2)
    assert t.status in (Status.UNKNOWN, Status.INFEASIBLE) and not t.has_schedule


@pytest.mark.parametrize("units", [2**31, 10**30])
def test_huge_unit_counts(units: int) -> None:
    # the greedy hint sized a heap by the machine: 2^31 units ran out of memory
    g = OpGraph((Op("a", 1), Op("b", 2), Op("c", 1, deps=("a",))))
    p = Problem(g, Machine(units=units))
    s = solve_cpsat(p, **FAST)
    assert s.status is Status.OPTIMAL and s.makespan == 2.0 and s.machine["units"] == units
    _valid(p, s)


def test_peak_lower_bound_not_above_the_peak_reached() -> None:
    b = 2**50
    g = OpGraph(
        (
            Op("a", 1, output_bytes=b + 1),
            Op("b", 1, output_bytes=b + 3),
            Op("c", 1, deps=("a", "b")),
        )
    )
    p = Problem(g, Machine(units=2))
    s = solve_cpsat(p, "peak_memory", **FAST)
    assert s.has_schedule and s.peak_memory == 2 * b + 4  # both inputs of c live
    assert s.info["peak_lower_bound"] <= s.peak_memory


# ----------------------------------------------------------------------------- float starts


def test_decimal_chain_stays_on_one_unit() -> None:
    g = OpGraph((Op("a", 0.1), Op("b", 0.2, deps=("a",)), Op("c", 0.3, deps=("b",))))
    p = Problem(g, Machine(units=1))
    s = solve_cpsat(p, **FAST)
    assert s.status is Status.OPTIMAL and s.makespan == pytest.approx(0.6)
    _valid(p, s)


def test_long_duration_with_many_decimals() -> None:
    g = OpGraph((Op("a", 1234.5678901), Op("b", 1, deps=("a",))))
    p = Problem(g, Machine(units=1))
    s = solve_cpsat(p, **FAST)
    st = s.starts()
    assert st["b"] >= st["a"] + 1234.5678901
    _valid(p, s)


# ----------------------------------------------------------------------------- limits


@pytest.mark.timing
def test_time_limit_is_honoured() -> None:
    # STG rand0000 with 300 tasks on 4 units is not proven within 2 s; the call returns by
    # then with the best schedule, the bound and the gap
    g = read_stg(dataset_path("stg/300/rand0000.stg"))
    p = Problem(g, Machine(units=4))
    t0 = time.perf_counter()
    s = solve_cpsat(p, time_limit=2.0, num_workers=2)
    wall = time.perf_counter() - t0
    assert wall < 3.5
    assert s.wall_time_s is not None and s.wall_time_s <= wall
    assert s.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert s.lower_bound is not None and s.makespan is not None
    assert s.lower_bound <= s.makespan
    assert s.lower_bound >= critical_path(g).length
    assert s.gap is not None and 0.0 <= s.gap < 0.5
    if s.status is Status.FEASIBLE:
        # CP-SAT's own schedule, or, on a loaded machine where it finds none in time, the
        # greedy schedule it was hinted with (said so in the info)
        stage = s.info["stages"][0]["cpsat_status"]
        assert stage == "FEASIBLE" or (stage == "UNKNOWN" and "note_fallback" in s.info)
    _valid(p, s)
    _units_in_range(p, s)


def test_deterministic_runs_are_identical() -> None:
    # rand0001 on 4 units with a memory-free lexicographic objective: many optimal schedules
    g = read_stg(dataset_path("stg/50/rand0001.stg"))
    p = Problem(g, Machine(units=4))
    runs = [solve_cpsat(p, time_limit=10, num_workers=2, deterministic=True) for _ in range(2)]
    assert runs[0].status is runs[1].status is Status.OPTIMAL
    assert runs[0].makespan == runs[1].makespan == 94.0
    assert runs[0].starts() == runs[1].starts()
    assert [o.unit for o in runs[0].ops] == [o.unit for o in runs[1].ops]


STG_SAMPLE = [f"rand{i:04d}" for i in range(10)]


@pytest.mark.parametrize("k", [2, 4, 8, 16])
def test_stg_50_published_optima(k: int) -> None:
    table = stg_optima(k)
    proven = 0
    for name in STG_SAMPLE:
        g = read_stg(dataset_path(f"stg/50/{name}.stg"))
        p = Problem(g, Machine(units=k))
        s = solve_cpsat(p, **FAST)
        lb, ub = table[name]
        assert s.status is Status.OPTIMAL, name
        assert s.lower_bound == s.makespan
        if lb == ub:
            assert s.makespan == lb, name
            proven += 1
        else:  # open in the table: our optimum must lie in the published interval
            assert lb <= s.makespan <= ub, name
        _valid(p, s)
        _units_in_range(p, s)
    assert proven >= 9


PSPLIB_SAMPLE = [f"j30{i}_{j}" for i in (1, 2) for j in range(1, 6)]


def test_psplib_j30_published_optima() -> None:
    table = psplib_optima()
    for name in PSPLIB_SAMPLE:
        g = read_psplib(dataset_path(f"psplib/j30/{name}.sm"))
        assert set(g.resources) == {"R1", "R2", "R3", "R4"}
        p = Problem(g, Machine(units=None))  # PSPLIB jobs hold no compute units
        s = solve_cpsat(p, **FAST)
        assert s.status is Status.OPTIMAL, name
        assert s.makespan == table[name], name
        assert s.lower_bound == table[name]
        _valid(p, s)
    assert table["j301_1"] == 43


def test_edge_finding_is_left_off_where_named_resources_have_cumulatives() -> None:
    """Timetable edge finding (Params.edge_finding): on by default for units alone, off
    where a named resource gets a cumulative (J30's R1-R4; a resource whose demands all
    exceed half its capacity is a no_overlap and does not count); forced either way."""

    def edge(p: Problem, **kw: object) -> bool:
        s = solve_cpsat(p, params=Params(**kw), time_limit=10.0)
        assert s.status is Status.OPTIMAL
        _valid(p, s)
        return bool(s.info["stages"][0]["edge_finding"])

    j30 = Problem(read_psplib(dataset_path("psplib/j30/j301_1.sm")), Machine(units=None))
    assert not edge(j30)
    assert edge(j30, edge_finding=True)
    assert edge(seed_problem(units=2))
    assert not edge(seed_problem(units=2), edge_finding=False)
    assert not edge(seed_problem(units=2), strong_cumulative=False)
    g = OpGraph(
        (Op("a", 2, demands={"units": 1, "dma": 1}), Op("b", 2, demands={"units": 1, "dma": 1}),
         Op("c", 2, demands={"units": 1, "dma": 1})),
        resources={"dma": 1},
    )  # fmt: skip
    assert edge(Problem(g, Machine(units=2)))  # dma 1: one at a time, a no_overlap
    assert not edge(Problem(g, Machine(units=2, resources={"dma": 2})))


def test_tensor_intervals_start_at_the_least_lifetime() -> None:
    # a is read by c, which waits for b: a's output lives 2 + 3 + 1 ticks at least; b's
    # 3 + 1; c is a graph output, live until the makespan (its b-level, 1, at least)
    from opsched.solver.cpsat.model import CpsatModel, Params

    g = OpGraph((
        Op("a", 2, output_bytes=4),
        Op("b", 3, deps=("a",), output_bytes=4),
        Op("c", 1, deps=("a", "b"), output_bytes=4, output=True),
    ))  # fmt: skip
    p = Problem(g, Machine(units=1, memory_cap=100))

    def least(params: Params) -> list[int]:
        m = CpsatModel(p, with_memory=True, with_peak=False, params=params)
        return [t.size_expr().proto.domain[0] for t in m.vars.tensor if t is not None]

    assert least(Params()) == [6, 4, 1]
    assert least(Params(lifetimes=False)) == [2, 3, 1]  # the ops' own durations
    r = solve_cpsat(p, time_limit=5)
    assert r.status.value == "OPTIMAL" and r.makespan == 6.0


def test_known_bound_stops_the_search() -> None:
    """A bound proven outside the model (here: the greedy hint's own makespan, given as if
    known) ends the search at the first schedule that meets it; STG rand0000 with 300 tasks
    on 4 units is not proven within 2 s otherwise (test_cli_solver.test_time_limit)."""
    from ortools.sat.python import cp_model

    from opsched.solver.cpsat.model import CpsatModel

    g = read_stg(dataset_path("stg/300/rand0000.stg"))
    p = Problem(g, Machine(units=4))
    m = CpsatModel(p, with_memory=False, with_peak=False)
    m.objective.minimise_makespan()
    hint_ms, _ = m.heuristic_upper_bound()
    t0 = time.perf_counter()
    status = m.solve(Params(), time.perf_counter() + 20, known_bound=hint_ms)
    assert time.perf_counter() - t0 < 10
    st = m.stats()
    assert st["cpsat_status"] == "OPTIMAL" and st["met_known_bound"] is True
    assert st["objective_value"] <= hint_ms and st["objective_bound"] == hint_ms
    assert status == cp_model.OPTIMAL
    plain = CpsatModel(p, with_memory=False, with_peak=False)
    plain.objective.minimise_makespan()
    plain.solve(Params(), time.perf_counter() + 1)
    assert plain.stats()["met_known_bound"] is False


def test_a_makespan_limit_a_float_product_puts_just_below_a_tick_still_holds() -> None:
    # 4.35 * 100 = 434.99999999999994 was floored to 434 ticks: a false INFEASIBLE for one
    # op of 4.35, and a false OPTIMAL peak of 16 (both at once) where running a then b ends
    # at 4.35 exactly with peak 8
    one = Problem(OpGraph((Op("a", 4.35, output_bytes=8),)), Machine(units=1))
    r = solve_cpsat(one, "peak_memory", makespan_limit=4.35, time_limit=10, num_workers=1)
    assert r.status is Status.OPTIMAL and r.makespan == pytest.approx(4.35)
    g = OpGraph((Op("a", 2.2, output_bytes=8), Op("b", 2.15, output_bytes=8)))
    two = Problem(g, Machine(units=2))
    r = solve_cpsat(two, "peak_memory", makespan_limit=4.35, time_limit=10, num_workers=1)
    assert (r.status, r.peak_memory) == (Status.OPTIMAL, 8) and validate(two, r).valid


def test_no_bound_from_a_model_with_rounded_sizes_is_claimed() -> None:
    # sizes past 2^40 quanta are rounded up (the cap down): the rounded model needs two
    # steps where the problem needs one, and its bound 2 had been reported with gap 0
    x = 2**50 + 1
    g = OpGraph((Op("a", 1, output_bytes=x), Op("b", 1, output_bytes=x + 2)))
    p = Problem(g, Machine(units=2, memory_cap=2 * x + 2))
    for objective in ("makespan", "lex"):
        r = solve_cpsat(p, objective, time_limit=10, num_workers=1)
        assert validate(p, r).valid and r.info["scaling"]["memory_exact"] is False
        assert r.lower_bound is not None and r.lower_bound <= 1


def test_no_peak_bound_from_rounded_durations_under_a_makespan_limit() -> None:
    # durations rounded up to ticks make the limit tighter in the model: its peak bound 20
    # had been reported where a then b (peak 10) ends exactly by the limit
    da, db = 0.1234567891234, 1 / 3
    g = OpGraph((Op("a", da, output_bytes=10), Op("b", db, output_bytes=10)))
    p = Problem(g, Machine(units=2))
    hand = Schedule.build(p, [0.0, da], [0, 0], solver="hand")
    assert validate(p, hand).valid and hand.peak_memory == 10
    r = solve_cpsat(p, "peak_memory", makespan_limit=da + db, time_limit=10, num_workers=1)
    assert r.info["peak_lower_bound"] <= 10


def test_the_phase_split_keeps_the_makespan_limit() -> None:
    # a capped chain of 20 splits into phases, which had been solved without the limit of
    # 10 and returned OPTIMAL 20
    ops = tuple(Op(f"o{i}", 1.0, deps=(f"o{i - 1}",) if i else (), output_bytes=4)
                for i in range(20))  # fmt: skip
    p = Problem(OpGraph(ops), Machine(units=1, memory_cap=8))
    for split in (True, False):
        r = solve_cpsat(p, "makespan", makespan_limit=10, time_limit=10,
                        params=Params(num_workers=1, split=split))  # fmt: skip
        assert r.status is Status.INFEASIBLE
    assert solve_cpsat(p, "makespan", time_limit=10, num_workers=1).makespan == 20


def test_a_hint_at_the_known_bound_in_deterministic_mode() -> None:
    # on two units under a cap the greedy start ends at the overlap bound (10, the critical
    # path); stopping the interleaved search at that hint's solution aborted the process
    # inside CP-SAT (a failed check in its postsolve), with --deterministic on the CLI too
    g = OpGraph((
        Op("o0", 3, output_bytes=10),
        Op("o1", 1, deps=("o0",), output_bytes=1),
        Op("o2", 2, deps=("o1",), demands={"units": 1, "dma": 1}),
        Op("o3", 4, deps=("o0", "o2"), output_bytes=1, output=True),
        Op("o4", 3, deps=("o0", "o1"), output_bytes=2),
        Op("o5", 3, deps=("o0",), workspace_bytes=1),
    ), persistent_bytes=5, resources={"dma": 2})  # fmt: skip
    p = Problem(g, Machine(units=2, memory_cap=21))
    best = solve_brute_force(p, "makespan")
    for deterministic in (True, False):
        r = solve_cpsat(p, "makespan", time_limit=5, deterministic=deterministic)
        _valid(p, r)
        assert r.status is Status.OPTIMAL and r.makespan == best.makespan == 10.0
        assert r.info["stages"][0]["met_known_bound"] is True


def test_summary_of_a_peak_memory_solve_gives_the_peaks_bound() -> None:
    """The status of a peak-memory solve is the peak's, and lower_bound is the makespan's:
    the summary had read "OPTIMAL, makespan 2, lower bound 1", a makespan seemingly not
    proven. It names the objective and the peak's own bound."""
    g = OpGraph((Op("a", 1, output_bytes=8), Op("b", 1, output_bytes=8)))
    s = solve_cpsat(Problem(g, Machine(units=2)), "peak_memory", time_limit=5)
    assert (s.status, s.peak_memory, s.makespan, s.lower_bound) == (Status.OPTIMAL, 8, 2.0, 1.0)
    text = s.summary()
    assert text.startswith("cpsat on graph: OPTIMAL (peak_memory), peak memory 8B, ")
    assert "least possible >= 8B" in text and "makespan lower bound 1," in text
    assert ", lower bound" not in text
    m = solve_cpsat(Problem(g, Machine(units=2)), "makespan", time_limit=5)
    assert m.summary().startswith("cpsat on graph: OPTIMAL, makespan 1, lower bound 1, peak ")


def test_rounded_sizes_still_optimal_where_the_makespan_meets_a_bound() -> None:
    """Sizes near 2**42 that differ in their last bytes are rounded to quanta, so CP-SAT's
    proof covers the rounded model only and the result was FEASIBLE with gap 0. A makespan
    equal to a lower bound of the problem itself (here the chain's length) is optimal
    whatever the rounding."""
    g = OpGraph(
        (
            Op("v0", 1, output_bytes=4),
            Op("v1", 1, deps=("v0",), output_bytes=6597069766659),
            Op("v2", 1, deps=("v1",), output_bytes=6597069766664),
        ),
        persistent_bytes=4,
    )
    p = Problem(g, Machine(units=1, memory_cap=13194139533327))
    s = solve_cpsat(p, time_limit=5)
    assert not s.info["scaling"]["memory_exact"]
    assert (s.status, s.makespan, s.lower_bound) == (Status.OPTIMAL, 3.0, 3.0)
    assert "optimal" in s.info["note"] and validate(p, s).valid

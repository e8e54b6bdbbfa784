"""Tests of :func:`opsched.heuristics.listsched.list_schedule` (priority x placement)."""

from __future__ import annotations

import dataclasses
import itertools
import random
from typing import Any

import numpy as np
import pytest

from opsched.analysis import critical_path
from opsched.analysis.ranks import PRIORITY_RULES
from opsched.datasets import dataset_path
from opsched.errors import ProblemError
from opsched.heuristics import greedy
from opsched.heuristics.listsched import PLACEMENTS, list_schedule, list_solver_name
from opsched.importers import read_graph
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule, Status
from opsched.solver import solve_brute_force
from opsched.validate import validate
from opsched.zoo.generators import gnp, layered

UNITS = (1, 2, 3, 4, None)


def _vary(g: OpGraph, seed: int, zero: float = 0.15, no_unit: float = 0.1) -> OpGraph:
    """``g`` with some ops of zero duration and some demanding no unit."""
    rng = random.Random(seed)
    ops = []
    for op in g.ops:
        changes: dict[str, Any] = {}
        if rng.random() < zero:
            changes["duration"] = 0.0
        if rng.random() < no_unit:
            changes["demands"] = {"units": 0} if rng.random() < 0.5 else {}
        ops.append(dataclasses.replace(op, **changes) if changes else op)
    return g.replace_ops(ops)


def _graphs() -> list[OpGraph]:
    return [
        layered(30, seed=1),
        gnp(25, 0.15, seed=2, memory=True),
        _vary(layered(28, seed=3), 3),
        _vary(gnp(30, 0.1, seed=4), 4, zero=0.3, no_unit=0.2),
    ]


GRAPHS = _graphs()


def _holds_unit(g: OpGraph) -> np.ndarray:
    return (g.demand_array("units") == 1) & (g.durations > 0)


def assert_non_delay(problem: Problem, s: Schedule) -> None:
    """No unit idles while an op whose predecessors are all done waits for one.

    The state only changes at starts and ends, so checking at each of those moments covers
    every moment. Ops that hold no unit (zero duration or no unit demand) must start exactly
    when their last predecessor ends.
    """
    g = problem.graph
    start = np.array([o.start for o in s.ops])
    end = start + g.durations
    ready = np.zeros(g.num_ops)
    for v in range(g.num_ops):
        preds = g.pred_idx[g.pred_ptr[v] : g.pred_ptr[v + 1]]
        ready[v] = end[preds].max() if len(preds) else 0.0
    holds = _holds_unit(g)
    k = problem.machine.units
    assert np.allclose(start[~holds], ready[~holds]), "an op without a unit was delayed"
    if k is None:
        assert np.allclose(start, ready)
        return
    for t in np.unique(np.concatenate([start, end])):
        busy = int(np.sum(holds & (start <= t) & (end > t)))
        waiting = holds & (ready <= t) & (start > t)
        assert busy <= k
        if waiting.any():
            who = g.names[int(np.flatnonzero(waiting)[0])]
            assert busy == k, f"t={t}: {busy}/{k} units busy while {who} waits"


# ----------------------------------------------------------------------------- grid


@pytest.mark.parametrize("gi", range(len(GRAPHS)))
def test_every_priority_and_placement_is_valid(gi: int) -> None:
    g = GRAPHS[gi]
    for k in UNITS:
        p = Problem(g, Machine(units=k))
        for rule in PRIORITY_RULES:
            for placement in PLACEMENTS:
                s = list_schedule(p, rule, placement, seed=gi)
                rep = validate(p, s)
                assert s.status == Status.FEASIBLE, (k, rule, placement)
                assert rep.valid, (k, rule, placement, rep.summary())
                assert s.makespan == pytest.approx(rep.makespan)
                assert s.lower_bound is not None and s.makespan is not None
                assert s.makespan >= s.lower_bound - 1e-9
                assert s.solver == list_solver_name(rule, placement)
                assert s.wall_time_s is not None and s.wall_time_s >= 0


@pytest.mark.parametrize("gi", range(len(GRAPHS)))
def test_earliest_is_non_delay(gi: int) -> None:
    g = GRAPHS[gi]
    for k in UNITS:
        p = Problem(g, Machine(units=k))
        for rule in PRIORITY_RULES:
            assert_non_delay(p, list_schedule(p, rule, "earliest", seed=3))


def test_non_delay_checker_catches_a_delay() -> None:
    g = OpGraph((Op("a", 2), Op("b", 1)))
    p = Problem(g, Machine(units=2))
    delayed = Schedule.build(p, [0.0, 1.0], [0, 1], solver="hand")
    with pytest.raises(AssertionError, match="waits"):
        assert_non_delay(p, delayed)


@pytest.mark.parametrize("seed", range(8))
def test_earliest_b_level_equals_greedy_b_level(seed: int) -> None:
    g = layered(40, seed=seed) if seed % 2 else gnp(40, 0.08, seed=seed)
    for k in UNITS:
        p = Problem(g, Machine(units=k))
        s = list_schedule(p)
        ref = greedy(p, "b-level")
        assert s.solver == "list"
        assert [o.start for o in s.ops] == [o.start for o in ref.ops]
        assert s.makespan == ref.makespan


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_one_unit_makespan_is_total_work(placement: str) -> None:
    # every op holds the unit (zero-duration ones included): one after another, no idling
    for g in [*GRAPHS[:2], _vary(layered(30, seed=9), 9, zero=0.3, no_unit=0.0)]:
        p = Problem(g, Machine(units=1))
        for rule in PRIORITY_RULES:
            assert list_schedule(p, rule, placement).makespan == pytest.approx(g.work)


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_unlimited_units_makespan_is_critical_path(placement: str) -> None:
    for g in GRAPHS:
        p = Problem(g, Machine(units=None))
        for rule in PRIORITY_RULES:
            s = list_schedule(p, rule, placement)
            assert s.makespan == pytest.approx(critical_path(g).length)


# ----------------------------------------------------------------------------- insertion


def test_insertion_fills_a_gap_by_hand() -> None:
    # Priorities b > a > c > e; placement order b, a, c, e (c becomes placeable once a is).
    #   b [1] -> unit 0 at 0;  a [4] -> unit 1 at 0 (unit 0 would only be free at 1)
    #   c [1] (after a) is ready at 4: unit 0 (idle 1..4) and unit 1 both give 4; lowest unit
    #     wins, so c runs on unit 0 at 4 and leaves the gap [1, 4) there
    #   e [2] is placed last but goes into that gap at 1, before c on the same unit.
    # Appending e instead would start it at 4 on unit 1: makespan 6 instead of 5.
    g = OpGraph((Op("a", 4), Op("b", 1), Op("c", 1, deps=("a",)), Op("e", 2)))
    p = Problem(g, Machine(units=2))
    s = list_schedule(p, [9.0, 10.0, 8.0, 1.0], "insertion")
    got = {o.name: (o.start, o.unit) for o in s.ops}
    assert got == {"a": (0.0, 1), "b": (0.0, 0), "c": (4.0, 0), "e": (1.0, 0)}
    assert s.makespan == 5.0 and validate(p, s).valid
    assert s.solver == "list-custom-insertion"


def _assert_no_unit_overlap(s: Schedule) -> None:
    by_unit: dict[int, list[tuple[float, float]]] = {}
    for o in s.ops:
        if o.unit is not None and o.end > o.start:
            by_unit.setdefault(o.unit, []).append((o.start, o.end))
    for iv in by_unit.values():
        iv.sort()
        for (_, e1), (s2, _) in itertools.pairwise(iv):
            assert s2 >= e1 - 1e-9


@pytest.mark.parametrize("seed", range(10))
def test_insertion_never_overlaps_on_a_unit(seed: int) -> None:
    g = _vary(layered(45, seed=seed, max_deps=2), seed, zero=0.1, no_unit=0.05)
    for k in (1, 2, 3, 4):
        p = Problem(g, Machine(units=k))
        for rule in ("heft", "random", "lpt"):
            s = list_schedule(p, rule, "insertion", seed=seed)
            _assert_no_unit_overlap(s)
            assert validate(p, s).valid


# ----------------------------------------------------------------------------- memory


def _dead_end_graph() -> OpGraph:
    # a's tensor lives until d ends, and d comes after c, which reads b's tensor: whatever the
    # order, a (10) and b (10) are live together while c runs, 20 B in all. No single op
    # needs more than 12 B (c: inputs 10 + 1, output 1), so the simple bound lets cap 15 pass.
    return OpGraph(
        (
            Op("a", 1, output_bytes=10),
            Op("b", 1, output_bytes=10),
            Op("e", 1, deps=("a",), output_bytes=1),
            Op("c", 1, deps=("b", "e"), output_bytes=1),
            Op("d", 1, deps=("a", "c"), output_bytes=1),
        )
    )


def test_memory_dead_end_is_reported() -> None:
    p = Problem(_dead_end_graph(), Machine(units=2, memory_cap=15))
    assert p.infeasibility_reason() is None
    assert solve_brute_force(p).status == Status.INFEASIBLE  # truly no schedule fits
    for rule in PRIORITY_RULES:
        s = list_schedule(p, rule, "memory")
        assert s.status == Status.UNKNOWN and not s.has_schedule
        assert "memory" in s.info["reason"]
        # earliest under a cap is the memory placement
        assert list_schedule(p, rule, "earliest").status == Status.UNKNOWN


def test_insertion_over_the_cap_falls_back_with_a_note() -> None:
    # Insertion runs a and b side by side: 20 B. With cap 10, a -> c must finish first.
    g = OpGraph(
        (
            Op("a", 1, output_bytes=10),
            Op("b", 1, output_bytes=10),
            Op("c", 1, deps=("a",)),
            Op("d", 1, deps=("b",)),
        )
    )
    free = list_schedule(Problem(g, Machine(units=2)), "b-level", "insertion")
    assert free.peak_memory == 20 and free.makespan == 2
    p = Problem(g, Machine(units=2, memory_cap=10))
    s = list_schedule(p, "b-level", "insertion")
    assert "insertion" in s.info["fallback"] and "cap" in s.info["fallback"]
    assert s.status == Status.FEASIBLE and validate(p, s).valid
    assert s.peak_memory == 10 and s.makespan == 4


def test_memory_placement_never_exceeds_the_cap() -> None:
    below = dead = 0
    for seed in range(6):
        g = layered(24, seed=seed)
        base = list_schedule(Problem(g, Machine(units=2)))
        assert base.peak_memory is not None
        for frac in (1.0, 0.9, 0.8, 0.7):
            cap = int(base.peak_memory * frac)
            p = Problem(g, Machine(units=2, memory_cap=cap))
            for rule in ("b-level", "t-level", "successors", "random"):
                for placement in PLACEMENTS:
                    s = list_schedule(p, rule, placement, seed=seed)
                    if s.status == Status.UNKNOWN:
                        assert not s.has_schedule and "memory" in s.info["reason"]
                        dead += 1
                        continue
                    rep = validate(p, s)
                    assert rep.valid, rep.summary()
                    assert s.peak_memory is not None and s.peak_memory <= cap
                    below += s.peak_memory < base.peak_memory
    # the cap bound on runs that still found a schedule, and others hit dead ends
    assert below > 10 and dead > 10


# ----------------------------------------------------------------------------- resources


@pytest.mark.parametrize("name", ["j301_1", "j3010_2", "j3020_5"])
def test_other_resources_use_the_general_engine(name: str) -> None:
    g = read_graph(dataset_path(f"psplib/j30/{name}.sm"))
    assert g.resources  # R1..R4
    p = Problem(g, Machine(units=None))
    for rule in PRIORITY_RULES:
        for placement in PLACEMENTS:
            s = list_schedule(p, rule, placement, seed=1)
            rep = validate(p, s)
            assert rep.valid, (rule, placement, rep.summary())
            if placement == "insertion":  # the serial scheme, no fallback
                assert "fallback" not in s.info
    # the general engine and greedy agree on the b-level rule
    ref = greedy(p, "b-level")
    assert [o.start for o in list_schedule(p).ops] == [o.start for o in ref.ops]


def test_insertion_beside_resources_under_a_cap_falls_back_to_non_delay() -> None:
    g = OpGraph(
        (Op("a", 2, output_bytes=4, demands={"units": 2}), Op("b", 1, deps=("a",))),
    )
    p = Problem(g, Machine(units=2, memory_cap=10))
    s = list_schedule(p, "b-level", "insertion")
    assert validate(p, s).valid and s.makespan == 3.0
    assert "takes no memory cap" in s.info["fallback"]


def test_multi_unit_demands_use_the_general_engine() -> None:
    g = OpGraph((Op("a", 2, demands={"units": 2}), Op("b", 1), Op("c", 1, deps=("a", "b"))))
    p = Problem(g, Machine(units=2))
    for placement in PLACEMENTS:
        s = list_schedule(p, "b-level", placement)
        assert validate(p, s).valid and s.makespan == 4.0


def test_infeasible_demand_is_unknown_with_reason() -> None:
    g = OpGraph((Op("a", 2, demands={"units": 3}),))
    s = list_schedule(Problem(g, Machine(units=2)))
    assert s.status == Status.UNKNOWN and "units" in s.info["reason"]


# ----------------------------------------------------------------------------- Graham


def _tiny(seed: int) -> OpGraph:
    r = random.Random(seed)
    n = r.randint(3, 7)
    ops = []
    for i in range(n):
        deps = sorted(r.sample(range(i), r.randint(0, min(i, 2)))) if i else []
        ops.append(Op(f"o{i}", float(r.randint(0 if i % 4 == 3 else 1, 6)),
                      deps=tuple(f"o{j}" for j in deps)))  # fmt: skip
    return OpGraph(tuple(ops))


def test_graham_bound_against_brute_force() -> None:
    worst = 0.0
    for seed in range(40):
        g = _tiny(seed)
        for k in (2, 3):
            p = Problem(g, Machine(units=k))
            opt = solve_brute_force(p)
            assert opt.status == Status.OPTIMAL and opt.makespan is not None
            for rule in PRIORITY_RULES:
                s = list_schedule(p, rule, "earliest", seed=seed)
                assert s.makespan is not None
                assert s.makespan >= opt.makespan - 1e-9
                assert s.makespan <= (2 - 1 / k) * opt.makespan + 1e-9
                if opt.makespan > 0:
                    worst = max(worst, s.makespan / opt.makespan)
    assert worst > 1.0  # some list schedule was not optimal: the bound was exercised


def test_graham_bound_is_nearly_tight_on_the_classic_instance() -> None:
    # k = 2: two unit ops first (file order), then one op of length 2: list gives 3, opt 2
    g = OpGraph((Op("x", 1), Op("y", 1), Op("z", 2)))
    p = Problem(g, Machine(units=2))
    s = list_schedule(p, [1.0, 1.0, 1.0])
    assert s.makespan == 3.0 == (2 - 1 / 2) * (solve_brute_force(p).makespan or 0.0)


# ----------------------------------------------------------------------------- errors


def test_custom_priority_and_errors() -> None:
    g = OpGraph((Op("a", 1), Op("b", 2), Op("c", 1, deps=("a",))))
    p = Problem(g, Machine(units=1))
    s = list_schedule(p, np.array([0.0, 1.0, 2.0]))
    assert [o.start for o in s.ops] == [2.0, 0.0, 3.0]  # b first, then a, then c
    with pytest.raises(ProblemError, match="3 finite"):
        list_schedule(p, [1.0, 2.0])
    with pytest.raises(ProblemError, match="3 finite"):
        list_schedule(p, [1.0, float("nan"), 2.0])
    with pytest.raises(ProblemError, match="known: earliest, insertion, memory"):
        list_schedule(p, "b-level", "sideways")
    with pytest.raises(ProblemError, match="b-level"):
        list_schedule(p, "slowest")


def test_solver_names() -> None:
    assert list_solver_name("b-level", "earliest") == "list"
    assert list_solver_name("critical-path", "earliest") == "list"
    assert list_solver_name("heft", "insertion") == "heft"
    assert list_solver_name("b-level", "memory") == "list-memory"
    assert list_solver_name("lpt", "insertion") == "list-lpt-insertion"


@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("placement", ["earliest", "insertion", "memory"])
def test_huge_unit_counts_give_the_schedule_of_as_many_units_as_ops(
    placement: str, big: bool
) -> None:
    # the kernels sized their unit arrays by the machine (2^31 units: a 16 GiB allocation;
    # 10^30: past NumPy's largest dimension) and HEFT walked every unit for every op
    g = layered(120, seed=3) if big else OpGraph((Op("a", 1), Op("b", 2)))  # compiled / not
    n = g.num_ops
    for units in (2**31, 10**30):
        p = Problem(g, Machine(units=units))
        s = list_schedule(p, "b-level", placement)
        assert s.status is Status.FEASIBLE and s.machine["units"] == units
        assert validate(p, s).valid
        same = list_schedule(Problem(g, Machine(units=n)), "b-level", placement)
        assert [(o.start, o.unit) for o in s.ops] == [(o.start, o.unit) for o in same.ops]
        assert s.lower_bound == same.lower_bound

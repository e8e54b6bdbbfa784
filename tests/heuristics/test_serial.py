"""The serial scheme under cumulative resources (:mod:`opsched.heuristics._serial`): list
scheduling with insertion and forward-backward passes where ops demand several units or
named resources."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from opsched._jit import plain
from opsched.analysis.ranks import priority
from opsched.datasets import dataset_path, psplib_optima
from opsched.heuristics import greedy
from opsched.heuristics._resources import resource_arrays
from opsched.heuristics._serial import (
    justify_serial,
    serial_place,
    serial_schedule,
)
from opsched.heuristics.improve import justify
from opsched.heuristics.listsched import list_schedule
from opsched.importers import read_graph
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule, Status
from opsched.solver import solve_brute_force
from opsched.validate import validate


def _random_problem(rng: random.Random, n: int) -> Problem:
    """Ops of 0-2 units (a pool of 1-3) and 0-2 of a resource ``dma`` (capacity 2),
    durations with zeros and halves, sparse random edges."""
    k = rng.randint(1, 3)
    ops = []
    for i in range(n):
        deps = tuple(f"o{j}" for j in range(i) if rng.random() < 0.25)
        demands = {"units": rng.choice([0, 1, 1, min(2, k)])}
        if rng.random() < 0.6:
            demands["dma"] = rng.randint(0, 2)
        ops.append(Op(f"o{i}", rng.choice([0, 0.5, 1, 2, 3]), deps=deps, demands=demands))
    g = OpGraph(tuple(ops), resources={"dma": 2})
    return Problem(g, Machine(units=k if rng.random() < 0.8 else None))


def _activity_lists(g: OpGraph) -> list[list[int]]:
    """Every order of the ops that lists each after its predecessors."""
    preds = [{g.index(d) for d in op.deps} for op in g.ops]
    return [
        list(p)
        for p in itertools.permutations(range(g.num_ops))
        if all(preds[v] <= set(p[:i]) for i, v in enumerate(p))
    ]


def test_a_hand_worked_insertion() -> None:
    """One resource of capacity 2. ``big`` (2 of it, 2 long) goes first; ``a`` (1, after
    nothing) would start at 0 beside nothing, but ``big`` holds the whole resource over
    [0, 2): ``a`` starts at 2. ``b`` (1 of it, 1 long, after ``a``) starts at 3. Listed
    after them, ``c`` (1 of it, 1 long) fits the gap beside ``a`` at 2, not after ``b``."""
    g = OpGraph(
        (
            Op("big", 2, demands={"r": 2}),
            Op("a", 1, demands={"r": 1}),
            Op("b", 1, deps=("a",), demands={"r": 2}),
            Op("c", 1, demands={"r": 1}),
        ),
        resources={"r": 2},
    )
    p = Problem(g, Machine(units=None))
    dem, cap = resource_arrays(p)
    assert cap.tolist() == [2] and dem[:, 0].tolist() == [2, 1, 2, 1]
    order = np.array([0, 1, 2, 3])
    starts = plain(serial_place)(g.durations, dem, cap, order, g.pred_ptr, g.pred_idx)
    assert starts.tolist() == [0.0, 2.0, 3.0, 2.0]
    s = Schedule.build(p, starts, solver="serial")
    assert validate(p, s).valid and s.makespan == 4.0


@pytest.mark.parametrize("seed", range(4))
def test_schedules_are_valid_and_compiled_equals_plain(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(60):
        p = _random_problem(rng, rng.randint(1, 40))
        if p.infeasibility_reason() is not None:
            continue
        g = p.graph
        dem, cap = resource_arrays(p)
        prio = priority(g, "random", seed=rng.randint(0, 99))
        starts, units = serial_schedule(p, prio)
        s = Schedule.build(p, starts, units, solver="serial")
        rep = validate(p, s)
        assert rep.valid, (rep.summary(), g.to_dict())
        order = np.lexsort((np.arange(g.num_ops), starts))  # any list: the same both ways
        args = (g.durations, dem, cap, order, g.pred_ptr, g.pred_idx)
        assert np.array_equal(serial_place(*args), plain(serial_place)(*args))


@pytest.mark.parametrize("seed", range(3))
def test_some_activity_list_reaches_the_optimum(seed: int) -> None:
    """Serial generation reaches every active schedule, an optimal one among them: the best
    over all activity lists equals the brute force's optimum (tiny problems, every list)."""
    rng = random.Random(100 + seed)
    checked = 0
    while checked < 25:
        p = _random_problem(rng, rng.randint(2, 6))
        if p.infeasibility_reason() is not None:
            continue
        g = p.graph
        dem, cap = resource_arrays(p)
        run = plain(serial_place)
        best = min(
            float((run(g.durations, dem, cap, np.array(o), g.pred_ptr, g.pred_idx)
                   + g.durations).max())
            for o in _activity_lists(g)
        )  # fmt: skip
        opt = solve_brute_force(p, "makespan")
        assert opt.status is Status.OPTIMAL
        assert best == opt.makespan, g.to_dict()
        checked += 1


@pytest.mark.parametrize("seed", range(3))
def test_justification_never_lengthens_and_stays_valid(seed: int) -> None:
    rng = random.Random(200 + seed)
    improved = 0
    for _ in range(80):
        p = _random_problem(rng, rng.randint(5, 40))
        if p.infeasibility_reason() is not None:
            continue
        base = greedy(p, "b-level")
        starts = np.array([o.start for o in base.ops])
        new, units, _ = justify_serial(p, starts)
        s = Schedule.build(p, new, units, solver="fbi")
        assert validate(p, s).valid
        assert base.makespan is not None and s.makespan <= base.makespan + 1e-9
        improved += s.makespan < base.makespan - 1e-9
        j = justify(p, base)
        assert validate(p, j).valid and j.makespan == min(s.makespan, base.makespan)
    assert improved >= 5


def test_units_are_coloured_within_the_pool() -> None:
    g = OpGraph(
        (
            Op("w", 2, demands={"units": 2}),
            Op("a", 1),
            Op("b", 1),
            Op("c", 1, deps=("w",)),
            Op("z", 0, deps=("a",)),
        )
    )
    p = Problem(g, Machine(units=2))
    starts, units = serial_schedule(p, priority(g, "b-level"))
    # w (b-level 3) holds both units over [0, 2); a and b take them over [2, 3), then c
    assert starts.tolist() == [0.0, 2.0, 2.0, 3.0, 3.0]
    assert sorted(units[[1, 2]].tolist()) == [0, 1] and units[3] == 0 and units[0] == -1
    assert units[4] == 0  # a zero-time op holds none; it still names one
    assert validate(p, Schedule.build(p, starts, units, solver="serial")).valid


def test_psplib_insertion_is_serial_and_justification_gains() -> None:
    """On the first 40 J30 instances the justified non-delay schedule is never longer and
    closer to the published optima on average; insertion runs the serial scheme."""
    optima = psplib_optima()
    names = sorted(optima)[:40]
    gaps_before, gaps_after = [], []
    for name in names:
        g = read_graph(dataset_path(f"psplib/j30/{name}.sm"))
        p = Problem(g, Machine(units=None))
        base = greedy(p, "b-level")
        j = justify(p, base)
        assert validate(p, j).valid
        assert j.makespan is not None and base.makespan is not None
        assert optima[name] <= j.makespan <= base.makespan
        gaps_before.append(base.makespan / optima[name] - 1)
        gaps_after.append(j.makespan / optima[name] - 1)
        ins = list_schedule(p, "b-level", "insertion")
        assert "fallback" not in ins.info and validate(p, ins).valid
    assert np.mean(gaps_after) < 0.7 * np.mean(gaps_before)


def test_passes_keep_dependencies_when_times_overlap_by_a_rounding_error() -> None:
    """A schedule the validator accepts, with ``b`` starting a rounding error before its
    zero-time predecessor ``z``: listed by start alone, ``b`` came before ``z`` and was
    placed as if ``z`` had ended at 0."""
    g = OpGraph(
        (
            Op("a", 1, demands={"r": 1}),
            Op("z", 0, deps=("a",), demands={"r": 1}),
            Op("b", 1, deps=("z",), demands={"s": 1}),
            Op("c", 1, demands={"r": 1}),
        ),
        resources={"r": 1, "s": 1},
    )
    p = Problem(g, Machine(units=None))
    s = Schedule.build(p, [0.0, 1.0, 1.0 - 1e-12, 2.0], solver="hand")
    assert validate(p, s).valid
    new, _, _ = justify_serial(p, np.array([0.0, 1.0, 1.0 - 1e-12, 2.0]))
    assert new.tolist() == [0.0, 1.0, 1.0, 1.0]  # c moves into the gap after a
    assert validate(p, Schedule.build(p, new, solver="fbi")).valid

"""Planted-optimum graphs: the planted schedule is valid and optimal (CP-SAT proves it)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from opsched.errors import ProblemError
from opsched.heuristics import greedy
from opsched.schedule import Status
from opsched.solver import solve_cpsat
from opsched.validate import validate
from opsched.zoo.planted import planted


@pytest.mark.parametrize(
    ("n", "k", "memory"),
    [(1, 1, False), (3, 3, False), (10, 2, True), (57, 4, True), (300, 7, True), (500, 16, False)],
)
def test_planted_schedule_is_valid_zero_idle_and_respects_every_edge(
    n: int, k: int, memory: bool
) -> None:
    inst = planted(n, k, memory=memory, avg_deps=3.0, seed=n)
    g, s = inst.graph, inst.schedule
    assert g.num_ops == n
    report = validate(inst.problem, s)
    assert report.valid, report.summary()
    assert s.makespan == inst.makespan == g.work / k  # zero idle on every unit
    busy = np.bincount(inst.assignment, weights=g.durations, minlength=k)
    assert busy.tolist() == [inst.makespan] * k
    ends = inst.starts + g.durations
    for j, op in enumerate(g.ops):
        for d in op.deps:
            assert ends[g.index(d)] <= inst.starts[j]
    assert all(d >= 1 and d == int(d) for d in g.durations)
    if memory:
        assert inst.memory_cap == s.peak_memory == report.peak_memory
        assert g.attrs["planted"]["memory_cap"] == inst.memory_cap


def test_edges_exist_and_are_local() -> None:
    inst = planted(2000, 4, avg_deps=2.0, seed=3)
    g = inst.graph
    assert 1.5 * 2000 < g.num_edges <= 2.0 * 2000  # Poisson(2) draws, a few collapse
    # most predecessors ended shortly before the consumer started
    gaps = [
        inst.starts[j] - (inst.starts[g.index(d)] + g.durations[g.index(d)])
        for j, op in enumerate(g.ops)
        for d in op.deps
    ]
    assert np.median(gaps) <= 5


@pytest.mark.parametrize(("n", "k", "seed"), [(8, 2, 0), (12, 3, 1), (14, 2, 2), (16, 4, 3)])
def test_cpsat_proves_the_planted_optimum(n: int, k: int, seed: int) -> None:
    inst = planted(n, k, avg_deps=2.5, max_duration=6, seed=seed)
    res = solve_cpsat(inst.problem, time_limit=20, deterministic=True)
    assert res.status == Status.OPTIMAL
    assert res.makespan == inst.makespan


@pytest.mark.parametrize("seed", [0, 1])
def test_cpsat_proves_the_planted_optimum_under_the_memory_cap(seed: int) -> None:
    inst = planted(12, 3, memory=True, max_duration=6, seed=seed)
    assert inst.memory_cap is not None
    res = solve_cpsat(inst.problem, time_limit=20, deterministic=True)
    assert res.status == Status.OPTIMAL and res.makespan == inst.makespan
    assert res.peak_memory is not None and res.peak_memory <= inst.memory_cap


def test_greedy_never_beats_the_planted_optimum() -> None:
    for seed in range(5):
        inst = planted(200, 4, memory=True, seed=seed)
        s = greedy(inst.problem, priority="b-level")
        if s.has_schedule:
            assert s.makespan >= inst.makespan
            assert validate(inst.problem, s).valid


def test_no_cap_and_unit_durations() -> None:
    inst = planted(12, 4, memory=True, cap=False, max_duration=1)
    assert inst.memory_cap is None and inst.problem.machine.memory_cap is None
    assert inst.makespan == 3 and set(inst.graph.durations.tolist()) == {1.0}


def test_seeds_reproduce() -> None:
    a, b = planted(100, 3, memory=True, seed=9), planted(100, 3, memory=True, seed=9)
    assert a.graph.to_dict() == b.graph.to_dict() and a.schedule.to_dict() == b.schedule.to_dict()
    assert planted(100, 3, seed=10).graph.to_dict() != a.graph.to_dict()


@pytest.mark.parametrize(
    "kw",
    [
        {"ops": 2, "units": 3},
        {"ops": 0, "units": 1},
        {"ops": 5, "units": 0},
        {"ops": 5, "units": 2, "avg_deps": -1.0},
        {"ops": 5, "units": 2, "locality": 0.0},
        {"ops": 5, "units": 2, "max_duration": 0},
    ],
)
def test_bad_arguments(kw: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(ProblemError):
        planted(**kw)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"avg_deps": "2"}, "avg_deps must be a number >= 0, got '2'"),
        ({"avg_deps": None}, "avg_deps must be a number >= 0, got None"),
        ({"locality": "near"}, "locality must be a number > 0, got 'near'"),
    ],
)
def test_wrong_typed_arguments_are_named(kw: dict, message: str) -> None:  # type: ignore[type-arg]
    # these had reached np.isfinite and failed there with a TypeError naming nothing
    with pytest.raises(ProblemError, match=re.escape(message)):
        planted(10, 2, **kw)

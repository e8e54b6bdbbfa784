"""Start times read back from ticks are exact in floating point: a schedule the solver found
within a memory cap in ticks is within it in real time (decimal durations such as 0.1 and 0.2
used to end one ulp after their successors started)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import opsched
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Status
from opsched.solver import pareto_front
from opsched.solver.settle import settle_starts


def _chain() -> Problem:
    # 0.1 + 0.2 = 0.30000000000000004: c, read back at tick 3 as 0.3, started while a's
    # tensor (released when b ends) was still live, 12 B against the 8 B cap
    g = OpGraph(
        (
            Op("a", 0.1, output_bytes=4),
            Op("b", 0.2, deps=("a",), output_bytes=4),
            Op("c", 0.1, deps=("b",), output_bytes=4),
        ),
        name="g",
    )
    return Problem(g, Machine(units=1, memory_cap=8))


@pytest.mark.parametrize("name", ["cpsat", "downsets", "brute-force"])
def test_decimal_durations_keep_the_cap(name: str) -> None:
    p = _chain()
    s = opsched.registry.run(name, p)
    assert s.status == Status.OPTIMAL
    assert s.peak_memory == 8
    assert opsched.validate(p, s).valid
    assert s.makespan == pytest.approx(0.4)


def test_the_pareto_front_keeps_the_cap() -> None:
    front = pareto_front(_chain(), point_time_limit=5)
    assert [(round(pt.makespan, 9), pt.peak_memory) for pt in front.points] == [(0.4, 8)]
    assert all(opsched.validate(_chain(), pt.schedule).valid for pt in front.points)


def test_random_decimal_graphs_solve_to_valid_schedules() -> None:
    rng = random.Random(7)
    for _ in range(25):
        n = rng.randint(3, 9)
        ops = tuple(
            Op(f"o{i}", rng.choice([0.1, 0.2, 0.3, 0.7, 1.1]),
               deps=tuple(f"o{j}" for j in range(i) if rng.random() < 0.3),
               output_bytes=rng.choice([0, 1, 2, 3, 5, 8]),
               workspace_bytes=rng.choice([0, 0, 1, 2]))
            for i in range(n)
        )  # fmt: skip
        g = OpGraph(ops, name="g")
        least = opsched.registry.run("min-memory", Problem(g, Machine(units=1))).peak_memory
        p = Problem(g, Machine(units=rng.randint(1, 3), memory_cap=least))
        for name in ("cpsat", "downsets"):
            s = opsched.registry.run(name, p)
            assert s.status == Status.OPTIMAL, (name, s.info)
            report = opsched.validate(p, s)
            assert report.valid, (name, report.summary())


def test_settle_moves_starts_by_rounding_noise_only() -> None:
    s = settle_starts([0.0, 0.1, 0.3, 0.3, 0.3], [0.1, 0.2, 0.0, 0.0, 0.1])
    assert s[2] == s[3] == 0.1 + 0.2  # zero-duration ops of one instant start together
    assert s[4] >= s[2]
    assert np.max(np.abs(s - [0.0, 0.1, 0.3, 0.3, 0.3])) < 1e-15


def test_settle_leaves_whole_numbers_and_overlaps_alone() -> None:
    starts, dur = [0.0, 1.0, 2.0, 2.0], [2.0, 2.0, 0.0, 3.0]
    assert settle_starts(starts, dur).tolist() == starts  # b overlaps a: still does
    assert settle_starts([], []).tolist() == []


def test_sizes_rounded_cost_no_proof_where_memory_plays_no_part() -> None:
    # tensors of 2^41 B and more are rounded to quanta; with no cap and the makespan
    # objective memory does not enter the model, so the proof stands (it was FEASIBLE)
    big = 2**41
    g = OpGraph(
        (
            Op("a", 2, output_bytes=big + 1),
            Op("b", 3, deps=("a",), output_bytes=3 * big + 7),
            Op("c", 1, deps=("a",), output_bytes=big),
        ),
        name="big",
    )
    s = opsched.solve_cpsat(Problem(g, Machine(units=2)))
    assert s.status == Status.OPTIMAL and s.makespan == 5
    assert "note" not in s.info
    capped = opsched.solve_cpsat(Problem(g, Machine(units=2, memory_cap=10 * big)))
    # rounded sizes under a cap: CP-SAT's proof is the rounded model's, but the makespan
    # meets the chain a -> b (5), a bound of the problem itself
    assert capped.status == Status.OPTIMAL and capped.makespan == 5
    assert "meets the problem's lower bound" in capped.info["note"]
    assert opsched.validate(Problem(g, Machine(units=2, memory_cap=10 * big)), capped).valid

"""Tests of the step model, order checks and serial schedules of the memory orders."""

from __future__ import annotations

import random

import numpy as np
import pytest

from opsched.errors import ProblemError
from opsched.heuristics.memory import (
    check_order,
    file_order,
    order_peak,
    order_schedule,
    step_memory,
)
from opsched.ir import Op, OpGraph
from opsched.liveness import peak_memory
from opsched.problem import Machine, Problem
from opsched.schedule import Status
from opsched.validate import validate

from .helpers import random_graph, serial_starts, topological_orders


def test_step_memory_hand_worked() -> None:
    # a (4 B) feeds b and c; b (2 B, workspace 3) feeds d; c (1 B) is a graph output with no
    # consumer (held to the end); d (5 B) has no consumer and is not an output.
    g = OpGraph(
        (
            Op("a", 1, output_bytes=4),
            Op("b", 1, deps=("a",), output_bytes=2, workspace_bytes=3),
            Op("c", 1, deps=("a",), output_bytes=1, output=True),
            Op("d", 1, deps=("b",), output_bytes=5),
        ),
        persistent_bytes=10,
    )
    # a: 10+4; b: 10+4+2+3; c: 10+4+2+1 (a freed after c); d: 10+2+1+5
    assert step_memory(g, [0, 1, 2, 3]).tolist() == [14, 19, 17, 18]
    assert order_peak(g, [0, 1, 2, 3]) == 19
    # c first: a: 14; c: 15; b: 10+4+1+2+3 = 20 (a freed after b); d: 10+1+2+5 = 18
    assert step_memory(g, [0, 2, 1, 3]).tolist() == [14, 15, 20, 18]


def test_zero_duration_ops_have_no_step() -> None:
    # z takes no time: its 100 B input is freed when it ends, at once; its own output lives
    # until its consumer ends.
    g = OpGraph(
        (
            Op("a", 1, output_bytes=100),
            Op("z", 0, deps=("a",), output_bytes=7, workspace_bytes=50),
            Op("b", 1, deps=("z",), output_bytes=1),
        )
    )
    assert order_peak(g, [0, 1, 2]) == 100  # a's step; z's workspace never exists
    starts = serial_starts(g, [0, 1, 2])
    assert peak_memory(g, starts) == 100


def test_only_zero_duration_ops_peak_is_persistent() -> None:
    g = OpGraph((Op("a", 0, output_bytes=9), Op("b", 0, deps=("a",))), persistent_bytes=3)
    assert order_peak(g, [0, 1]) == 3 == peak_memory(g, serial_starts(g, [0, 1]))


def test_order_peak_matches_liveness_and_validator_on_random_graphs() -> None:
    rng = random.Random(7)
    for _ in range(150):
        g = random_graph(rng, rng.randint(1, 9))
        orders = topological_orders(g)
        for order in rng.sample(orders, min(5, len(orders))):
            starts = serial_starts(g, order)
            assert order_peak(g, order) == peak_memory(g, starts)
            problem = Problem(g, Machine(units=1))
            s = order_schedule(problem, order, solver="t", t0=0.0)
            report = validate(problem, s)
            assert report.valid, report.summary()
            assert s.peak_memory == order_peak(g, order)


def test_check_order_rejects_bad_orders() -> None:
    g = OpGraph((Op("a", 1), Op("b", 1, deps=("a",)), Op("c", 1)))
    assert check_order(g, [0, 2, 1]).tolist() == [0, 2, 1]
    with pytest.raises(ProblemError, match=r"'b'.*before its dependency 'a'"):
        check_order(g, [1, 0, 2])
    with pytest.raises(ProblemError, match="each of the 3 ops once"):
        check_order(g, [0, 1])
    with pytest.raises(ProblemError, match="every op once"):
        check_order(g, [0, 1, 1])


def test_file_order_is_the_file_order_when_topological() -> None:
    g = OpGraph((Op("a", 1), Op("c", 1, deps=("a",)), Op("b", 1)))
    assert file_order(g).tolist() == [0, 1, 2]  # Kahn's FIFO would give a, b, c


def test_order_schedule_is_serial_on_unit_zero() -> None:
    g = OpGraph(
        (
            Op("a", 2, output_bytes=8),
            Op("b", 3, deps=("a",), demands={}),  # needs no unit: no unit index
            Op("c", 1, deps=("a",)),
        )
    )
    problem = Problem(g, Machine(units=2))
    s = order_schedule(problem, [0, 2, 1], solver="t", t0=0.0)
    assert s.status is Status.FEASIBLE
    assert [(o.name, o.start, o.end, o.unit) for o in s.ops] == [
        ("a", 0.0, 2.0, 0),
        ("b", 3.0, 6.0, None),
        ("c", 2.0, 3.0, 0),
    ]
    assert validate(problem, s).valid


def test_order_schedule_over_the_cap_is_unknown() -> None:
    # the order peaks at 9 B but the unavoidable minimum is 5 B: cap 8 is not proven infeasible
    g = OpGraph(
        (
            Op("a", 1, output_bytes=4),
            Op("b", 1, output_bytes=4),
            Op("c", 1, deps=("a",), output_bytes=1),
            Op("d", 1, deps=("b", "c")),
        )
    )
    problem = Problem(g, Machine(units=1, memory_cap=8))
    s = order_schedule(problem, [0, 1, 2, 3], solver="t", t0=0.0)
    assert s.status is Status.UNKNOWN and not s.has_schedule
    assert "peaks at 9 B, over the memory cap of 8 B" in s.info["reason"]
    ok = order_schedule(problem, [0, 2, 1, 3], solver="t", t0=0.0)
    assert ok.status is Status.FEASIBLE and ok.peak_memory == 5


def test_order_schedule_reports_an_impossible_problem() -> None:
    g = OpGraph((Op("a", 1, output_bytes=4),))
    s = order_schedule(Problem(g, Machine(units=1, memory_cap=3)), [0], solver="t", t0=0.0)
    assert s.status is Status.UNKNOWN and "below" in s.info["reason"]


def test_empty_graph() -> None:
    g = OpGraph(())
    assert order_peak(g, np.zeros(0, dtype=np.int64)) == 0

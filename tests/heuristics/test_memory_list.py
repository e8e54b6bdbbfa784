"""Memory-aware list scheduling on k units: the in-order schedule never dead-ends when the
one-unit order fits the cap, and every schedule passes the validator."""

from __future__ import annotations

import random

import numpy as np
import pytest

from opsched.heuristics.memory import min_memory_order
from opsched.heuristics.memory.common import order_peak
from opsched.heuristics.memory_list import in_order, memory_list
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Status
from opsched.validate import validate
from tests.heuristics.memory.helpers import random_graph


def test_output_flag_on_a_read_tensor_does_not_pin_it() -> None:
    # a (8 B) is a graph output but is read by b: by the liveness rule it is freed when b
    # ends, so c (8 B) fits an 8 B cap after b. Treating the flag as "keep to the end"
    # (the old in-order rule) dead-ended here.
    g = OpGraph(
        (
            Op("a", 1, output_bytes=8, output=True),
            Op("b", 1, deps=("a",), output_bytes=0),
            Op("c", 1, deps=("b",), output_bytes=8, output=True),
        )
    )
    p = Problem(g, Machine(units=2, memory_cap=8))
    s = in_order(p, np.array([0, 1, 2]))
    assert s.status == Status.FEASIBLE
    assert [o.start for o in s.ops] == [0.0, 1.0, 2.0]
    assert s.peak_memory == 8
    assert validate(p, s).valid


@pytest.mark.parametrize("zero_dur", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_in_order_fits_the_cap_of_its_own_order(seed: int, zero_dur: bool) -> None:
    # with ops that take no time too: a zero-duration chain dead-ended (the seeds 1009, 1024
    # and 1039 of an earlier draw did)
    rng = random.Random(seed + (1000 if zero_dur else 0))
    g = random_graph(rng, rng.randint(6, 14), zero_dur=zero_dur)
    order = np.asarray(min_memory_order(g))
    cap = order_peak(g, order)
    p = Problem(g, Machine(units=rng.choice([2, 3]), memory_cap=cap))
    s = in_order(p, order)
    assert s.status == Status.FEASIBLE, s.info
    assert validate(p, s).valid
    best = memory_list(p)
    assert best.status == Status.FEASIBLE
    assert validate(p, best).valid
    assert best.makespan is not None and s.makespan is not None
    assert best.makespan <= s.makespan


def test_a_zero_duration_chain_takes_no_memory_at_its_instant() -> None:
    # x (8 B) and its reader y both take no time: x's tensor lives over [start x, end y),
    # empty when both run at one instant, so the 4 B cap holds; placed one at a time, x
    # alone did not fit and the in-order schedule dead-ended
    g = OpGraph(
        (
            Op("a", 1, output_bytes=4),
            Op("b", 1, deps=("a",)),
            Op("x", 0, output_bytes=8),
            Op("y", 0, deps=("x",)),
        )
    )
    p = Problem(g, Machine(units=2, memory_cap=4))
    s = in_order(p, np.array([2, 3, 0, 1]))
    assert s.status == Status.FEASIBLE, s.info
    assert [o.start for o in s.ops] == [0.0, 1.0, 0.0, 0.0]
    assert s.peak_memory == 4
    assert validate(p, s).valid
    assert memory_list(p).status == Status.FEASIBLE


def test_in_order_takes_other_resources_and_multi_unit_ops() -> None:
    # one unit and a dma engine of 2: the min-memory order fits the 5 B cap; the in-order
    # schedule had been left out whenever a resource other than units was limited, and
    # both list priorities dead-end here
    g = OpGraph((
        Op("o0", 5.0, demands={"units": 1, "dma": 0}),
        Op("o1", 0.0, output_bytes=1, demands={"units": 1, "dma": 1}),
        Op("o2", 1.0, deps=("o1", "o0"), output_bytes=4, demands={"units": 1, "dma": 1}),
        Op("o3", 0.0, deps=("o1",), output_bytes=10, demands={"units": 1, "dma": 0}),
        Op("o4", 0.0, deps=("o3", "o1"), output_bytes=10),
        Op("o5", 0.0, output_bytes=10, workspace_bytes=7, demands={"units": 0}),
    ), resources={"dma": 2})  # fmt: skip
    p = Problem(g, Machine(units=1, memory_cap=5))
    s = memory_list(p)
    assert s.status is Status.FEASIBLE and validate(p, s).valid and s.makespan == 6.0
    # a two-unit op holds both units, and a dma of 1 serialises the copies
    g2 = OpGraph((Op("wide", 2, demands={"units": 2}), Op("a", 1, demands={"units": 1, "dma": 1}),
                  Op("b", 1, demands={"units": 1, "dma": 1})), resources={"dma": 1})  # fmt: skip
    p2 = Problem(g2, Machine(units=2))
    s2 = in_order(p2, np.arange(3))
    assert validate(p2, s2).valid and s2.makespan == 4.0
    assert s2.ops[0].name == "wide" and s2.ops[0].unit is None


def test_huge_unit_counts_under_a_cap() -> None:
    # the forward state held a free-unit heap of the machine's size (2^31 units: out of
    # memory; 10^30: an overflow)
    g = random_graph(random.Random(5), 14)
    peak = order_peak(g, min_memory_order(g))
    for units in (2**31, 10**30):
        p = Problem(g, Machine(units=units, memory_cap=peak))
        s = memory_list(p)
        assert s.status is Status.FEASIBLE and s.machine["units"] == units
        assert validate(p, s).valid
        same = memory_list(Problem(g, Machine(units=g.num_ops, memory_cap=peak)))
        assert [(o.start, o.unit) for o in s.ops] == [(o.start, o.unit) for o in same.ops]

"""The safe list schedule: never a dead end where the in-order schedule of the same one-unit
order has none, every schedule valid, a hand-worked case, and its segment tree against a
plain list."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from opsched.demo import branches_graph
from opsched.heuristics import greedy
from opsched.heuristics.listsched import list_schedule
from opsched.heuristics.memory import min_memory_order
from opsched.heuristics.memory.common import file_order, order_peak, step_memory
from opsched.heuristics.memory_list import in_order, memory_list
from opsched.heuristics.safe_list import _MaxTree, safe_list
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Status
from opsched.validate import validate
from tests.heuristics.memory.helpers import random_graph


def _two_chains(cap: int) -> Problem:
    # x1 -> x2 and y1 -> y2, 2 ticks each; the first op of each chain writes 4 B
    g = OpGraph((
        Op("x1", 2, output_bytes=4), Op("x2", 2, deps=("x1",)),
        Op("y1", 2, output_bytes=4), Op("y2", 2, deps=("y1",)),
    ))  # fmt: skip
    return Problem(g, Machine(units=2, memory_cap=cap))


def test_an_op_starts_early_only_when_the_order_still_fits() -> None:
    # order x1 x2 y1 y2 peaks at 4 B. Under 8 B, y1 may run beside x1: after both, the
    # order's next steps hold 4 + 4 B at most. The in-order schedule waits for x2 to start.
    order = np.arange(4)
    p = _two_chains(8)
    s = safe_list(p, order, "order")
    assert [o.start for o in s.ops] == [0.0, 2.0, 0.0, 2.0]
    assert s.makespan == 4.0 and s.info["early"] == 1 and validate(p, s).valid  # y1
    assert in_order(p, order).makespan == 6.0
    # under 7 B, y1 beside x1 would take 8 B: it waits for x1's tensor to go (x2's end)
    p7 = _two_chains(7)
    s7 = safe_list(p7, order, "order")
    assert [o.start for o in s7.ops] == [0.0, 2.0, 4.0, 6.0]
    assert s7.makespan == 8.0 and validate(p7, s7).valid


def test_the_check_looks_ahead_of_the_memory_free_now() -> None:
    # a (1 B) feeds c, which needs a 6 B workspace; b (3 B) is independent and comes after
    # c in the order. Under 7 B, b fits beside a now (1 + 3 B), but c would then need
    # 1 + 3 + 6 = 10 B: b must wait until c has run
    g = OpGraph((
        Op("a", 1, output_bytes=1), Op("c", 1, deps=("a",), workspace_bytes=6),
        Op("b", 1, output_bytes=3, output=True),
    ))  # fmt: skip
    p = Problem(g, Machine(units=2, memory_cap=7))
    order = np.array([0, 1, 2])
    assert order_peak(g, order) == 7
    s = safe_list(p, order, "b-level")
    assert s.status == Status.FEASIBLE and validate(p, s).valid
    assert s.ops[2].start >= s.ops[1].start + 1


def test_it_finishes_where_non_delay_schedules_dead_end() -> None:
    p = Problem(branches_graph(), Machine(units=2, memory_cap=20))
    assert greedy(p).status == Status.UNKNOWN
    assert list_schedule(p, "b-level", "memory").status == Status.UNKNOWN
    order = min_memory_order(p)
    for rule in ("order", "b-level"):
        s = safe_list(p, order, rule)
        assert s.status == Status.FEASIBLE and validate(p, s).valid
        assert s.peak_memory is not None and s.peak_memory <= 20
    best = memory_list(p)
    assert best.status == Status.FEASIBLE
    # the bound comes with it whichever candidate wins (the in-order and safe ones had none)
    assert best.lower_bound is not None and 0 < best.lower_bound <= (best.makespan or 0)


def test_zero_duration_ops_left_at_the_end_start_together() -> None:
    # b writes an 11 B graph output and takes no time: at the end of the schedule its tensor
    # lives over an empty interval, so the 2 B cap holds (both schedules had stopped here)
    g = OpGraph((Op("a", 1), Op("b", 0, deps=("a",), output_bytes=11, output=True)),
                persistent_bytes=2)  # fmt: skip
    p = Problem(g, Machine(units=2, memory_cap=2))
    for s in (in_order(p, np.array([0, 1])), safe_list(p, np.array([0, 1]))):
        assert s.status == Status.FEASIBLE and validate(p, s).valid
        assert [o.start for o in s.ops] == [0.0, 1.0] and s.makespan == 1.0


def test_the_end_rule_does_not_hide_an_impossible_cap() -> None:
    # only zero-duration ops, and persistent bytes over the cap: nothing fits, and starting
    # them all at the end must not pass for a schedule (a review found in_order doing so)
    g = OpGraph((Op("a", 0, output_bytes=1, output=True),), persistent_bytes=10)
    p = Problem(g, Machine(units=1, memory_cap=5))
    for s in (in_order(p, np.array([0])), safe_list(p, np.array([0])), memory_list(p)):
        assert s.status == Status.UNKNOWN and "persistent" in s.info["reason"]


def test_a_wide_pointer_op_is_not_starved_of_units() -> None:
    # P needs both units; one-unit fillers C0..C9 could keep taking each unit as it frees.
    # While P waits only for units, nothing else that takes time starts.
    ops = [Op("A", 1), Op("B", 2), Op("P", 1, demands={"units": 2})]
    ops += [Op(f"C{i}", 2) for i in range(10)]
    p = Problem(OpGraph(tuple(ops)), Machine(units=2, memory_cap=100))
    for rule in ("order", "b-level"):
        s = safe_list(p, np.arange(len(ops)), rule)
        assert validate(p, s).valid
        assert s.ops[2].start == 2.0  # as soon as B ends
        assert s.makespan == 13.0  # then the fillers in pairs: 3 + 5 x 2


def test_zero_duration_steps_do_not_block_early_starts() -> None:
    # the order's step of b counts a's 10 B tensor, read at the instant it is written: it
    # holds nothing, and the cap of 0 B holds. y, which holds nothing either, may run beside
    # x1 (it had been kept back by that step, to a makespan of 3)
    g = OpGraph((
        Op("x1", 1), Op("x2", 1, deps=("x1",)),
        Op("a", 0, deps=("x2",), output_bytes=10), Op("b", 0, deps=("a",)), Op("y", 1),
    ))  # fmt: skip
    p = Problem(g, Machine(units=2, memory_cap=0))
    assert step_memory(g, np.arange(5)).tolist() == [0, 0, 0, 10, 0]
    s = safe_list(p, np.arange(5), "order")
    assert s.status == Status.FEASIBLE and validate(p, s).valid
    assert s.makespan == 2.0 and s.ops[4].start == 0.0


def _random_problem(seed: int) -> tuple[Problem, np.ndarray]:
    rng = random.Random(seed)
    g = random_graph(rng, rng.randint(3, 24), zero_dur=rng.random() < 0.5)
    if rng.random() < 0.3:  # a dma engine and ops holding 0 or 2 units
        ops = tuple(
            dataclasses.replace(
                op, demands={"units": rng.choice([0, 1, 1, 2]), "dma": rng.choice([0, 0, 1])}
            )
            for op in g.ops
        )
        g = OpGraph(ops, resources={"dma": 1}, persistent_bytes=g.persistent_bytes)
    order = np.asarray(min_memory_order(g) if rng.random() < 0.5 else file_order(g))
    cap = order_peak(g, order) + rng.choice([0, 0, 1, 5, 20])
    return Problem(g, Machine(units=rng.choice([2, 3, 4]), memory_cap=cap)), order


@pytest.mark.parametrize("seed", range(150))
def test_never_a_dead_end_where_in_order_has_none(seed: int) -> None:
    p, order = _random_problem(seed)
    base = in_order(p, order)
    for rule in ("order", "b-level"):
        s = safe_list(p, order, rule)
        if base.status == Status.FEASIBLE:
            assert s.status == Status.FEASIBLE, (rule, s.info)
        if s.status == Status.FEASIBLE:
            assert validate(p, s).valid
            assert s.peak_memory is not None and s.peak_memory <= p.memory_cap


def test_an_order_over_the_cap_is_refused_with_its_peak() -> None:
    # x1 y1 x2 y2 holds both 4 B tensors at once; each op alone fits 5 B
    s = safe_list(_two_chains(5), np.array([0, 2, 1, 3]))
    assert s.status == Status.UNKNOWN and "peaks at 8 B" in s.info["reason"]
    with pytest.raises(ValueError, match="unknown priority"):
        safe_list(_two_chains(8), np.arange(4), "fifo")


@pytest.mark.parametrize("seed", range(20))
def test_the_tree_matches_a_plain_list(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    vals = [rng.randint(-50, 50) for _ in range(n)]
    tree = _MaxTree(list(vals))
    for _ in range(200):
        lo = rng.randint(0, n)
        hi = rng.randint(lo, n)
        if rng.random() < 0.5:
            x = rng.randint(-20, 20)
            tree.add(lo, hi, x)
            for j in range(lo, hi):
                vals[j] += x
        elif lo < hi:
            assert tree.max(lo, hi) == max(vals[lo:hi])

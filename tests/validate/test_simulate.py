"""Tests of :func:`opsched.validate.simulate` and :func:`opsched.validate.execute_orders`."""

from __future__ import annotations

import numpy as np
import pytest

from opsched.errors import ScheduleFormatError
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule, Status
from opsched.validate import execute_orders, simulate, validate


def _three_ops() -> OpGraph:
    return OpGraph(
        (
            Op("a", 2, output_bytes=4),
            Op("b", 3, workspace_bytes=2),
            Op("c", 1, deps=("a", "b"), output_bytes=1, output=True),
        )
    )


# ----------------------------------------------------------------------------- simulate


def test_simulate_hand_made_two_units():
    g = _three_ops()
    p = Problem(g, Machine(units=2))
    s = Schedule.build(p, {"a": 0, "b": 0, "c": 3}, {"a": 0, "b": 1, "c": 0}, solver="hand")
    r = simulate(p, s)
    # makespan: c ends at 3 + 1 = 4
    assert r.makespan == 4.0
    # a out 4 [0, 4) (c ends at 4); b ws 2 [0, 3); c out 1 [3, 4) (graph output, to makespan)
    # [0, 3): 4 + 2 = 6; [3, 4): 4 + 1 = 5; from 4: 0
    assert r.memory_times.tolist() == [0.0, 3.0, 4.0]
    assert r.memory_bytes.tolist() == [6, 5, 0]
    assert r.peak_memory == 6
    # unit 0 runs a (2) and c (1): busy 3, idle 1; unit 1 runs b (3): busy 3, idle 1
    assert r.unit_busy == {0: 3.0, 1: 3.0}
    assert r.unit_idle == {0: 1.0, 1: 1.0}
    # work 2 + 3 + 1 = 6 over 2 units x makespan 4 = 8
    assert r.utilisation == pytest.approx(0.75)
    d = r.to_dict()
    assert d["memory_curve"] == [(0.0, 6), (3.0, 5), (4.0, 0)]


def test_simulate_idle_units_count_in_utilisation():
    g = _three_ops()
    p = Problem(g, Machine(units=3))
    s = Schedule.build(p, {"a": 0, "b": 0, "c": 3}, {"a": 0, "b": 1, "c": 0}, solver="hand")
    r = simulate(p, s)
    # unit 2 never used: busy 0, idle 4; utilisation 6 / (3 x 4) = 0.5
    assert r.unit_busy == {0: 3.0, 1: 3.0, 2: 0.0}
    assert r.unit_idle == {0: 1.0, 1: 1.0, 2: 4.0}
    assert r.utilisation == pytest.approx(0.5)


def test_simulate_unlimited_units_uses_units_seen():
    g = _three_ops()
    p = Problem(g, Machine(units=None))
    s = Schedule.build(p, {"a": 0, "b": 0, "c": 3}, {"a": 0, "b": 1, "c": 0}, solver="hand")
    # width = the 2 units the schedule names: 6 / (2 x 4) = 0.75
    assert simulate(p, s).utilisation == pytest.approx(0.75)


def test_simulate_unlimited_units_counts_ops_of_several_units():
    # an op of three units names none: the width is the three units it holds, not 1 (300 %)
    g = OpGraph((Op("a", 1, demands={"units": 3}), Op("b", 1), Op("c", 2, deps=("a",))))
    p = Problem(g, Machine(units=None))
    s = Schedule.build(p, [0, 0, 1], [None, 0, 0], solver="hand")
    assert validate(p, s).valid
    # work 3 + 1 + 2 = 6 over 4 units at once (a and b) x makespan 3
    assert simulate(p, s).utilisation == pytest.approx(6 / 12)
    one = Problem(OpGraph((Op("a", 1, demands={"units": 3}),)), Machine(units=None))
    assert simulate(one, Schedule.build(one, [0], solver="hand")).utilisation == 1.0


def test_simulate_serial_is_fully_utilised():
    g = _three_ops()
    p = Problem(g, Machine(units=1))
    s = Schedule.build(p, {"a": 0, "b": 2, "c": 5}, {"a": 0, "b": 0, "c": 0}, solver="hand")
    r = simulate(p, s)
    # one unit, busy over [0, 6): utilisation 1, idle 0
    assert r.makespan == 6.0
    assert r.unit_busy == {0: 6.0} and r.unit_idle == {0: 0.0}
    assert r.utilisation == pytest.approx(1.0)
    # a out 4 [0, 6); b ws 2 [2, 5); c out 1 [5, 6): [0, 2): 4; [2, 5): 6; [5, 6): 5
    assert r.memory_times.tolist() == [0.0, 2.0, 5.0, 6.0]
    assert r.memory_bytes.tolist() == [4, 6, 5, 0]


def test_simulate_missing_op_raises():
    g = _three_ops()
    p = Problem(g, Machine(units=2))
    s = Schedule.build(p, {"a": 0, "b": 0, "c": 3}, solver="hand")
    s.ops = [o for o in s.ops if o.name != "b"]
    with pytest.raises(ScheduleFormatError, match="'b'"):
        simulate(p, s)


# ----------------------------------------------------------------------------- execute_orders


def _four_ops() -> OpGraph:
    return OpGraph((Op("a", 2), Op("b", 1), Op("c", 1, deps=("a", "b")), Op("d", 3, deps=("b",))))


def _times(s: Schedule) -> dict[str, tuple[float, float, int | None]]:
    return {o.name: (o.start, o.end, o.unit) for o in s.ops}


def test_execute_orders_two_units():
    p = Problem(_four_ops(), Machine(units=2))
    s = execute_orders(p, [["a", "c"], ["b", "d"]])
    # a [0, 2) u0; b [0, 1) u1; c after a and b -> [2, 3) u0; d after b on u1 -> [1, 4)
    assert _times(s) == {
        "a": (0.0, 2.0, 0),
        "b": (0.0, 1.0, 1),
        "c": (2.0, 3.0, 0),
        "d": (1.0, 4.0, 1),
    }
    assert s.makespan == 4.0
    assert s.status is Status.FEASIBLE
    assert validate(p, s).valid


def test_execute_orders_unit_order_delays_ready_op():
    p = Problem(_four_ops(), Machine(units=2))
    # d waits for c on unit 0 although b is done at 1: a [0,2) c [2,3) d [3,6); b [0,1) on u1
    s = execute_orders(p, {0: ["a", "c", "d"], 1: ["b"]})
    assert _times(s)["d"] == (3.0, 6.0, 0)
    assert s.makespan == 6.0
    assert validate(p, s).valid


def test_execute_orders_one_unit_is_serial():
    p = Problem(_four_ops(), Machine(units=1))
    s = execute_orders(p, [["b", "a", "c", "d"]])
    # b [0,1) a [1,3) c [3,4) d [4,7): the makespan is the total work 7
    assert s.starts() == {"b": 0.0, "a": 1.0, "c": 3.0, "d": 4.0}
    assert s.makespan == 7.0
    assert validate(p, s).valid


def test_execute_orders_with_actual_durations_by_name():
    p = Problem(_four_ops(), Machine(units=2))
    s = execute_orders(p, [["a", "c"], ["b", "d"]], durations={"a": 5.0})
    # a takes 5 instead of 2: a [0,5), c [5,6); b [0,1), d [1,4): makespan 6
    assert _times(s) == {
        "a": (0.0, 5.0, 0),
        "b": (0.0, 1.0, 1),
        "c": (5.0, 6.0, 0),
        "d": (1.0, 4.0, 1),
    }
    assert s.makespan == 6.0
    # the original problem's durations no longer match
    assert validate(p, s).kinds() == {"duration"}


def test_execute_orders_with_actual_durations_array():
    p = Problem(_four_ops(), Machine(units=2))
    s = execute_orders(p, [["a", "c"], ["b", "d"]], durations=np.array([1.0, 2.0, 0.5, 0.0]))
    # a [0,1); b [0,2); c after b -> [2, 2.5); d zero-duration after b -> [2, 2)
    assert _times(s) == {
        "a": (0.0, 1.0, 0),
        "b": (0.0, 2.0, 1),
        "c": (2.0, 2.5, 0),
        "d": (2.0, 2.0, 1),
    }
    assert s.makespan == 2.5


def test_execute_orders_deadlock_on_one_unit():
    p = Problem(_four_ops(), Machine(units=2))
    # c is queued before a on unit 0 but depends on a
    with pytest.raises(ScheduleFormatError, match="deadlock") as info:
        execute_orders(p, [["c", "a"], ["b", "d"]])
    msg = str(info.value)
    assert "'a'" in msg and "'c'" in msg
    assert "'b'" not in msg and "'d'" not in msg  # b and d run fine


def test_execute_orders_deadlock_across_units():
    g = OpGraph((Op("a", 1), Op("b", 1), Op("x", 1, deps=("a",)), Op("y", 1, deps=("b",))))
    p = Problem(g, Machine(units=2))
    # unit 0: x then b; unit 1: y then a. x waits for a (behind y), y waits for b (behind x)
    with pytest.raises(ScheduleFormatError, match="deadlock") as info:
        execute_orders(p, [["x", "b"], ["y", "a"]])
    for name in ("a", "b", "x", "y"):
        assert repr(name) in str(info.value)


def test_execute_orders_missing_op():
    p = Problem(_four_ops(), Machine(units=2))
    with pytest.raises(ScheduleFormatError, match="missing") as info:
        execute_orders(p, [["a", "c"], ["b"]])
    assert "'d'" in str(info.value)


@pytest.mark.parametrize("orders", [[["a", "c", "a"], ["b", "d"]], [["a", "c"], ["b", "d", "a"]]])
def test_execute_orders_duplicate_op(orders):
    p = Problem(_four_ops(), Machine(units=2))
    with pytest.raises(ScheduleFormatError, match="twice") as info:
        execute_orders(p, orders)
    assert "'a'" in str(info.value)


def test_simulate_huge_unit_count_lists_only_units_the_ops_can_use() -> None:
    # every unit of the machine was listed idle: 10^7 units took 14 s, 10^30 never ended
    g = _three_ops()
    s = Schedule.build(Problem(g, Machine(units=3)), {"a": 0, "b": 0, "c": 3},
                       {"a": 0, "b": 1, "c": 0}, solver="hand")  # fmt: skip
    for units in (10**6, 10**30):
        r = simulate(Problem(g, Machine(units=units)), s)
        assert r.unit_busy == {0: 3.0, 1: 3.0, 2: 0.0}
        assert r.unit_idle == {0: 1.0, 1: 1.0, 2: 4.0}
        assert r.utilisation == pytest.approx(6 / (units * 4))

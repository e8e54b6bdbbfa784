"""Tests of the independent validator :func:`opsched.validate.validate`.

Each hand-made schedule breaks exactly one rule and the test asserts the exact violation kind
and the ops it names; the boundary cases (half-open intervals, zero-duration ops) must be
valid; memory peaks are worked out by hand in comments; property tests compare the validator
with :mod:`opsched.liveness` and with brute-force recomputations of precedence and capacity.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opsched.ir import Op, OpGraph
from opsched.liveness import peak_memory
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule, ScheduledOp, Status
from opsched.validate import validate

# ----------------------------------------------------------------------------- helpers


def rows_at(
    g: OpGraph, starts: Mapping[str, float], units: Mapping[str, int] | None = None
) -> list[tuple[str, float, float, int | None]]:
    """(name, start, end = start + duration, unit) for every op named in ``starts``."""
    units = units or {}
    return [(n, float(s), float(s) + g[n].duration, units.get(n)) for n, s in starts.items()]


def hand(
    g: OpGraph,
    rows: list[tuple[str, float, float, int | None]],
    *,
    makespan: float | None = None,
    peak: int | None = None,
    lower_bound: float | None = None,
    graph: str | None = None,
) -> Schedule:
    """A schedule taken literally from ``rows``; no reported makespan or peak unless given."""
    ops = [ScheduledOp(n, s, e, u) for n, s, e, u in rows]
    return Schedule(
        graph=g.name if graph is None else graph,
        solver="hand",
        status=Status.FEASIBLE,
        ops=ops,
        makespan=makespan,
        peak_memory=peak,
        lower_bound=lower_bound,
    )


def only(report, kind: str):  # type: ignore[no-untyped-def]
    """The single violation of the report, which must be of ``kind``."""
    assert [v.kind for v in report.violations] == [kind], report.summary()
    return report.violations[0]


# ----------------------------------------------------------------------------- one rule each


def test_precedence_violation_names_dependency_and_op():
    g = OpGraph((Op("a", 2), Op("b", 1, deps=("a",))))
    p = Problem(g, Machine(units=2))
    # b starts at 1, a ends at 2 (different units, so nothing else is wrong)
    s = hand(g, rows_at(g, {"a": 0, "b": 1}, {"a": 0, "b": 1}))
    v = only(validate(p, s), "precedence")
    assert v.ops == ("a", "b")
    assert v.time == 1.0


def test_capacity_of_units_exceeded():
    g = OpGraph((Op("a", 2), Op("b", 2), Op("c", 2)))
    p = Problem(g, Machine(units=2))
    # three unit-demanding ops over [0, 2) on 2 units, no unit indices
    s = hand(g, rows_at(g, {"a": 0, "b": 0, "c": 0}))
    v = only(validate(p, s), "capacity")
    assert v.ops == ("a", "b", "c")
    assert v.time == 0.0
    assert "'units'" in v.message
    assert "3 > capacity 2" in v.message


def test_capacity_of_named_resource_exceeded() -> None:
    g = OpGraph(
        (
            Op("a", 2, demands={"units": 1, "dma": 1}),
            Op("b", 2, demands={"units": 1, "dma": 1}),
            Op("c", 2, demands={"units": 0, "dma": 0}),
        )
    )
    p = Problem(g, Machine(units=2, resources={"dma": 1}))
    # units: a and b on different units (2 <= 2); dma: a and b overlap over [1, 2) -> 2 > 1
    s = hand(g, rows_at(g, {"a": 0, "b": 1, "c": 0}, {"a": 0, "b": 1}))
    v = only(validate(p, s), "capacity")
    assert v.ops == ("a", "b")
    assert v.time == 1.0
    assert "'dma'" in v.message


def test_named_resource_back_to_back_is_valid():
    g = OpGraph(
        (Op("a", 2, demands={"units": 1, "dma": 1}), Op("b", 2, demands={"units": 1, "dma": 1}))
    )
    p = Problem(g, Machine(units=2, resources={"dma": 1}))
    # a holds dma over [0, 2), b over [2, 4): never 2 at once
    s = hand(g, rows_at(g, {"a": 0, "b": 2}, {"a": 0, "b": 1}))
    assert validate(p, s).valid


def test_unit_overlap_on_one_unit():
    g = OpGraph((Op("a", 2), Op("b", 2)))
    p = Problem(g, Machine(units=2))
    # both on unit 0: [0, 2) and [1, 3) overlap; 2 ops <= 2 units so capacity holds
    s = hand(g, rows_at(g, {"a": 0, "b": 1}, {"a": 0, "b": 0}))
    v = only(validate(p, s), "unit_overlap")
    assert v.ops == ("a", "b")
    assert v.time == 1.0


@pytest.mark.parametrize("unit", [2, 5, -1])
def test_unit_index_out_of_range(unit):
    g = OpGraph((Op("a", 1), Op("b", 1)))
    p = Problem(g, Machine(units=2))  # valid indices 0 and 1
    s = hand(g, [("a", 0.0, 1.0, 0), ("b", 0.0, 1.0, unit)])
    v = only(validate(p, s), "unit")
    assert v.ops == ("b",)
    assert "outside 0..1" in v.message


def test_unit_index_on_op_that_demands_two_units():
    g = OpGraph((Op("a", 1, demands={"units": 2}),))
    p = Problem(g, Machine(units=2))
    v = only(validate(p, hand(g, [("a", 0.0, 1.0, 0)])), "unit")
    assert v.ops == ("a",)
    assert "demands 2 units" in v.message


def test_duration_mismatch():
    g = OpGraph((Op("a", 2), Op("b", 1, deps=("a",))))
    p = Problem(g, Machine(units=1))
    # a claims [0, 3) but its duration is 2; b at 3 is still after a's true end (2)
    s = hand(g, [("a", 0.0, 3.0, 0), ("b", 3.0, 4.0, 0)])
    v = only(validate(p, s), "duration")
    assert v.ops == ("a",)
    assert "runs 3 but its duration is 2" in v.message


def test_negative_start():
    g = OpGraph((Op("a", 1),))
    p = Problem(g, Machine(units=1))
    v = only(validate(p, hand(g, [("a", -1.0, 0.0, 0)])), "time")
    assert v.ops == ("a",)
    assert v.time == -1.0


def test_missing_op():
    g = OpGraph((Op("a", 1), Op("b", 1), Op("c", 1)))
    p = Problem(g, Machine(units=1))
    r = validate(p, hand(g, rows_at(g, {"b": 0})))
    v = only(r, "missing_op")
    assert v.ops == ("a", "c")
    assert r.peak_memory is None  # memory needs every op


def test_unknown_op():
    g = OpGraph((Op("a", 1),))
    p = Problem(g, Machine(units=1))
    s = hand(g, [("a", 0.0, 1.0, None), ("zzz", 0.0, 1.0, None)])
    v = only(validate(p, s), "unknown_op")
    assert v.ops == ("zzz",)


def test_duplicate_op():
    g = OpGraph((Op("a", 1), Op("b", 1)))
    p = Problem(g, Machine(units=2))
    s = hand(g, [("a", 0.0, 1.0, None), ("b", 0.0, 1.0, None), ("a", 1.0, 2.0, None)])
    v = only(validate(p, s), "duplicate_op")
    assert v.ops == ("a",)


def test_graph_name_mismatch():
    g = OpGraph((Op("a", 1),), name="mine")
    p = Problem(g, Machine(units=1))
    only(validate(p, hand(g, [("a", 0.0, 1.0, 0)], graph="other")), "graph")


def test_memory_cap_exceeded():
    g = OpGraph((Op("a", 1, output_bytes=4), Op("b", 1, output_bytes=2, workspace_bytes=3)))
    p = Problem(g, Machine(units=2, memory_cap=8))
    # both over [0, 1): a's output 4 + b's output 2 + b's workspace 3 = 9 > 8
    r = validate(p, hand(g, rows_at(g, {"a": 0, "b": 0}, {"a": 0, "b": 1})))
    v = only(r, "memory")
    assert r.peak_memory == 9
    assert v.ops == ("a", "b", "b(workspace)")
    assert v.time == 0.0


def test_memory_at_cap_is_valid():
    g = OpGraph((Op("a", 1, output_bytes=4), Op("b", 1, output_bytes=2, workspace_bytes=3)))
    p = Problem(g, Machine(units=2, memory_cap=9))  # peak 9 as above, equal to the cap
    r = validate(p, hand(g, rows_at(g, {"a": 0, "b": 0}, {"a": 0, "b": 1})))
    assert r.valid and r.peak_memory == 9


def _good_schedule():
    g = OpGraph((Op("a", 2, output_bytes=5), Op("b", 1, deps=("a",))))
    p = Problem(g, Machine(units=1))
    # a [0, 2), b [2, 3): makespan 3; a's output live [0, 3): peak 5
    return p, Schedule.build(p, {"a": 0, "b": 2}, {"a": 0, "b": 0}, solver="hand")


def test_good_schedule_is_valid():
    p, s = _good_schedule()
    r = validate(p, s)
    assert r.valid, r.summary()
    assert (r.makespan, r.peak_memory) == (3.0, 5)
    assert (s.makespan, s.peak_memory) == (3.0, 5)


def test_reported_makespan_differs():
    p, s = _good_schedule()
    s.makespan = 4.0
    v = only(validate(p, s), "report")
    assert "makespan 4" in v.message and "recomputed 3" in v.message


def test_reported_peak_differs():
    p, s = _good_schedule()
    s.peak_memory = 4
    v = only(validate(p, s), "report")
    assert "4 B" in v.message and "recomputed 5 B" in v.message


def test_lower_bound_above_makespan():
    p, s = _good_schedule()
    s.lower_bound = 3.5
    v = only(validate(p, s), "report")
    assert "lower bound 3.5" in v.message


def test_lower_bound_equal_to_makespan_is_valid():
    p, s = _good_schedule()
    s.lower_bound = 3.0
    assert validate(p, s).valid


def test_empty_result_without_schedule_is_not_checked():
    p, _ = _good_schedule()
    r = validate(p, Schedule.empty(p, solver="x", status=Status.UNKNOWN))
    assert r.valid and r.makespan is None


def test_empty_feasible_result_reports_every_op_missing():
    p, _ = _good_schedule()
    s = Schedule.empty(p, solver="x", status=Status.FEASIBLE)
    v = only(validate(p, s), "missing_op")
    assert v.ops == ("a", "b")


def test_several_violations_reported_together():
    g = OpGraph((Op("a", 2), Op("b", 2, deps=("a",))))
    p = Problem(g, Machine(units=1))
    # b starts at 1 on a's unit: precedence, capacity (2 > 1) and unit_overlap at once
    s = hand(g, rows_at(g, {"a": 0, "b": 1}, {"a": 0, "b": 0}))
    assert validate(p, s).kinds() == {"precedence", "capacity", "unit_overlap"}


# ----------------------------------------------------------------------------- boundaries


def test_start_exactly_at_dependency_end_is_valid():
    g = OpGraph((Op("a", 2), Op("b", 1, deps=("a",))))
    p = Problem(g, Machine(units=2))
    s = hand(g, rows_at(g, {"a": 0, "b": 2}, {"a": 0, "b": 1}))
    assert validate(p, s).valid


def test_back_to_back_on_one_unit_is_valid():
    g = OpGraph((Op("a", 2), Op("b", 3)))
    p = Problem(g, Machine(units=1))
    s = hand(g, rows_at(g, {"a": 0, "b": 2}, {"a": 0, "b": 0}))
    r = validate(p, s)
    assert r.valid and r.makespan == 5.0


def test_fractional_back_to_back_is_valid():
    g = OpGraph((Op("a", 0.1), Op("b", 0.2), Op("c", 0.3)))
    p = Problem(g, Machine(units=1))
    # 0.1 + 0.2 = 0.30000000000000004: the tolerance absorbs the rounding
    s = hand(g, rows_at(g, {"a": 0, "b": 0.1, "c": 0.1 + 0.2}, {"a": 0, "b": 0, "c": 0}))
    assert validate(p, s).valid


def test_tensor_freed_and_allocated_at_same_time_do_not_coexist():
    g = OpGraph((Op("a", 2, output_bytes=5), Op("b", 1, output_bytes=5)))
    p = Problem(g, Machine(units=1, memory_cap=5))
    # a's output (no consumer, not an output) lives [0, 2); b's lives [2, 3): peak 5, not 10
    r = validate(p, hand(g, rows_at(g, {"a": 0, "b": 2}, {"a": 0, "b": 0})))
    assert r.valid, r.summary()
    assert r.peak_memory == 5


def test_input_freed_when_consumer_ends_and_new_tensor_allocated_then():
    g = OpGraph((Op("a", 1, output_bytes=5), Op("c", 1, deps=("a",)), Op("b", 1, output_bytes=5)))
    p = Problem(g, Machine(units=1, memory_cap=5))
    # a's output lives [0, 2) (c ends at 2); b allocates at 2: peak 5
    r = validate(p, hand(g, rows_at(g, {"a": 0, "c": 1, "b": 2}, {"a": 0, "c": 0, "b": 0})))
    assert r.valid, r.summary()
    assert r.peak_memory == 5


def test_zero_duration_ops_hold_no_units_and_no_workspace():
    g = OpGraph(
        (
            Op("a", 2),
            Op("z", 0, workspace_bytes=100, output_bytes=0),
            Op("y", 0, workspace_bytes=100, demands={"units": 1, "dma": 5}),
        )
    )
    p = Problem(g, Machine(units=1, resources={"dma": 1}, memory_cap=0))
    # z and y sit inside a's run on unit 0; they hold no unit, no dma and no workspace
    s = hand(g, rows_at(g, {"a": 0, "z": 1, "y": 1}, {"a": 0, "z": 0, "y": 0}))
    r = validate(p, s)
    assert r.valid, r.summary()
    assert r.peak_memory == 0
    assert r.makespan == 2.0


# ----------------------------------------------------------------------------- hand-worked peaks


def test_peak_output_held_to_makespan_with_persistent_bytes():
    g = OpGraph(
        (
            Op("a", 2, output_bytes=4),
            Op("b", 1, deps=("a",), output_bytes=3, workspace_bytes=2),
            Op("c", 1, output_bytes=5, output=True),
        ),
        persistent_bytes=10,
    )
    p = Problem(g, Machine(units=2))
    s = Schedule.build(p, {"a": 0, "b": 2, "c": 0}, {"a": 0, "b": 0, "c": 1}, solver="hand")
    # makespan 3. a out 4 [0, 3) (b ends at 3); b out 3 [2, 3) (no consumer); b ws 2 [2, 3);
    # c out 5 [0, 3) (graph output, held to the makespan although c ends at 1); persistent 10.
    # [0, 2): 10 + 4 + 5 = 19;  [2, 3): 10 + 4 + 3 + 2 + 5 = 24  -> peak 24
    r = validate(p, s)
    assert r.valid, r.summary()
    assert r.peak_memory == 24


def test_peak_diamond():
    g = OpGraph(
        (
            Op("s", 1, output_bytes=8),
            Op("l", 2, deps=("s",), output_bytes=2),
            Op("r", 1, deps=("s",), output_bytes=6),
            Op("j", 1, deps=("l", "r"), output_bytes=1, output=True),
        )
    )
    p = Problem(g, Machine(units=2))
    s = Schedule.build(p, {"s": 0, "l": 1, "r": 1, "j": 3}, solver="hand")
    # s out 8 [0, 3) (last consumer l ends at 3); l out 2 [1, 4); r out 6 [1, 4) (j ends at 4);
    # j out 1 [3, 4). [0, 1): 8; [1, 3): 8 + 2 + 6 = 16; [3, 4): 2 + 6 + 1 = 9 -> peak 16
    r = validate(p, s)
    assert r.valid, r.summary()
    assert r.peak_memory == 16


def test_peak_zero_duration_op_and_workspace():
    g = OpGraph(
        (
            Op("a", 1, output_bytes=5, workspace_bytes=7),
            Op("z", 0, deps=("a",), output_bytes=3, workspace_bytes=50),
            Op("b", 2, deps=("z",)),
        ),
        persistent_bytes=1,
    )
    p = Problem(g, Machine(units=1))
    s = Schedule.build(p, {"a": 0, "z": 1, "b": 1}, solver="hand")
    # a out 5 and ws 7 over [0, 1) (z, its consumer, ends at 1); z's workspace never (zero
    # duration); z out 3 over [1, 3) (b ends at 3). [0, 1): 1 + 5 + 7 = 13; [1, 3): 1 + 3 = 4
    r = validate(p, s)
    assert r.valid, r.summary()
    assert r.peak_memory == 13


def test_peak_graph_output_with_consumer_is_freed_at_consumer_end():
    g = OpGraph(
        (
            Op("a", 1, output_bytes=4, output=True),
            Op("b", 1, deps=("a",)),
            Op("c", 5),
            Op("d", 1, output_bytes=4),
        )
    )
    p = Problem(g, Machine(units=2))
    s = Schedule.build(p, {"a": 0, "b": 1, "c": 0, "d": 2}, solver="hand")
    # a has a consumer, so it is freed when b ends (2), not at the makespan (5);
    # d out 4 over [2, 3). Peak 4 (it would be 8 if a were held to the makespan)
    r = validate(p, s)
    assert r.valid, r.summary()
    assert r.peak_memory == 4


# ----------------------------------------------------------------------------- properties


@st.composite
def dags(draw, max_ops: int = 12):  # type: ignore[no-untyped-def]
    """Random DAGs: deps only to earlier ops, durations 0..4, random sizes and flags."""
    n = draw(st.integers(1, max_ops))
    ops = []
    for i in range(n):
        deps = draw(st.lists(st.integers(0, i - 1), unique=True, max_size=3)) if i else []
        ops.append(
            Op(
                f"o{i}",
                draw(st.integers(0, 4)),
                deps=tuple(f"o{j}" for j in deps),
                output_bytes=draw(st.integers(0, 20)),
                workspace_bytes=draw(st.sampled_from([0, 0, 1, 7, 13])),
                output=draw(st.booleans()),
            )
        )
    return OpGraph(tuple(ops), persistent_bytes=draw(st.integers(0, 5)))


@st.composite
def dag_and_starts(draw, lo: int = 0, hi: int = 15):  # type: ignore[no-untyped-def]
    g = draw(dags())
    starts = draw(st.lists(st.integers(lo, hi), min_size=g.num_ops, max_size=g.num_ops))
    return g, np.array(starts, dtype=np.float64)


@settings(max_examples=300, deadline=None)
@given(dag_and_starts(lo=-3))
def test_validator_peak_equals_liveness_peak(case):
    g, starts = case
    p = Problem(g, Machine(units=None))
    s = Schedule.build(p, starts, solver="random")
    r = validate(p, s)
    assert r.peak_memory == peak_memory(g, starts)
    assert r.peak_memory == s.peak_memory  # so no "report" violation either
    assert "report" not in r.kinds()
    assert r.makespan == float((starts + g.durations).max())


@settings(max_examples=300, deadline=None)
@given(dag_and_starts())
def test_precedence_violation_iff_some_op_starts_before_a_dep_ends(case):
    g, starts = case
    p = Problem(g, Machine(units=None))
    end = {n: starts[i] + g.durations[i] for i, n in enumerate(g.names)}
    start = dict(zip(g.names, starts, strict=True))
    expected = {(d, op.name) for op in g.ops for d in op.deps if start[op.name] < end[d]}
    r = validate(p, Schedule.build(p, starts, solver="random"))
    found = {v.ops for v in r.violations if v.kind == "precedence"}
    assert found == expected
    assert ("precedence" in r.kinds()) == bool(expected)


@settings(max_examples=300, deadline=None)
@given(dag_and_starts(hi=8), st.integers(1, 4))
def test_capacity_violation_iff_more_than_k_positive_ops_run_at_once(case, k):
    g, starts = case
    p = Problem(g, Machine(units=k))
    ends = starts + g.durations
    positive = g.durations > 0
    # brute force: running ops at every start time of a positive-duration op
    most = max(
        (int(np.sum(positive & (starts <= t) & (t < ends))) for t in starts[positive]), default=0
    )
    r = validate(p, Schedule.build(p, starts, solver="random"))
    assert ("capacity" in r.kinds()) == (most > k)
    assert not {"unit", "unit_overlap"} & r.kinds()  # no unit indices were given


def test_a_schedule_file_stating_a_wrong_makespan_is_reported():
    from opsched.ir import Op, OpGraph
    from opsched.problem import Machine, Problem
    from opsched.schedule import Schedule
    from opsched.validate import validate

    g = OpGraph((Op("a", 2), Op("b", 3, deps=("a",))))
    p = Problem(g, Machine(units=1))
    doc = Schedule.build(p, {"a": 0, "b": 2}, solver="hand").to_dict()
    assert validate(p, Schedule.from_dict(doc)).valid
    doc["makespan"] = 4
    rep = validate(p, Schedule.from_dict(doc))
    assert rep.kinds() == {"report"} and "reports makespan 4, recomputed 5" in str(
        rep.violations[0]
    )


def test_integer_schedules_are_compared_exactly_at_any_size() -> None:
    # the relative tolerance (1e-9 x 1e10 = 10) let b start 20 before a ended and three
    # ops of 8 share one unit
    from opsched.ir import Op, OpGraph
    from opsched.problem import Machine, Problem
    from opsched.schedule import Schedule
    from opsched.validate import validate

    d = 10**10
    g = OpGraph((Op("a", d), Op("b", d, deps=("a",)), Op("x", 8), Op("y", 8), Op("z", 8)))
    p = Problem(g, Machine(units=1))
    s = Schedule.build(p, {"a": 0, "b": d - 20, "x": 0, "y": 0, "z": 0},
                       dict.fromkeys("abxyz", 0), solver="hand")  # fmt: skip
    kinds = validate(p, s).kinds()
    assert {"precedence", "capacity", "unit_overlap"} <= set(kinds)
    ok = Schedule.build(p, {"a": 0, "b": d, "x": 2 * d, "y": 2 * d + 8, "z": 2 * d + 16},
                        dict.fromkeys("abxyz", 0), solver="hand")  # fmt: skip
    assert validate(p, ok).valid


def test_a_unit_index_of_minus_two_is_refused() -> None:
    # -2 was the checker's own mark for "no unit given"
    from opsched.ir import Op, OpGraph
    from opsched.problem import Machine, Problem
    from opsched.schedule import Schedule
    from opsched.validate import validate

    p = Problem(OpGraph((Op("a", 1), Op("b", 1)), name="g2"), Machine(units=2))
    s = Schedule.from_dict({"graph": "g2", "ops": [
        {"name": "a", "start": 0, "end": 1, "unit": -2},
        {"name": "b", "start": 0, "end": 1, "unit": -2}]})  # fmt: skip
    report = validate(p, s)
    assert [v.kind for v in report.violations] == ["unit", "unit"]


def test_each_stretch_over_a_capacity_is_reported_at_its_highest_level():
    # dma 1: a and b overlap over [1, 2), then c, d and e over [5, 6) (3 > 1, at its highest
    # after two starts at 4 and 5); between them the dma is within its capacity
    g = OpGraph(tuple(Op(x, 2, demands={"units": 0, "dma": 1}) for x in "abcde"))
    p = Problem(g, Machine(units=1, resources={"dma": 1}))
    s = hand(g, rows_at(g, {"a": 0, "b": 1, "c": 4, "d": 5, "e": 5}))
    got = [(v.time, v.ops) for v in validate(p, s).violations if v.kind == "capacity"]
    assert got == [(1.0, ("a", "b")), (5.0, ("c", "d", "e"))]
    assert "used 3 > capacity 1" in validate(p, s).violations[-1].message


@pytest.mark.parametrize("far", [1e10, 1e12 + 0.5, 1e300])
def test_one_op_placed_far_off_widens_no_other_check(far: float) -> None:
    # the tolerance was 1e-9 x the schedule's largest time: one op at 1e10 made it 10, and
    # a, b (a -> b) and c all at 0 on one unit passed
    g = OpGraph((Op("a", 1.5), Op("b", 1.5, deps=("a",)), Op("c", 1.5), Op("late", 0.5)))
    p = Problem(g, Machine(units=1))
    s = Schedule.build(p, {"a": 0, "b": 0, "c": 0, "late": far}, dict.fromkeys("abc", 0) | {
        "late": 0}, solver="hand")  # fmt: skip
    assert {"precedence", "capacity", "unit_overlap"} <= set(validate(p, s).kinds())


def test_float_times_far_past_the_total_duration_keep_a_few_ulps() -> None:
    # a valid schedule whose float times sit at 1e9: each end is its start plus a duration
    # rounded once, and the next op starts there
    g = OpGraph((Op("a", 0.1), Op("b", 0.2, deps=("a",)), Op("c", 0.3, deps=("b",))))
    p = Problem(g, Machine(units=1))
    t0 = 1e9 + 0.7
    t1 = t0 + 0.1
    s = Schedule.build(p, {"a": t0, "b": t1, "c": t1 + 0.2}, dict.fromkeys("abc", 0),
                       solver="hand")  # fmt: skip
    assert validate(p, s).valid
    # but an overlap of a thousandth there is seen (the old tolerance, 1e-9 x 1e9, was 1)
    bad = Schedule.build(p, {"a": t0, "b": t1 - 1e-3, "c": t1 + 0.2}, dict.fromkeys("abc", 0),
                         solver="hand")  # fmt: skip
    assert {"precedence", "unit_overlap"} <= set(validate(p, bad).kinds())


@pytest.mark.parametrize("on_units", [True, False])
def test_unit_and_capacity_checks_share_one_tolerance_per_op(on_units: bool) -> None:
    # past the graph's total duration each op's tolerance is 1,024 ulps of its own times: a
    # ends below 8192 (ulp 2**-40, tolerance 2**-30 ~ 0.93e-9), b ends above it (tolerance
    # 2**-29 ~ 1.86e-9), and b starts 1.5e-9 before a ends. The capacity sweep saw two ops
    # on one unit, while the unit check, which took the larger tolerance of the pair, saw
    # none: the same overlap is now one on both counts
    g = OpGraph((Op("a", 0.4), Op("b", 0.4)))
    p = Problem(g, Machine(units=1))
    sa = 8191.5
    sb = sa + 0.4 - 1.5e-9
    units = {"a": 0, "b": 0} if on_units else {}
    s = hand(g, rows_at(g, {"a": sa, "b": sb}, units))
    kinds = [v.kind for v in validate(p, s).violations]
    assert kinds == (["capacity", "unit_overlap"] if on_units else ["capacity"])
    # an overlap within a's own tolerance is none on either count
    s = hand(g, rows_at(g, {"a": sa, "b": sa + 0.4 - 0.5e-9}, units))
    assert validate(p, s).valid

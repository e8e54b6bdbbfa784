"""The model (durations per type, transfers, bounds) and the independent validator."""

from __future__ import annotations

import pytest

from opsched.errors import ProblemError, ScheduleFormatError
from opsched.hetero import (
    HeteroMachine,
    HeteroProblem,
    HeteroSchedule,
    Link,
    PlacedOp,
    heft,
    roofline_cost,
    validate_hetero,
)
from opsched.hetero.simulate import execute_placement, replay
from opsched.ir import Op, OpGraph


def _problem(bw: float | None = 10, lat: float = 1) -> HeteroProblem:
    g = OpGraph((Op("a", 1, output_bytes=20, attrs={"durations": {"gpu": 1, "cpu": 4}}),
                 Op("b", 2, deps=("a",), attrs={"durations": {"cpu": 2}}),
                 Op("c", 3, deps=("a",))))  # fmt: skip
    return HeteroProblem(g, HeteroMachine.parse("gpu:2,cpu:1", bandwidth=bw, latency=lat))


def test_durations_come_from_attrs_then_cost_then_duration():
    p = _problem()
    assert p.durations.tolist()[:2] == [[1.0, 4.0], [pytest.approx(float("nan"), nan_ok=True),
                                                     2.0]]  # fmt: skip
    assert not p.can_run(1, "gpu") and p.can_run(2, "gpu") and p.duration(2, "cpu") == 3.0
    cost = roofline_cost({"gpu": (100.0, 100.0)})  # ops without a kind keep their duration
    g = OpGraph((Op("m", 9.0, kind="matmul", attrs={"M": 10, "N": 10, "K": 10}), Op("x", 5.0)))
    q = HeteroProblem(g, HeteroMachine.parse("gpu,cpu"), cost=cost)
    # matmul: 2000 flops / 100 = 20, 1200 bytes / 100 = 12 -> 20 on the gpu; cpu not in specs
    assert q.durations.tolist() == [[20.0, 9.0], [5.0, 5.0]]


def test_transfers_cost_between_types_only_and_links_override():
    p = _problem()
    assert p.transfer(0, "gpu", "cpu") == 20 / 10 + 1 == p.transfer(0, "cpu", "gpu")
    assert p.transfer(0, "gpu", "gpu") == 0.0
    m = HeteroMachine.parse("gpu:1,cpu:1,npu:1", bandwidth=10, latency=1)
    m = HeteroMachine(m.devices, m.link, {("npu", "gpu"): Link(None, 0.5)})
    q = HeteroProblem(_problem().graph, m)
    assert q.transfer(0, "gpu", "npu") == 0.5 and q.transfer(0, "cpu", "npu") == 3.0


@pytest.mark.parametrize(
    ("text", "msg"),
    [("gpu:0", "count must be an integer >= 1"), ("gpu:x", "must be an integer"),
     (":3", "TYPE:COUNT"), ("gpu:1,gpu:2", "listed twice")],
)  # fmt: skip
def test_bad_device_lists(text, msg):
    with pytest.raises(ProblemError, match=msg):
        HeteroMachine.parse(text)


def test_op_no_type_can_run_and_bad_durations_name_the_op():
    g = OpGraph((Op("a", 1, attrs={"durations": {"tpu": 1}}),))
    with pytest.raises(ProblemError, match="op 'a': can run on no device type"):
        HeteroProblem(g, HeteroMachine.parse("gpu:1"))
    g = OpGraph((Op("a", 1, attrs={"durations": {"gpu": -1}}),))
    with pytest.raises(ProblemError, match="op 'a': duration on 'gpu'"):
        HeteroProblem(g, HeteroMachine.parse("gpu:1"))
    with pytest.raises(ProblemError, match="bandwidth"):
        Link(0)


def test_lower_bound_by_hand():
    # 3 cpu-only ops of 2 on one cpu: 6 (the gpu cannot help); critical path alone is 2
    g = OpGraph(tuple(Op(f"o{i}", attrs={"durations": {"cpu": 2}}) for i in range(3)))
    assert HeteroProblem(g, HeteroMachine.parse("gpu:4,cpu:1")).lower_bound() == 6.0


def _sched(*ops):
    return HeteroSchedule("g", "hand", "FEASIBLE", [PlacedOp(*o) for o in ops])


def test_validator_accepts_a_hand_schedule_and_rejects_each_broken_rule():
    p = _problem()
    # a gpu 0..1; b waits 1 + 20/10 + 1 = 4, cpu 4..6; c on the other gpu, no transfer
    ok = _sched(("a", 0, 1, "gpu", 0), ("b", 4, 6, "cpu", 0), ("c", 1, 4, "gpu", 1))
    assert validate_hetero(p, ok).valid
    same = _sched(("a", 0, 1, "gpu", 0), ("b", 4, 6, "cpu", 0), ("c", 1, 4, "gpu", 0))
    assert validate_hetero(p, same).valid  # c after a on the same gpu
    cases = {
        "precedence": _sched(("a", 0, 1, "gpu", 0), ("b", 3, 5, "cpu", 0), ("c", 1, 4, "gpu", 1)),
        "overlap": _sched(("a", 0, 1, "gpu", 0), ("b", 4, 6, "cpu", 0), ("c", 0.5, 3.5, "gpu", 0)),
        "duration": _sched(("a", 0, 1, "gpu", 0), ("b", 4, 6, "cpu", 0), ("c", 1, 3, "gpu", 1)),
        "device": _sched(("a", 0, 1, "gpu", 0), ("b", 4, 6, "gpu", 0), ("c", 1, 4, "gpu", 1)),
        "missing": _sched(("a", 0, 1, "gpu", 0), ("b", 4, 6, "cpu", 0)),
        "duplicate": _sched(("a", 0, 1, "gpu", 0), ("b", 4, 6, "cpu", 0), ("c", 1, 4, "gpu", 1),
                            ("c", 1, 4, "gpu", 1)),
        "unknown-op": _sched(("a", 0, 1, "gpu", 0), ("b", 4, 6, "cpu", 0), ("c", 1, 4, "gpu", 1),
                             ("z", 1, 4, "gpu", 1)),
    }  # fmt: skip
    for kind, s in cases.items():
        r = validate_hetero(p, s)
        assert not r.valid and r.violations[0].kind == kind, (kind, r.summary())
    bad_inst = _sched(("a", 0, 1, "gpu", 2), ("b", 4, 6, "cpu", 0), ("c", 1, 4, "gpu", 1))
    assert "there are 2" in str(validate_hetero(p, bad_inst).violations[0])
    wrong = _sched(("a", 0, 1, "gpu", 0), ("b", 4, 6, "cpu", 0), ("c", 1, 4, "gpu", 1))
    wrong.makespan = 5.0
    assert validate_hetero(p, wrong).violations[0].kind == "makespan"


def test_zero_duration_ops_occupy_nothing():
    g = OpGraph((Op("a", 4), Op("z", 0)))
    p = HeteroProblem(g, HeteroMachine.parse("gpu:1"))
    assert validate_hetero(p, _sched(("a", 0, 4, "gpu", 0), ("z", 2, 2, "gpu", 0))).valid


def test_short_ops_and_far_off_ops_are_still_checked():
    # ops of 1e-10 s: an absolute 1e-9 floor had let them overlap on one gpu
    g = OpGraph((Op("a", 1e-10), Op("b", 1e-10)))
    p = HeteroProblem(g, HeteroMachine.parse("gpu:1"))
    both = validate_hetero(p, _sched(("a", 0, 1e-10, "gpu", 0), ("b", 0, 1e-10, "gpu", 0)))
    assert not both.valid and both.violations[0].kind == "overlap"
    apart = _sched(("a", 0, 1e-10, "gpu", 0), ("b", 1e-10, 2e-10, "gpu", 0))
    assert validate_hetero(p, apart).valid
    # one op placed far off: the others are still compared at the graph's scale
    g3 = OpGraph((Op("a", 0.5), Op("b", 0.5), Op("c", 0.5)))
    p3 = HeteroProblem(g3, HeteroMachine.parse("gpu:1"))
    far = _sched(("a", 0, 0.5, "gpu", 0), ("b", 0.25, 0.75, "gpu", 0), ("c", 1e10, 1e10 + 0.5,
                                                                        "gpu", 0))  # fmt: skip
    assert [v.kind for v in validate_hetero(p3, far).violations] == ["overlap"]
    # the scale is the schedule's own work: a slow type or link it does not use loosens nothing
    two = _sched(("a", 0, 1.5, "gpu", 0), ("b", 0.5, 2.0, "gpu", 0))
    slow = OpGraph(
        (
            Op("a", attrs={"durations": {"gpu": 1.5, "cpu": 1e10}}),
            Op("b", deps=("a",), attrs={"durations": {"gpu": 1.5, "cpu": 1e10}}),
        )
    )
    r = validate_hetero(HeteroProblem(slow, HeteroMachine.parse("gpu:1,cpu:1")), two)
    assert [v.kind for v in r.violations] == ["overlap", "precedence"]
    far = OpGraph((Op("a", 1.5, output_bytes=1), Op("b", 1.5, deps=("a",))))
    r = validate_hetero(HeteroProblem(far, HeteroMachine.parse("gpu:1,cpu:1", latency=1e10)), two)
    assert not r.valid
    # rounding a real solver leaves is still accepted: 0.1 + 0.2 against 0.3
    g2 = OpGraph((Op("a", 0.1, attrs={"durations": {"gpu": 0.1}}),
                  Op("b", 0.2, deps=("a",))))  # fmt: skip
    p2 = HeteroProblem(g2, HeteroMachine.parse("gpu:1"))
    assert validate_hetero(p2, _sched(("a", 0, 0.1, "gpu", 0),
                                      ("b", 0.1, 0.1 + 0.2, "gpu", 0))).valid  # fmt: skip


def test_schedule_json_round_trip_and_errors():
    s = heft(_problem())
    back = HeteroSchedule.from_dict(s.to_dict())
    assert back.ops == s.ops and back.makespan == s.makespan and back.status == s.status
    assert list(s.to_frame().columns) == ["name", "start", "end", "duration", "device",
                                          "instance"]  # fmt: skip
    with pytest.raises(ScheduleFormatError, match="instance must be an integer"):
        HeteroSchedule.from_dict({"ops": [{"name": "a", "start": 0, "end": 1, "device": "gpu"}]})
    with pytest.raises(ScheduleFormatError, match="unsupported format"):
        HeteroSchedule.from_dict({"format": "opsched-schedule/1", "ops": []})


def test_replay_keeps_placement_and_retimes():
    p = _problem()
    s = heft(p)
    r = replay(p, s)
    assert r.placement() == s.placement() and r.makespan == s.makespan
    slower = p.durations * 2  # every op twice as long: same placement, later times
    r2 = replay(p, s, slower)
    assert validate_hetero(p, r2).valid is False  # durations differ from the model's
    assert r2.makespan > s.makespan
    with pytest.raises(ScheduleFormatError, match="cycle"):
        # c before a on gpu 0, but c depends on a
        execute_placement(p, [0, 2, 0], [[2, 0], [], [1]])


def test_replay_of_a_zero_duration_op_beside_a_long_one_keeps_its_times():
    # gpu: a [0, 4); cpu: p [0, 1) then b [1, 2); z (no time) reads p and feeds b. Every
    # solver puts z on the gpu at t=1, while a runs (z occupies nothing): makespan 4. A
    # replay that queued z behind a had started z and b at 4 (makespan 5).
    g = OpGraph((Op("a", attrs={"durations": {"gpu": 4}}),
                 Op("p", attrs={"durations": {"cpu": 1}}),
                 Op("z", 0, deps=("p",)),
                 Op("b", deps=("z",), attrs={"durations": {"cpu": 1}})))  # fmt: skip
    p = HeteroProblem(g, HeteroMachine.parse("gpu:1,cpu:1"))
    s = HeteroSchedule("g", "hand", "FEASIBLE", [
        PlacedOp("a", 0, 4, "gpu", 0), PlacedOp("p", 0, 1, "cpu", 0),
        PlacedOp("z", 1, 1, "gpu", 0), PlacedOp("b", 1, 2, "cpu", 0)])  # fmt: skip
    assert validate_hetero(p, s).valid
    r = replay(p, s)
    assert [(o.name, o.start) for o in r.ops] == [("a", 0), ("p", 0), ("z", 1), ("b", 1)]
    assert r.makespan == 4
    # the op after a zero-duration one on its instance still waits for the one before
    assert execute_placement(p, [0, 1, 0, 1], [[0, 2], [1, 3]]).tolist() == [0, 0, 1, 1]
    h = heft(p)
    assert h.makespan == 4 and replay(p, h).makespan == 4

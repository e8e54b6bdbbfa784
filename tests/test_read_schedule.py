"""``opsched.read_schedule``: a schedule file read back is the schedule written, checked again."""

from __future__ import annotations

import pytest

import opsched
from opsched.errors import InputError, ScheduleFormatError


def _problem() -> opsched.Problem:
    return opsched.Problem(opsched.seed_graph(), opsched.Machine(units=2))


def test_round_trip_keeps_every_op_and_recomputes_the_makespan(tmp_path):
    p = _problem()
    s = opsched.solve_cpsat(p, time_limit=10)
    path = tmp_path / "s.json"
    s.to_json(str(path))
    back = opsched.read_schedule(path)
    assert back.makespan == s.makespan == 6.0
    assert back.status is opsched.Status.OPTIMAL
    assert [(o.name, o.start, o.end, o.unit) for o in back.ops] == [
        (o.name, o.start, o.end, o.unit) for o in s.ops
    ]
    assert opsched.validate(p, back).valid


def test_an_edited_file_fails_the_validator(tmp_path):
    p = _problem()
    doc = opsched.greedy(p).to_dict()
    doc["ops"][-1]["start"] = 0  # the last op now starts before its inputs end
    doc["ops"][-1]["end"] = doc["ops"][-1]["start"] + 1
    path = tmp_path / "s.json"
    import json

    path.write_text(json.dumps(doc))
    assert not opsched.validate(p, opsched.read_schedule(path)).valid


def test_not_json_names_the_file_and_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"ops": [\n')
    with pytest.raises(InputError, match=r"bad\.json:2:1: invalid JSON"):
        opsched.read_schedule(path)


def test_not_a_schedule_names_the_file_and_op(tmp_path):
    path = tmp_path / "s.json"
    path.write_text('{"ops": [{"name": "a", "start": 0}]}')
    with pytest.raises(ScheduleFormatError, match=r"s\.json: op 'a' \(ops\[0\]\): missing 'end'"):
        opsched.read_schedule(path)


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match=r"nope\.json"):
        opsched.read_schedule(tmp_path / "nope.json")


def test_unknown_fields_are_refused_not_dropped(tmp_path):
    path = tmp_path / "s.json"
    path.write_text('{"ops": [{"name": "a", "start": 0, "end": 1, "stream": 1}]}')
    with pytest.raises(ScheduleFormatError,
                       match=r"op 'a' \(ops\[0\]\): unknown field\(s\) \['stream'\]; known: end, "
                       r"name, start, unit"):  # fmt: skip
        opsched.read_schedule(path)
    path.write_text('{"ops": [{"name": "a", "start": 0, "end": 1}], "makespn": 1}')
    with pytest.raises(ScheduleFormatError, match=r"unknown top-level field\(s\) \['makespn'\]"):
        opsched.read_schedule(path)
    # every field a written schedule has is read back
    s = opsched.greedy(_problem())
    assert opsched.Schedule.from_dict(s.to_dict()).makespan == s.makespan


def test_the_gap_is_written_for_readers_and_derived_when_read(tmp_path):
    p = _problem()
    s = opsched.greedy(p)
    doc = s.to_dict()
    assert doc["gap"] == s.gap and doc["lower_bound"] is not None
    doc["gap"] = 0.5  # a stale figure: read back from the makespan and bound, not trusted
    back = opsched.Schedule.from_dict(doc)
    assert back.gap == s.gap

"""``opsched import-trace`` end to end on a small trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner, Result

from opsched.cli import main
from opsched.ir.jsonio import read_graph_json
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule
from opsched.validate import validate

from .helpers import TraceBuilder


def _trace(tmp_path: Path) -> Path:
    b = TraceBuilder("GPU-CLI")
    b.cpu("ProfilerStep#1", 0, 100, cat="user_annotation")
    b.cpu("aten::mm", 0, 5, [[8, 4], [4, 2]])
    b.launch("gemm", 1, 0, 10, stream=7)
    b.cpu("aten::relu", 8, 3, [[8, 2]])
    b.launch("relu_kernel", 9, 12, 8, stream=7)
    p = tmp_path / "t.pt.trace.json"
    p.write_text(json.dumps(b.doc()))
    return p


def test_import_trace_writes_graph_schedule_rows(tmp_path: Path) -> None:
    tr = _trace(tmp_path)
    g, s, r = tmp_path / "g.json", tmp_path / "s.json", tmp_path / "r.csv"
    res = CliRunner().invoke(
        main,
        ["import-trace", str(tr), "-o", str(g), "--schedule", str(s), "--rows", str(r), "--json"],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert (out["ops"], out["edges"], out["kernels"], out["makespan_us"]) == (2, 1, 2, 20)
    graph = read_graph_json(g)
    assert graph.names == ["aten::mm#1", "aten::relu#1"] and graph.ops[0].duration == 10
    sched = Schedule.from_dict(json.loads(s.read_text()))
    assert validate(Problem(graph, Machine(units=1)), sched).valid
    rows = pd.read_csv(r)
    assert list(rows["op"]) == ["aten::mm", "aten::relu"] and list(rows["gpu_time_us"]) == [10, 8]


def test_import_trace_errors_write_nothing(tmp_path: Path) -> None:
    tr = _trace(tmp_path)
    g = tmp_path / "g.json"
    res = CliRunner().invoke(main, ["import-trace", str(tr), "-o", str(g), "--step", "3"])
    assert res.exit_code == 2 and "no ProfilerStep#3" in res.output and not g.exists()
    res = CliRunner().invoke(main, ["import-trace", str(tmp_path / "none.json"), "-o", str(g)])
    assert res.exit_code == 2 and "no such file" in res.output and not g.exists()
    res = CliRunner().invoke(main, ["import-trace", str(tr), "-o", str(tmp_path / "g.txt")])
    assert res.exit_code == 2 and "must end with .json" in res.output


def _import_edited(tmp_path: Path, edit: Any) -> Result:
    """Import the small trace after ``edit(events)`` changed its events; the CLI's result."""
    doc = json.loads(_trace(tmp_path).read_text())
    edit(doc["traceEvents"])
    tr, g = tmp_path / "bad.json", tmp_path / "g.json"
    tr.write_text(json.dumps(doc))
    res = CliRunner().invoke(main, ["import-trace", str(tr), "-o", str(g)])
    assert not g.exists()
    return res


def _kernel(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e for e in events if e.get("cat") == "kernel")


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("ProfilerStep#abc", "traceEvents[0] ('ProfilerStep#abc' at ts 0): no step number"),
        ("ProfilerStep#", "traceEvents[0] ('ProfilerStep#' at ts 0): no step number"),
        ("ProfilerStep#-1", "traceEvents[0] ('ProfilerStep#-1' at ts 0): no step number"),
        # Python refuses to parse an int of over 4,300 digits: such a step had ended the import
        # in an internal error, then been read as no step; it is now refused like the others
        ("ProfilerStep#" + "9" * 5000, "traceEvents[0] ('ProfilerStep#9999"),
    ],
)
def test_a_step_annotation_without_a_step_number_is_refused(
    tmp_path: Path, name: str, fragment: str
) -> None:
    # "ProfilerStep#abc" had been read as an ordinary annotation, so the trace had no steps
    def edit(events: list[dict[str, Any]]) -> None:
        events[0]["name"] = name

    res = _import_edited(tmp_path, edit)
    assert res.exit_code == 2 and fragment in res.output, res.output
    assert "no step number after 'ProfilerStep#' (1-18 digits)" in res.output
    assert "internal" not in res.output and len(res.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("device", "abc", "args.device 'abc' is no device id"),
        ("device", -1, "args.device -1 is no device id"),
        ("device", 1.5, "args.device 1.5 is no device id"),
        ("device", None, "args.device None is no device id"),
        ("stream", "x7", "args.stream 'x7' is no stream id"),
        ("stream", [7], "args.stream [7] is no stream id"),
        ("stream", True, "args.stream True is no stream id"),
    ],
)
def test_a_gpu_event_with_a_bad_device_or_stream_is_refused(
    tmp_path: Path, key: str, value: Any, fragment: str
) -> None:
    # a device of "abc" had been read as GPU 0 without a word
    def edit(events: list[dict[str, Any]]) -> None:
        _kernel(events)["args"][key] = value

    res = _import_edited(tmp_path, edit)
    assert res.exit_code == 2, res.output
    assert f"traceEvents[3] ('gemm' at ts 0): {fragment}" in res.output


def test_a_gpu_event_without_args_stream_or_device_reads_tid_and_pid(tmp_path: Path) -> None:
    # Kineto writes the stream in tid and the device in pid as well; a trace that keeps only
    # those (stripped args) is read from them, as before
    doc = json.loads(_trace(tmp_path).read_text())
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            del e["args"]["stream"], e["args"]["device"]
            e["args"]["bytes"] = 0
    tr, g = tmp_path / "t2.json", tmp_path / "g.json"
    tr.write_text(json.dumps(doc))
    res = CliRunner().invoke(main, ["import-trace", str(tr), "-o", str(g), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["kernels"] == 2
    assert read_graph_json(g).ops[0].attrs["stream"] == 7
    # with neither args.stream nor a tid holding a number the event is refused, as before
    _kernel(doc["traceEvents"])["tid"] = "none"
    tr.write_text(json.dumps(doc))
    res = CliRunner().invoke(main, ["import-trace", str(tr), "-o", str(g)])
    assert res.exit_code == 2 and "GPU event without correlation or stream" in res.output


@pytest.mark.parametrize(
    ("index", "name", "fragment"),
    [
        (1, 12, "traceEvents[1] at ts 0: name 12 is not a string"),  # a CPU op
        (2, None, "traceEvents[2] at ts 1: name None is not a string"),  # a runtime call
        (3, ["gemm"], "traceEvents[3] at ts 0: name ['gemm'] is not a string"),  # a kernel
        (3, ..., "traceEvents[3] at ts 0: no name"),
    ],
)
def test_an_event_whose_name_is_not_a_string_is_refused(
    tmp_path: Path, index: int, name: Any, fragment: str
) -> None:
    # a name of 12 had been read as the op "12", and a missing one as ""
    def edit(events: list[dict[str, Any]]) -> None:
        if name is ...:
            del events[index]["name"]
        else:
            events[index]["name"] = name

    res = _import_edited(tmp_path, edit)
    assert res.exit_code == 2 and fragment in res.output, res.output


def test_fields_of_events_of_other_categories_are_not_read(tmp_path: Path) -> None:
    # a flow or GPU annotation is none of ours: an odd name there refuses nothing
    doc = json.loads(_trace(tmp_path).read_text())
    doc["traceEvents"].append({"ph": "X", "cat": "gpu_user_annotation", "name": 5, "ts": 0,
                               "dur": 1, "pid": 0, "tid": 7})  # fmt: skip
    tr, g = tmp_path / "t3.json", tmp_path / "g.json"
    tr.write_text(json.dumps(doc))
    res = CliRunner().invoke(main, ["import-trace", str(tr), "-o", str(g)])
    assert res.exit_code == 0, res.output


def test_a_kernel_without_a_duration_or_past_any_clock_is_refused(tmp_path: Path) -> None:
    # a kernel without "dur" had been dropped without a word, and a ts of 1e300 had become
    # the schedule's makespan
    for key, value in (("dur", None), ("ts", 1e300), ("dur", 1e300)):
        doc = json.loads(_trace(tmp_path).read_text())
        kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
        if value is None:
            del kernel[key]
        else:
            kernel[key] = value
        tr, g = tmp_path / "bad.json", tmp_path / "g.json"
        tr.write_text(json.dumps(doc))
        res = CliRunner().invoke(main, ["import-trace", str(tr), "-o", str(g)])
        assert res.exit_code == 2 and "traceEvents[" in res.output, res.output
        assert ("bad ts/dur" if value is None else "past 1e+18 us") in res.output
        assert not g.exists()

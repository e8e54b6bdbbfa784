"""``opsched import-trace`` end to end on a small trace."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

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


def test_a_step_number_of_thousands_of_digits_is_no_step(tmp_path: Path) -> None:
    # Python refuses to parse an int of over 4,300 digits: such an annotation had ended the
    # import in an internal error; it is now not a step, so the trace has no step to take
    b = TraceBuilder("GPU-CLI")
    b.cpu("ProfilerStep#" + "9" * 5000, 0, 100, cat="user_annotation")
    b.cpu("aten::mm", 0, 5, [[8, 4], [4, 2]])
    b.launch("gemm", 1, 0, 10, stream=7)
    tr, g = tmp_path / "t.pt.trace.json", tmp_path / "g.json"
    tr.write_text(json.dumps(b.doc()))
    res = CliRunner().invoke(main, ["import-trace", str(tr), "-o", str(g), "--step", "1"])
    assert res.exit_code == 2, res.output
    assert "no ProfilerStep annotations" in res.output and "internal" not in res.output
    assert not g.exists()


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

"""Command-line refusals that name their input, and outputs written all or none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from opsched.cli import main
from opsched.datasets import dataset_path
from opsched.demo import branches_graph
from opsched.ir import Op, OpGraph

TRACE = dataset_path("traces/resnet50_v100_step.pt.trace.json.gz")


def invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], prog_name="opsched")


def _refused(r: Result, *phrases: str) -> str:
    """The one-line error of a refused command (exit 2, no traceback), which says ``phrases``."""
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    for p in phrases:
        assert p in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def branches(tmp_path: Path) -> Path:
    path = tmp_path / "branches.json"
    path.write_text(json.dumps(branches_graph().to_dict()))
    return path


@pytest.mark.parametrize(
    ("spec", "phrase"),
    [("units=3", "'units' capacity is set with --units"), ("R=1,R=2", "'R' is given twice"),
     ("R=1", "has no resource 'R' (it names none)")],
)  # fmt: skip
def test_resources_option_refuses_what_would_cap_nothing(branches, spec, phrase):
    for cmd in (("solve", branches), ("pareto", branches)):
        _refused(invoke(*cmd, "--units", 2, "--resources", spec), "--resources", phrase)


def test_resources_option_names_the_graph_resources(tmp_path):
    g = OpGraph([Op("a", 1.0, demands={"gpu": 1}), Op("b", 1.0, deps=("a",), demands={"gpu": 1})])
    path = tmp_path / "g.json"
    path.write_text(json.dumps(g.to_dict()))
    r = invoke("solve", path, "--resources", "GPU=1")
    _refused(r, "no resource 'GPU' (its resources: gpu)")
    r = invoke("solve", path, "--units", 2, "--resources", "gpu=1", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["makespan"] == 2  # one gpu: serial
    # no capacity for a demanded resource: the file is named
    _refused(invoke("solve", path, "--units", 2), str(path), "op 'a'", "'gpu'")


def test_a_solver_refusing_the_problem_names_the_file(branches):
    _refused(invoke("solve", branches, "--units", 2, "--solver", "downsets"),
             str(branches), "needs a memory cap")  # fmt: skip


def test_lns_says_when_it_returns_the_portfolio_schedule(branches):
    r = invoke("solve", branches, "--units", 2, "--solver", "lns", "--memory-cap", "22",
               "--time-limit", 1)  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "opsched: warning: lns not applicable (a memory cap)" in r.stderr
    assert "portfolio" in r.stdout
    quiet = invoke("solve", branches, "--units", 2, "--solver", "lns", "--time-limit", 0.5)
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr


@pytest.mark.parametrize("option", ["--rows", "--schedule"])
def test_import_trace_writes_nothing_when_a_later_output_cannot_be_written(tmp_path, option):
    graph = tmp_path / "g.json"
    bad = tmp_path / "missing" / ("x.csv" if option == "--rows" else "x.json")
    _refused(invoke("import-trace", TRACE, "-o", graph, option, bad), "no such folder")
    assert not graph.exists()
    ok = invoke("import-trace", TRACE, "-o", graph, option, tmp_path / bad.name)
    assert ok.exit_code == 0, ok.output
    assert graph.exists() and (tmp_path / bad.name).exists()

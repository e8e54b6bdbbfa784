"""`opsched solve --devices` and `opsched hetero validate`, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from opsched.cli import main


def invoke(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args], prog_name="opsched",
                              catch_exceptions=False)  # fmt: skip


@pytest.fixture
def graph(tmp_path: Path) -> Path:
    # a (gpu 1 / cpu 5) -> b (cpu only, 2), a -> c (2 anywhere). Link: 10 B / 10 + 1 = 2.
    # Best: a gpu 0..1, c on the gpu 1..3, b cpu 3..5: makespan 5.
    doc = {"format": "opsched-graph/1", "name": "hg", "ops": [
        {"name": "a", "duration": 1, "output_bytes": 10,
         "attrs": {"durations": {"gpu": 1, "cpu": 5}}},
        {"name": "b", "duration": 1, "deps": ["a"], "attrs": {"durations": {"cpu": 2}}},
        {"name": "c", "duration": 2, "deps": ["a"]}]}  # fmt: skip
    p = tmp_path / "hg.json"
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize("solver", ["cpsat", "heft", "cpop"])
def test_solve_with_devices_writes_a_valid_schedule(graph, tmp_path, solver):
    out = tmp_path / f"{solver}.json"
    r = invoke("solve", graph, "-s", solver, "--devices", "gpu:2,cpu:1", "--link-bandwidth",
               10, "--link-latency", 1, "-o", out)  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["format"] == "opsched-hetero-schedule/1" and doc["solver"] == solver
    # CPOP keeps the critical path a -> b on the cpu (a 0..5, b 5..7), and c then ends at 9
    # on either type (gpu: 5 + transfer 2 + 2; cpu: 7 + 2); the others find 5
    assert doc["makespan"] == (9 if solver == "cpop" else 5)
    v = invoke("hetero", "validate", graph, out)
    assert v.exit_code == 0 and v.stdout.startswith("valid: makespan")
    if solver == "cpsat":
        assert "OPTIMAL" in r.stdout and "cpu:0  b[3,5)" in r.stdout
        # each improving schedule on stderr, the optimum last (with the bound known then)
        last = r.stderr.splitlines()[-1].split("] ", 1)[1]
        assert last.startswith("makespan 5 (bound ") and float(last[18:-1]) <= 5
    else:
        assert r.stderr == ""  # the heuristics are instant


def test_validate_reports_a_broken_schedule_with_exit_1(graph, tmp_path):
    out = tmp_path / "s.json"
    assert invoke("solve", graph, "--devices", "gpu:2,cpu:1", "--link-bandwidth", 10,
                  "--link-latency", 1, "-o", out).exit_code == 0  # fmt: skip
    # against a slower link the same schedule breaks the transfer delay of a -> b
    v = invoke("hetero", "validate", graph, out, "--link-latency", 5, "--json")
    assert v.exit_code == 1
    rep = json.loads(v.stdout)
    assert not rep["valid"] and rep["violations"][0]["kind"] == "precedence"


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (["--devices", "gpu:0"], "--devices: device type 'gpu': count must be >= 1, got 0"),
        (["--devices", "gpu:2"], "op 'b': can run on no device type of the machine (gpu)"),
        (["--devices", "gpu:1,cpu:1", "-k", "2"], "--units does not apply with --devices"),
        (["--devices", "gpu:1,cpu:1", "-s", "greedy"], "--solver 'greedy' does not support"),
        (["--devices", "gpu:1,cpu:1", "--link-bandwidth", "0"], "--link-bandwidth: link"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_no_file(graph, tmp_path, args, msg):
    out = tmp_path / "never.json"
    r = invoke("solve", graph, *args, "-o", out)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith("opsched: error: ") and msg in r.stderr
    assert r.stderr.count("\n") == 1 and not out.exists()


def test_solve_without_devices_is_unchanged(graph):
    r = invoke("solve", graph, "-k", "2", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["format"] == "opsched-schedule/1"


def test_validate_takes_the_per_pair_links_the_schedule_records(tmp_path: Path) -> None:
    # the gpu -> npu link moves 1 B per time unit: b must wait 100 after a; the command had
    # rebuilt the machine from the default link alone and passed the schedule
    from opsched.hetero import DeviceType, HeteroMachine, HeteroProblem, Link, validate_hetero
    from opsched.hetero.schedule import HeteroSchedule, PlacedOp
    from opsched.ir import Op, OpGraph
    from opsched.ir.jsonio import write_graph_json

    g = OpGraph((Op("a", 1, output_bytes=100, attrs={"durations": {"gpu": 1}}),
                 Op("b", 1, deps=("a",), attrs={"durations": {"npu": 1}})))  # fmt: skip
    m = HeteroMachine((DeviceType("gpu", 1), DeviceType("cpu", 1), DeviceType("npu", 1)),
                      links={("gpu", "npu"): Link(1.0, 0.0)})  # fmt: skip
    p = HeteroProblem(g, m)
    bad = HeteroSchedule("g", "hand", "FEASIBLE",
                         [PlacedOp("a", 0.0, 1.0, "gpu", 0), PlacedOp("b", 1.0, 2.0, "npu", 0)],
                         m.to_dict())  # fmt: skip
    assert not validate_hetero(p, bad).valid
    write_graph_json(g, tmp_path / "g.json")
    (tmp_path / "s.json").write_text(json.dumps(bad.to_dict()))
    r = invoke("hetero", "validate", tmp_path / "g.json", tmp_path / "s.json")
    assert r.exit_code == 1 and "transfer 100 (gpu -> npu)" in r.output


def test_an_empty_graph_on_devices(tmp_path: Path) -> None:
    (tmp_path / "e.json").write_text('{"ops": []}')
    for solver in ("heft", "cpsat"):
        r = invoke("solve", tmp_path / "e.json", "--devices", "gpu:1", "-s", solver,
                   "-o", tmp_path / "s.json")  # fmt: skip
        assert r.exit_code == 0, r.output
        r = invoke("hetero", "validate", tmp_path / "e.json", tmp_path / "s.json")
        assert r.exit_code == 0 and "valid: makespan 0" in r.output

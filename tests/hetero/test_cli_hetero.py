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
        (
            ["--devices", "gpu:0"],
            "--devices: device type 'gpu': count must be an integer >= 1, got 0",
        ),
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


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        (lambda d: d["machine"]["devices"].update(gpu="2x"),
         "machine.devices: device type 'gpu': count must be an integer >= 1, got '2x'"),
        (lambda d: d["machine"]["devices"].update(gpu=0), "machine.devices: device type 'gpu'"),
        (lambda d: d["machine"].update(devices={"gp:u": 1}),
         "machine.devices: device type name must be a non-empty word"),
        (lambda d: d["machine"]["link"].update(bandwidth=-3),
         "machine.link: link bandwidth must be a finite number > 0, got -3"),
        (lambda d: d["machine"].update(links=[{"between": ["gpu", "tpu"], "bandwidth": 1}]),
         "machine.links[0]: names unknown device type 'tpu'; the machine has gpu, cpu"),
        (lambda d: d["machine"].update(links=[{"between": [["gpu"], "cpu"], "bandwidth": 1}]),
         "machine.links[0]: names unknown device type ['gpu']"),
        (lambda d: d.update(makespn=5),
         "unknown field(s) ['makespn']; known: format, graph, solver, status, makespan"),
        (lambda d: d["ops"][0].update(stream=1),
         "op 'a' (ops[0]): unknown field(s) ['stream']; known: name, start, end, device, inst"),
        (lambda d: d["machine"].update(device={"gpu": 1}),
         "machine: unknown field(s) ['device']; known: devices, link, links"),
        (lambda d: d["machine"]["link"].update(bandwith=1), "machine.link: unknown field(s)"),
    ],
)  # fmt: skip
def test_validate_blames_the_schedule_file_for_its_own_fields(graph, tmp_path, change, phrase):
    # the file's device counts and links had been blamed on --devices / --link-bandwidth, and
    # a misspelt field had been dropped without a word
    out = tmp_path / "s.json"
    assert invoke("solve", graph, "-s", "heft", "--devices", "gpu:2,cpu:1", "--link-bandwidth",
                  10, "-o", out).exit_code == 0  # fmt: skip
    doc = json.loads(out.read_text())
    change(doc)
    out.write_text(json.dumps(doc))
    r = invoke("hetero", "validate", graph, out)
    assert r.exit_code == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert r.stderr.startswith(f"opsched: error: {out}: ") and phrase in r.stderr
    assert "--devices" not in r.stderr and "--link" not in r.stderr


def test_validate_names_the_file_for_its_links_of_types_devices_lacks(tmp_path: Path) -> None:
    doc = {"ops": [{"name": "a", "duration": 1, "attrs": {"durations": {"gpu": 1}}}]}
    (tmp_path / "g.json").write_text(json.dumps(doc))
    sched = {"format": "opsched-hetero-schedule/1", "ops": [
        {"name": "a", "start": 0, "end": 1, "device": "gpu", "instance": 0}],
        "machine": {"devices": {"gpu": 1, "npu": 1},
                    "links": [{"between": ["gpu", "npu"], "bandwidth": 1.0}]}}  # fmt: skip
    (tmp_path / "s.json").write_text(json.dumps(sched))
    assert invoke("hetero", "validate", tmp_path / "g.json", tmp_path / "s.json").exit_code == 0
    r = invoke("hetero", "validate", tmp_path / "g.json", tmp_path / "s.json", "--devices", "gpu")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert f"{tmp_path / 's.json'}: machine.links: link (gpu, npu) names unknown device " \
           "type 'npu' of --devices gpu" in r.stderr  # fmt: skip

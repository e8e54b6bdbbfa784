"""The opsched command line.

Bad input must give exit status 2 and exactly one stderr line ``opsched: error: WHERE: WHAT``
that names the file (and the op), never a traceback, and no output file. Those checks run the
CLI in real subprocesses (all started at once by one module fixture, to stay fast); the rest of
the commands are exercised in-process with click's CliRunner.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from opsched.cli import main
from opsched.datasets import dataset_path, stg_optima

BAD = Path(__file__).resolve().parent / "data" / "bad"
STG = dataset_path("stg/50/rand0000.stg")
SM = dataset_path("psplib/j30/j301_1.sm")


#: Each bad input and what its one error line must contain besides the file name.
CORPUS: dict[str, tuple[str, ...]] = {
    "malformed.json": ("invalid JSON", "Expecting ',' delimiter", ":1:23"),
    "truncated.json": ("invalid JSON", "Unterminated string"),
    "empty.json": ("file is empty",),
    "list.json": ("must be a JSON object, got list",),
    "missing_ops.json": ("missing required field 'ops'",),
    "op_without_name.json": ("ops[1]", "missing required field 'name'"),
    "duplicate_name.json": ("op 'a'", "duplicate op name (ops[0] and ops[2])"),
    "unknown_dep.json": ("op 'b'", "unknown dependency 'ghost'"),
    "cycle3.json": ("dependency cycle: b -> c -> a -> b",),
    "negative_duration.json": ("op 'neg' (ops[1])", "duration must be >= 0, got -1"),
    "nan_duration.json": ("op 'nan_op' (ops[1])", "duration must be finite, got nan"),
    "infinity_duration.json": ("op 'inf_op' (ops[1])", "duration must be finite, got inf"),
    "string_duration.json": ("op 'str_op' (ops[0])", "duration must be a number, got '3'"),
    "output_bytes_2_63.json": ("op 'big' (ops[0])", "output_bytes must be <= 2^62"),
    "fractional_output_bytes.json": ("op 'frac'", "output_bytes must be an integer, got 1.5"),
    "unknown_field.json": ("op 'typo' (ops[0])", "unknown field(s) ['colour']"),
    "wrong_format.json": ("unsupported format 'opsched-graph/2'",),
    "bool_demand.json": ("op 'a' (ops[0])", "demand of 'units' must be an integer, got True"),
    "huge_int_duration.json": ("op 'huge' (ops[0])", "duration must be <= 2^62"),
    "truncated.stg": ("expected 5 task lines", "found 3", "truncated"),
    "non_integer_time.stg": ("line 3", "processing time must be an integer, got '3.5'"),
    "pred_count_mismatch.stg": ("line 4", "task 2 declares 2 predecessors but lists 1"),
    "unknown_pred.stg": ("line 4", "task 2 has unknown predecessor 7"),
    "truncated.sm": ("missing section 'REQUESTS/DURATIONS'", "truncated"),
    "non_integer.sm": ("line 18", "duration must be an integer, got '5.5'"),
    "truncated_at_resources.sm": ("truncated",),
    "unknown_ext.txt": ("unknown graph format '.txt'",),
    "non_utf8.json": ("not UTF-8 text",),
}
#: Files of the folder that are not in CORPUS, with the test that uses them.
OTHER_FILES = {"header_overflow.stg": "test_convert_header_overflow_stg"}

SCHED_OK = {"format": "opsched-schedule/1", "ops": [{"name": "a", "start": 0, "end": 1}]}
GRAPH_A = {"format": "opsched-graph/1", "ops": [{"name": "a", "duration": 1}]}


def corpus_params() -> list[Any]:
    return [pytest.param(name, id=name) for name in CORPUS]


def _argv(*args: object) -> list[str]:
    return [sys.executable, "-m", "opsched.cli", *map(str, args)]


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPSCHED_DEBUG"}
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=env,
        timeout=120,
    )


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with what the subprocess runs need: graphs, schedules, existing outputs."""
    d = tmp_path_factory.mktemp("cli")
    (d / "graph_a.json").write_text(json.dumps(GRAPH_A))
    (d / "sched_malformed.json").write_text('{"ops": [{"name": "a", "start": 0')
    (d / "sched_list.json").write_text("[1, 2]")
    (d / "sched_machine_int.json").write_text(json.dumps({**SCHED_OK, "machine": 5}))
    (d / "sched_resources_int.json").write_text(
        json.dumps({**SCHED_OK, "machine": {"units": 1, "resources": 5}})
    )
    (d / "a_folder").mkdir()
    (d / "keep").mkdir()
    (d / "keep" / "out.json").write_text("precious\n")
    return d


@pytest.fixture(scope="module")
def runs(work: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every subprocess run of this module, started concurrently; keyed by a short label."""
    jobs: dict[str, list[str]] = {}
    for name in CORPUS:
        (work / "out" / name).mkdir(parents=True)
        jobs[f"analyze:{name}"] = _argv("analyze", BAD / name)
        jobs[f"convert:{name}"] = _argv("convert", BAD / name, work / "out" / name / "OUT.json")
    missing = work / "no_such_file.json"
    jobs["analyze:missing"] = _argv("analyze", missing)
    jobs["convert:missing"] = _argv("convert", missing, work / "missing_out.json")
    jobs["analyze:dir"] = _argv("analyze", work / "a_folder")
    jobs["convert:dir"] = _argv("convert", work / "a_folder", work / "dir_out.json")
    jobs["convert:keep"] = _argv("convert", BAD / "cycle3.json", work / "keep" / "out.json")
    jobs["solve:memory_cap"] = _argv(
        "solve", STG, "-s", "greedy", "--units", "4", "--memory-cap", "3 parsecs",
        "-o", work / "cap_out.json",
    )  # fmt: skip
    jobs["analyze:resources"] = _argv("analyze", STG, "--resources", "R1")
    jobs["solve:resources"] = _argv(
        "solve", work / "graph_a.json", "-s", "greedy", "--resources", "R1",
        "-o", work / "res_out.json",
    )  # fmt: skip
    for label in ("malformed", "list", "machine_int", "resources_int"):
        jobs[f"validate:{label}"] = _argv(
            "validate", work / "graph_a.json", work / f"sched_{label}.json"
        )
    jobs["convert:header_overflow"] = _argv(
        "convert", BAD / "header_overflow.stg", work / "overflow_out.json"
    )
    jobs["ok:analyze"] = _argv("analyze", STG, "--json")
    script = shutil.which("opsched")
    if script:
        jobs["script:cycle3"] = [script, "convert", str(BAD / "cycle3.json"), str(work / "s.json")]
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = {key: pool.submit(_run, argv) for key, argv in jobs.items()}
        return {key: f.result() for key, f in futures.items()}


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """Exit 2, empty stdout, one stderr line 'opsched: error: ...' with every fragment."""
    everything = proc.stdout + proc.stderr
    assert "Traceback" not in everything, everything
    assert proc.returncode == 2, everything
    assert proc.stdout == ""
    assert proc.stderr.endswith("\n") and proc.stderr.count("\n") == 1, proc.stderr
    line = proc.stderr.rstrip("\n")
    assert line.startswith("opsched: error: "), line
    assert "internal error" not in line
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    return line


# --------------------------------------------------------------------------------- corpus


def test_corpus_is_complete() -> None:
    """Every file of tests/data/bad is checked, and every file the tables name exists."""
    on_disk = {p.name for p in BAD.iterdir()}
    assert on_disk == set(CORPUS) | set(OTHER_FILES)
    for name in on_disk:
        size = (BAD / name).stat().st_size
        assert size < 2048, name  # one small file each
    assert (BAD / "empty.json").stat().st_size == 0


@pytest.mark.parametrize("name", corpus_params())
def test_analyze_bad_input(runs: dict, name: str) -> None:
    assert_one_line_error(runs[f"analyze:{name}"], str(BAD / name), *CORPUS[name])


@pytest.mark.parametrize("name", corpus_params())
def test_convert_bad_input_writes_nothing(runs: dict, work: Path, name: str) -> None:
    assert_one_line_error(runs[f"convert:{name}"], str(BAD / name), *CORPUS[name])
    out_dir = work / "out" / name
    assert not (out_dir / "OUT.json").exists()
    assert list(out_dir.iterdir()) == []  # no temporary file left behind either


def test_convert_bad_input_keeps_existing_output(runs: dict, work: Path) -> None:
    assert_one_line_error(runs["convert:keep"], "cycle3.json", "dependency cycle")
    assert (work / "keep" / "out.json").read_text() == "precious\n"
    assert [p.name for p in (work / "keep").iterdir()] == ["out.json"]


@pytest.mark.parametrize("name", ["nan_duration.json", "infinity_duration.json"])
def test_nan_error_names_op_or_position(runs: dict, name: str) -> None:
    line = assert_one_line_error(runs[f"analyze:{name}"], str(BAD / name))
    op = "nan_op" if name.startswith("nan") else "inf_op"
    assert op in line or re.search(r"\.json:\d+:\d+: ", line)


def test_missing_file(runs: dict, work: Path) -> None:
    missing = str(work / "no_such_file.json")
    assert_one_line_error(runs["analyze:missing"], missing, "no such file")
    assert_one_line_error(runs["convert:missing"], missing, "no such file")
    assert not (work / "missing_out.json").exists()


@pytest.mark.parametrize("command", ["analyze", "convert"])
def test_directory_as_file(runs: dict, work: Path, command: str) -> None:
    assert_one_line_error(runs[f"{command}:dir"], "a_folder", "is a directory")
    assert not (work / "dir_out.json").exists()


def test_bad_memory_cap(runs: dict, work: Path) -> None:
    assert_one_line_error(runs["solve:memory_cap"], "cannot read size '3 parsecs'")
    assert not (work / "cap_out.json").exists()


def test_bad_resources(runs: dict, work: Path) -> None:
    expected = "--resources: expected NAME=CAPACITY, got 'R1'"
    assert_one_line_error(runs["analyze:resources"], expected)
    assert_one_line_error(runs["solve:resources"], expected)
    assert not (work / "res_out.json").exists()


def test_validate_malformed_schedule(runs: dict, work: Path) -> None:
    sched = str(work / "sched_malformed.json")
    assert_one_line_error(runs["validate:malformed"], sched, "invalid JSON", "Expecting")
    listed = str(work / "sched_list.json")
    assert_one_line_error(runs["validate:list"], listed, "must be a JSON object")


def test_validate_malformed_schedule_names_file_once(runs: dict, work: Path) -> None:
    line = assert_one_line_error(runs["validate:malformed"])
    assert line.count(str(work / "sched_malformed.json")) == 1, line


@pytest.mark.parametrize("label", ["machine_int", "resources_int"])
def test_validate_schedule_with_bad_machine(runs: dict, work: Path, label: str) -> None:
    assert_one_line_error(runs[f"validate:{label}"], str(work / f"sched_{label}.json"))


def test_convert_header_overflow_stg(runs: dict, work: Path) -> None:
    proc = runs["convert:header_overflow"]
    assert "internal error" not in proc.stderr
    assert proc.returncode in (0, 2), proc.stderr


def test_console_script_behaves_the_same(runs: dict, work: Path) -> None:
    if "script:cycle3" not in runs:
        pytest.skip("the opsched console script is not on PATH")
    line = assert_one_line_error(runs["script:cycle3"], str(BAD / "cycle3.json"))
    assert line == runs["convert:cycle3.json"].stderr.rstrip("\n")
    assert not (work / "s.json").exists()


def test_subprocess_success_is_clean(runs: dict) -> None:
    proc = runs["ok:analyze"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    doc = json.loads(proc.stdout)
    assert (doc["ops"], doc["edges"], doc["work"], doc["critical_path"]) == (52, 119, 262, 55)


# --------------------------------------------------------------------------------- in-process


def invoke(*args: object) -> Result:
    return CliRunner().invoke(
        main, [str(a) for a in args], prog_name="opsched", catch_exceptions=False
    )


def invoke_json(*args: object) -> Any:
    r = invoke(*args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_demo_seed_json() -> None:
    doc = invoke_json("demo", "seed")
    assert doc["order"] == ["Input", "Conv1", "BN", "Conv2", "ReLU", "Add", "Output"]
    assert doc["serial"] == 7
    assert doc["critical_path"] == 6
    assert doc["critical_path_ops"] == ["Input", "Conv1", "Conv2", "ReLU", "Add", "Output"]
    assert doc["greedy"] == 6
    assert doc["units"] is None
    assert [o["name"] for o in doc["schedule"]] == doc["order"]
    assert max(o["end"] for o in doc["schedule"]) == 6


def test_demo_seed_text_and_units() -> None:
    r = invoke("demo", "seed")
    assert r.exit_code == 0
    assert "topological order: Input -> Conv1 -> BN -> Conv2 -> ReLU -> Add -> Output" in r.stdout
    assert "serial time:       7" in r.stdout
    assert "critical path:     6" in r.stdout
    assert "greedy schedule:   6  (unlimited units)" in r.stdout
    one = invoke_json("demo", "seed", "--units", "1")
    assert one["greedy"] == 7 and one["units"] == 1


def test_demo_critical_path_json() -> None:
    doc = invoke_json("demo", "critical-path")
    assert doc["before"] == 5
    assert doc["after"] == 3
    assert doc["speedup_percent"] == 40
    assert doc["edges"] == ["A -> B", "A -> C", "B -> D", "C -> E"]
    assert doc["edge_kinds"] == ["RAW"] * 4
    assert doc["before_path"] == ["A", "B", "C", "D", "E"]
    assert len(doc["after_path"]) == 3
    assert max(o["end"] for o in doc["schedule_before"]) == 5
    assert max(o["end"] for o in doc["schedule_after"]) == 3
    r = invoke("demo", "critical-path")
    assert r.stdout.splitlines()[-2:] == [
        "critical path: 5 -> 3, 40% shorter",
        "schedule (unlimited units): 5 -> 3, 40% shorter",
    ]
    # one unit runs one op at a time: the shorter critical path saves nothing there (the
    # last line had claimed "speedup: 40% shorter" under two Gantt charts of length 5)
    one = invoke("demo", "critical-path", "-k", "1")
    assert one.stdout.splitlines()[-2:] == [
        "critical path: 5 -> 3, 40% shorter",
        "schedule (1 unit): 5 -> 5, no shorter",
    ]
    assert "greedy schedule:   7  (1 unit)" in invoke("demo", "seed", "-k", "1").stdout


def test_analyze_stg_json() -> None:
    doc = invoke_json("analyze", STG)
    assert doc["name"] == "rand0000"
    assert doc["ops"] == 52
    assert doc["edges"] == 119
    assert doc["work"] == 262
    assert doc["critical_path"] == 55
    assert doc["critical_path_ops"][0] == "0" and doc["critical_path_ops"][-1] == "51"
    four = invoke_json("analyze", STG, "--units", "4")
    lb = four["lower_bound"]
    assert lb["value"] == 66  # ceil(262 / 4), and the proven optimum on 4 processors
    assert lb["binding"] == "work"
    assert lb["critical_path"] == 55
    assert lb["value"] <= stg_optima(4)["rand0000"][0]


def test_analyze_stg_text() -> None:
    r = invoke("analyze", STG)
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0] == "graph rand0000: 52 ops, 119 edges, work 262"
    assert lines[1].startswith("critical path 55: 0 -> ")


def test_analyze_psplib_json() -> None:
    doc = invoke_json("analyze", SM)
    assert (doc["name"], doc["ops"], doc["critical_path"]) == ("j301_1", 32, 38)


def test_solve_then_validate(tmp_path: Path) -> None:
    sched = tmp_path / "s.json"
    r = invoke("solve", STG, "--solver", "greedy", "--units", "4", "-o", sched)
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("greedy on rand0000: FEASIBLE, makespan ")
    doc = json.loads(sched.read_text())
    assert doc["format"] == "opsched-schedule/1"
    assert doc["graph"] == "rand0000"
    assert doc["machine"]["units"] == 4
    assert len(doc["ops"]) == 52
    assert 66 <= doc["makespan"] <= 262
    assert doc["makespan"] == max(o["end"] for o in doc["ops"])

    ok = invoke("validate", STG, sched, "--units", "4")
    assert ok.exit_code == 0, ok.output
    assert ok.stdout.strip() == f"valid: makespan {doc['makespan']}, peak memory 0 B"
    report = invoke("validate", STG, sched, "--units", "4", "--json")
    assert report.exit_code == 0
    assert json.loads(report.stdout) == {
        "valid": True,
        "checked": True,
        "makespan": doc["makespan"],
        "peak_memory": 0,
        "violations": [],
        "machine": {"units": 4, "resources": {}, "memory_cap": None},
    }
    # the machine recorded in the schedule is the default
    assert invoke("validate", STG, sched).exit_code == 0


def test_validate_reports_broken_precedence(tmp_path: Path) -> None:
    sched = tmp_path / "s.json"
    assert invoke("solve", STG, "-s", "greedy", "--units", "4", "-o", sched).exit_code == 0
    doc = json.loads(sched.read_text())
    ops = {o["name"]: o for o in doc["ops"]}
    # op 5 depends on op 1 (9 long, so it ends at 9 or later): start 5 at time 0
    assert ops["1"]["end"] >= 9
    moved = ops["5"]
    duration = moved["end"] - moved["start"]
    moved["start"], moved["end"] = 0, duration
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(doc))

    r = invoke("validate", STG, broken, "--units", "4")
    assert r.exit_code == 1
    assert r.stdout.startswith("invalid: ")
    expected = f"op '5' starts at 0 before its dependency '1' ends at {ops['1']['end']}"
    assert f"[precedence] at t=0 {expected}" in r.stdout

    j = invoke("validate", STG, broken, "--units", "4", "--json")
    assert j.exit_code == 1
    report = json.loads(j.stdout)
    assert report["valid"] is False
    prec = [v for v in report["violations"] if v["kind"] == "precedence"]
    assert prec == [{"kind": "precedence", "message": expected, "ops": ["1", "5"], "time": 0}]


@pytest.mark.parametrize(
    ("schedule", "fragment"),
    [
        ({"ops": 5}, "missing list 'ops'"),
        ({"format": "x", "ops": []}, "unsupported format 'x'"),
        ({"ops": [{"start": 0}]}, "ops[0]: each entry needs a string 'name'"),
        ({"ops": [{"name": "a", "start": "0"}]}, "op 'a' (ops[0]): start must be a finite number"),
        (
            {"ops": [{"name": "a", "start": 0, "unit": 1.5}]},
            "unit must be an integer in [-2**62, 2**62) or null",
        ),
        ({"ops": [{"name": "a", "start": 0}]}, "op 'a' (ops[0]): missing 'end'"),
        ({**SCHED_OK, "status": "MEH"}, "unknown status 'MEH'"),
        ({**SCHED_OK, "machine": {"units": 0}}, "machine.units must be a positive integer"),
        # reported figures were read unchecked: a string lower bound was an internal error
        ({**SCHED_OK, "lower_bound": "x"}, "lower_bound must be a finite number, got 'x'"),
        ({**SCHED_OK, "wall_time_s": [1]}, "wall_time_s must be a finite number"),
        ({**SCHED_OK, "peak_memory": 2.5}, "peak_memory must be a whole number of bytes"),
    ],
)
def test_validate_bad_schedule_documents(tmp_path: Path, schedule: Any, fragment: str) -> None:
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(GRAPH_A))
    sched = tmp_path / "s.json"
    sched.write_text(json.dumps(schedule))
    r = invoke("validate", graph, sched)
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1
    assert r.stderr.startswith(f"opsched: error: {sched}: ")
    assert fragment in r.stderr


def test_validate_unknown_and_missing_ops(tmp_path: Path) -> None:
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(GRAPH_A))
    sched = tmp_path / "s.json"
    sched.write_text(json.dumps({"ops": [{"name": "zz", "start": 0, "end": 0}]}))
    r = invoke("validate", graph, sched, "--json")
    assert r.exit_code == 1
    kinds = [v["kind"] for v in json.loads(r.stdout)["violations"]]
    assert kinds == ["unknown_op", "missing_op"]


@pytest.mark.parametrize("source", [STG, SM])
def test_convert_then_analyze_gives_same_numbers(tmp_path: Path, source: Path) -> None:
    out = tmp_path / "out.json"
    r = invoke("convert", source, out)
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(f"wrote {out}: {source.stem}: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
    doc = json.loads(out.read_text())
    assert doc["format"] == "opsched-graph/1" and doc["name"] == source.stem
    assert invoke_json("analyze", out) == invoke_json("analyze", source)
    assert invoke_json("analyze", out, "--units", "3") == invoke_json(
        "analyze", source, "--units", "3"
    )
    # a second conversion of the JSON gives the same document
    again = tmp_path / "again.json"
    assert invoke("convert", out, again).exit_code == 0
    assert json.loads(again.read_text()) == doc


def test_convert_rejects_non_json_target(tmp_path: Path) -> None:
    r = invoke("convert", STG, tmp_path / "out.txt")
    assert r.exit_code == 2
    assert r.stderr == (
        f"opsched: error: {tmp_path / 'out.txt'}: can only write opsched-graph/1 JSON (.json), "
        "not '.txt'\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_convert_into_missing_folder(tmp_path: Path) -> None:
    target = tmp_path / "nope" / "out.json"
    r = invoke("convert", STG, target)
    assert r.exit_code == 2
    assert r.stderr.startswith(f"opsched: error: {target}: cannot write")
    assert r.stderr.count("\n") == 1


def test_solvers_listing() -> None:
    listed = invoke_json("solvers")
    assert {"serial", "greedy", "greedy-blevel"} <= set(listed)
    for name in ("serial", "greedy", "greedy-blevel"):
        assert listed[name]["exact"] is False
        assert isinstance(listed[name]["description"], str) and listed[name]["description"]
    assert listed["greedy"]["description"].startswith("event-driven ready-set scheduling")
    r = invoke("solvers")
    assert r.exit_code == 0
    assert [line.split()[0] for line in r.stdout.splitlines()] == list(listed)


def test_solve_unknown_solver(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    r = invoke("solve", STG, "-s", "no-such-solver", "-o", out)
    assert r.exit_code == 2
    assert r.stderr.startswith("opsched: error: unknown solver 'no-such-solver'")
    assert r.stderr.count("\n") == 1
    assert not out.exists()


def test_solve_heuristics_on_the_seed_graph(tmp_path: Path) -> None:
    from opsched.demo import seed_graph

    graph = tmp_path / "seed.json"
    graph.write_text(json.dumps(seed_graph().to_dict()))
    greedy = invoke_json("solve", graph, "-s", "greedy", "--units", "2")
    assert greedy["graph"] == "seed-demo"
    assert greedy["solver"] == "greedy"
    assert greedy["makespan"] == 6
    assert [o["name"] for o in greedy["ops"]] == [
        "Input", "Conv1", "BN", "Conv2", "ReLU", "Add", "Output"
    ]  # fmt: skip
    serial = invoke_json("solve", graph, "-s", "serial", "--units", "2")
    assert serial["makespan"] == 7
    assert sorted((o["start"], o["end"]) for o in serial["ops"]) == [(i, i + 1) for i in range(7)]


def test_version() -> None:
    r = invoke("--version")
    assert r.exit_code == 0
    assert r.stdout.strip() == "opsched, version 0.1.0"


def _command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            out += _command_paths(cmd, (*prefix, name))
        else:
            out.append((*prefix, name))
    return out


COMMANDS = _command_paths(main)


def test_command_list() -> None:
    assert set(COMMANDS) >= {
        (),
        ("analyze",),
        ("convert",),
        ("demo",),
        ("demo", "critical-path"),
        ("demo", "seed"),
        ("quick",),
        ("solve",),
        ("solvers",),
        ("validate",),
    }


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "opsched")
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help(path: tuple[str, ...], flag: str) -> None:
    r = invoke(*path, flag)
    assert r.exit_code == 0, r.output
    usage = " ".join(("opsched", *path))
    assert r.stdout.startswith(f"Usage: {usage}")
    assert r.stderr == ""

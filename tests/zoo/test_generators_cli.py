"""``opsched generate``: files, the planted schedule, one-line errors with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.importers import read_graph
from opsched.schedule import Schedule
from opsched.zoo.generate_commands import GENERATORS


def run(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("kind", [k for k in GENERATORS if k not in ("seed", "critical-path")])
def test_every_random_kind_writes_the_requested_size(kind: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "g.json"
    r = run("generate", kind, "--ops", "25", "--seed", "3", "-o", str(out), "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    g = read_graph(out)
    assert g.num_ops == doc["ops"] == 25 and g.num_edges == doc["edges"]
    again = tmp_path / "again.json"
    run("generate", kind, "--ops", "25", "--seed", "3", "-o", str(again))
    assert again.read_text() == out.read_text()


def test_planted_with_schedule_validates(tmp_path) -> None:  # type: ignore[no-untyped-def]
    g, s = tmp_path / "p.json", tmp_path / "s.json"
    r = run("generate", "planted", "--ops", "40", "--units", "3", "--memory", "-o", str(g),
            "--schedule", str(s), "--json")  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    sched = Schedule.from_dict(json.loads(s.read_text()))
    assert sched.makespan == doc["makespan"] == read_graph(g).work / 3
    r = run("validate", str(g), str(s), "-k", "3", "--memory-cap", str(doc["memory_cap"]))
    assert r.exit_code == 0, r.output
    # one byte less memory: the planted schedule no longer fits
    r = run("validate", str(g), str(s), "-k", "3", "--memory-cap", str(doc["memory_cap"] - 1))
    assert r.exit_code == 1


def test_examples(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "seed.json"
    assert run("generate", "seed", "-o", str(out)).exit_code == 0
    assert read_graph(out).num_ops == 7
    out = tmp_path / "cp.json"
    assert run("generate", "critical-path", "-o", str(out)).exit_code == 0
    assert read_graph(out).num_edges == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["generate", "seed", "--ops", "5"], "has 7 ops"),
        # the examples are fixed graphs: --seed had been ignored in silence
        (["generate", "seed", "--seed", "3"], "--seed does not apply to the seed example"),
        (["generate", "critical-path", "-s", "0"], "--seed does not apply to the critical-path"),
        (["generate", "gnp", "--ops", "5", "--units", "2"], "--units is for the planted"),
        (["generate", "layered"], "--ops is required"),
        (["generate", "planted", "--ops", "2", "--units", "3"], "at least 3 ops"),
        (["generate", "fork-join", "--ops", "9", "--p", "0.5"], "--p is for the gnp"),
        (["generate", "gnp", "--ops", "9", "--schedule", "s.json"], "--schedule is for"),
        # --avg-deps only sets gnp's default --p: beside --p it had been ignored in silence
        (["generate", "gnp", "--ops", "9", "--p", "0.5", "--avg-deps", "3"], "not both"),
    ],
)
def test_errors_exit_2_without_output(args: list[str], message: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "g.json"
    r = run(*args, "-o", str(out))
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output
    assert not out.exists()


def test_max_duration_help_matches_planted_durations(tmp_path: Path) -> None:
    # planted cuts [0, L) at random points, so one duration can exceed --max-duration (the
    # mean is about (1 + max) / 2); the help had said "integers in [1, max]" for all but
    # network, with a garbled note for planted
    out = tmp_path / "p.json"
    r = run("generate", "planted", "--ops", "400", "--max-duration", "10", "-o", str(out))
    assert r.exit_code == 0, r.output
    d = read_graph(out).durations
    assert d.max() > 10 and abs(d.mean() - 5.5) < 0.01  # 4 units x L = 550, 400 ops
    text = " ".join(run("generate", "--help").output.split())
    assert "planted: they average about (1 + max) / 2, and one may exceed max" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "g.onnx"], "-o is written as JSON and must end with .json, not '.onnx'"),
        (["-o", "g"], "-o is written as JSON and must end with .json, not 'no extension'"),
        (["-o", "g.json", "--schedule", "s.txt"], "--schedule is written as JSON"),
    ],
)
def test_outputs_must_be_json_files(args: list[str], message: str, tmp_path: Path) -> None:
    # the graph is JSON whatever the name: written as g.onnx it was then read as ONNX and
    # refused ("not an ONNX model"); zoo export and fuse already refused such a name
    paths = [str(tmp_path / a) if a.startswith(("g", "s.")) else a for a in args]
    r = run("generate", "planted", "--ops", "12", "--units", "2", *paths)
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []

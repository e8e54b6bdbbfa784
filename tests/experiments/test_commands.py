"""``opsched bench`` and ``opsched results``: output files, JSON, one-line errors."""

from __future__ import annotations

import json

import pandas as pd
from click.testing import CliRunner

from opsched.cli import main

TOML = """
[experiment]
name = "cli"
[[graphs]]
generate = "gnp"
ops = 6
count = 2
[machines]
units = [2]
[schedulers]
names = ["greedy", "serial"]
"""


def test_bench_then_results_csv_and_parquet(tmp_path) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text(TOML)
    db = tmp_path / "r.sqlite"
    r = CliRunner().invoke(main, ["bench", str(exp), "--db", str(db), "--workers", "1", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output[r.output.index("{") :])
    assert (doc["jobs"], doc["ran"], doc["statuses"]) == (4, 4, {"FEASIBLE": 4})
    r = CliRunner().invoke(main, ["results", str(db), "-o", str(tmp_path / "r.csv")])
    assert r.exit_code == 0 and "4 rows" in r.output
    csv = pd.read_csv(tmp_path / "r.csv")
    assert len(csv) == 4 and set(csv["scheduler"]) == {"greedy", "serial"}
    # serial on a 6-op graph: the makespan is the total work
    assert (csv.loc[csv["scheduler"] == "serial", "makespan"] >= csv.loc[
        csv["scheduler"] == "greedy", "makespan"].to_numpy()).all()  # fmt: skip
    out = tmp_path / "r.data"
    r = CliRunner().invoke(main, ["results", str(db), "--format", "parquet", "-o", str(out)])
    assert r.exit_code == 0, r.output
    pq = pd.read_parquet(out)
    assert pq["job_id"].tolist() == csv["job_id"].tolist()


def test_one_line_errors_and_no_files(tmp_path) -> None:
    exp = tmp_path / "e.toml"
    exp.write_text(TOML.replace('"serial"', '"magic"'))
    db = tmp_path / "r.sqlite"
    r = CliRunner().invoke(main, ["bench", str(exp), "--db", str(db)])
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        f"opsched: error: {exp}: schedulers.names[1]: unknown scheduler 'magic'; known: "
        + r.output.split("known: ")[1].strip()
    ]
    assert not db.exists()  # nothing written for a bad experiment
    r = CliRunner().invoke(main, ["results", str(db), "-o", str(tmp_path / "x.csv")])
    assert r.exit_code == 2 and "no such results database" in r.output
    assert not (tmp_path / "x.csv").exists()
    r = CliRunner().invoke(main, ["bench", str(exp), "--db", str(db), "--cluster", "tcp://x"])
    assert r.exit_code == 2


def test_results_to_a_folder_that_is_a_file_is_one_line(tmp_path) -> None:
    # the path was first checked when written, where NotADirectoryError had escaped as an
    # internal error
    exp = tmp_path / "e.toml"
    exp.write_text(TOML)
    db = tmp_path / "r.sqlite"
    assert CliRunner().invoke(main, ["bench", str(exp), "--db", str(db), "-q"]).exit_code == 0
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" / "x.csv"
    r = CliRunner().invoke(main, ["results", str(db), "-o", str(out)])
    assert r.exit_code == 2, r.output
    assert r.output.strip() == f"opsched: error: {out}: '{out.parent}' is not a folder"
    assert (tmp_path / "afile").read_text() == "x"

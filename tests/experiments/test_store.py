"""The SQLite store: WAL, schema version, one result per job, refusing foreign files."""

from __future__ import annotations

import sqlite3

import pytest

from opsched.errors import InputError
from opsched.experiments.config import parse_config
from opsched.experiments.jobs import expand_jobs, load_graphs
from opsched.experiments.store import SCHEMA_VERSION, ResultStore, load_results

CFG = parse_config(
    '[experiment]\nname="s"\n[[graphs]]\ngenerate="gnp"\nops=5\ncount=2\n[machines]\n'
    'units=[2]\n[schedulers]\nnames=["greedy","serial"]',
    "s.toml",
)


def _filled(path):
    graphs = load_graphs(CFG)
    jobs = expand_jobs(CFG, graphs)
    store = ResultStore(path)
    store.register(CFG, jobs, graphs)
    store.register(CFG, jobs, graphs)  # registering again changes nothing
    return store, jobs


def test_wal_schema_and_exactly_once(tmp_path) -> None:
    store, jobs = _filled(tmp_path / "r.sqlite")
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.schema_version() == SCHEMA_VERSION
    assert store.conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 4
    row = {"status": "FEASIBLE", "valid": True, "makespan": 7.0, "peak_memory": 0}
    assert store.record(jobs[0].job_id, "run1", row) is True
    assert store.record(jobs[0].job_id, "run2", row | {"makespan": 1.0}) is False
    assert store.finished_ids("s") == {jobs[0].job_id}
    assert store.finished_ids("other") == set()
    store.close()
    df = load_results(tmp_path / "r.sqlite")
    assert len(df) == 1
    r = df.iloc[0]
    assert (r["run_id"], r["makespan"], r["valid"], r["scheduler"]) == (
        "run1", 7.0, True, jobs[0].scheduler)  # fmt: skip
    assert "schedule" not in df.columns
    assert "schedule" in load_results(tmp_path / "r.sqlite", schedules=True).columns


def test_refuses_foreign_and_newer_files(tmp_path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(InputError, match="not an SQLite database"):
        ResultStore(junk)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE t (x)")
    with pytest.raises(InputError, match="not an opsched results store"):
        ResultStore(other)
    newer = tmp_path / "newer.sqlite"
    ResultStore(newer).close()
    with sqlite3.connect(newer) as c:
        c.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(InputError, match="schema version 99"):
        ResultStore(newer)
    with pytest.raises(InputError, match="no such results database"):
        load_results(tmp_path / "missing.sqlite")
    assert not (tmp_path / "missing.sqlite").exists()


def test_a_crashed_job_runs_again_and_its_rerun_replaces_it(tmp_path) -> None:
    from opsched.experiments.worker import CRASHED, error_result

    store, jobs = _filled(tmp_path / "r.sqlite")
    a, b = jobs[0].job_id, jobs[1].job_id
    assert store.record(a, "run1", error_result("ERROR", CRASHED + "worker process died (-9)"))
    assert store.record(b, "run1", error_result("ERROR", "ValueError: the scheduler's own"))
    assert store.finished_ids("s") == {b}  # the crash is no result: the next run redoes it
    ok = {"status": "FEASIBLE", "valid": True, "makespan": 7.0, "peak_memory": 0}
    assert store.record(a, "run2", ok) is True
    assert store.record(b, "run2", ok) is False  # a real error stands
    assert store.finished_ids("s") == {a, b}
    rows = dict(store.conn.execute("SELECT job_id, run_id || ':' || status FROM results"))
    assert rows == {a: "run2:FEASIBLE", b: "run1:ERROR"}
    store.close()

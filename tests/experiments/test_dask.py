"""The Dask executor against a real ``dask scheduler`` and ``dask worker`` processes.

The fixture uses the scheduler named by ``OPSCHED_DASK_SCHEDULER`` when set (CI starts one
with two workers) and otherwise starts its own scheduler and two workers on 127.0.0.1. Either
way it starts one more worker of its own, which the test kills mid-run.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("distributed")

import contextlib

from opsched.experiments import load_results, parse_config, run_experiment

REPO = Path(__file__).resolve().parents[2]
ENV = os.environ | {"PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "dask", *args],
        env=ENV,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _kill(p: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, signal.SIGKILL)
    p.wait()


def _worker(addr: str) -> subprocess.Popen[bytes]:
    return _start("worker", addr, "--nthreads", "1", "--nworkers", "1", "--no-dashboard")


def _wait_workers(addr: str, n: int, timeout: float = 90.0) -> None:
    from distributed import Client

    with Client(addr, timeout="60s") as c:
        c.wait_for_workers(n, timeout=timeout)


@pytest.fixture(scope="module")
def dask_cluster() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    addr = os.environ.get("OPSCHED_DASK_SCHEDULER")
    owned: list[subprocess.Popen[bytes]] = []
    try:
        if not addr:
            port = _free_port()
            addr = f"tcp://127.0.0.1:{port}"
            owned.append(
                _start("scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard")
            )
            owned.append(_worker(addr))
        mine = _worker(addr)  # the one the test may kill
        owned.append(mine)
        _wait_workers(addr, 2)
        yield addr, mine
    finally:
        for p in reversed(owned):
            _kill(p)


TOML = """
[experiment]
name = "dask"
[[graphs]]
generate = "layered"
ops = 22
count = 10
[machines]
units = [2]
memory_cap = [0.85, 0.7]
[schedulers]
names = ["cpsat", "greedy-blevel"]
time_limit = 1
"""


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
            return int(c.execute("SELECT count(*) FROM results").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def test_all_results_arrive_when_a_worker_dies(dask_cluster, tmp_path) -> None:
    addr, victim = dask_cluster
    db = tmp_path / "r.sqlite"
    cfg = parse_config(TOML)
    out: dict[str, object] = {}

    def go() -> None:
        try:
            out["summary"] = run_experiment(cfg, db, cluster=addr, progress=False)
        except BaseException as e:  # pragma: no cover - reported below
            out["error"] = e

    t = threading.Thread(target=go)
    t.start()
    deadline = time.monotonic() + 120
    while _count(db) < 3 and t.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    at_kill = _count(db)
    _kill(victim)  # the worker and its nanny, mid-run
    t.join(timeout=300)
    assert not t.is_alive() and "error" not in out, out.get("error")
    assert 3 <= at_kill < 40, "the worker should have died mid-run"
    summary = out["summary"]
    df = load_results(db)
    assert summary.ran == 40 and len(df) == 40 and df["job_id"].is_unique  # type: ignore[attr-defined]
    errors = df.loc[~df["status"].isin(["OPTIMAL", "FEASIBLE", "UNKNOWN", "INFEASIBLE"]), "error"]
    assert errors.empty, errors.tolist()  # a job lost with the worker is run again, not failed
    assert df.loc[df["status"].isin(["OPTIMAL", "FEASIBLE"]), "valid"].all()
    assert (df["run_id"] == summary.run_id).all()  # type: ignore[attr-defined]


@pytest.mark.parametrize("address", ["localhost", "tcp://host-without-port", "foo://h:1"])
def test_a_malformed_cluster_address_is_one_line_and_writes_nothing(tmp_path, address) -> None:
    # Client() raises ValueError for these, which had ended bench with an internal error
    # after the store was made and the experiment registered in it
    from click.testing import CliRunner

    from opsched.cli import main

    exp = tmp_path / "e.toml"
    exp.write_text(TOML)
    db = tmp_path / "r.sqlite"
    r = CliRunner().invoke(main, ["bench", str(exp), "--db", str(db), "--cluster", address])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [r.output.strip()]
    assert r.output.startswith(f"opsched: error: --cluster {address!r}: "), r.output
    assert "internal error" not in r.output
    assert not db.exists()


def test_a_scheduler_out_of_reach_records_no_run(tmp_path, monkeypatch) -> None:
    # the run was recorded before the executor first connected: each failed try left a run
    # that ran nothing in the store, listed in every report's machines and versions
    from opsched.errors import OpschedError
    from opsched.experiments import ResultStore
    from opsched.experiments.executors import DaskExecutor

    def unreachable(self):
        raise OpschedError(f"cannot reach the Dask scheduler at {self.address}: timed out")

    monkeypatch.setattr(DaskExecutor, "_client", unreachable)
    db = tmp_path / "r.sqlite"
    with pytest.raises(OpschedError, match="cannot reach"):
        run_experiment(parse_config(TOML), db, cluster="tcp://127.0.0.1:9", progress=False)
    with ResultStore(db) as store:
        assert store.runs() == []


def test_a_cancelled_future_is_a_crash_that_runs_again(monkeypatch) -> None:
    # a future the scheduler cancels (it restarted, or dropped this client) had been stored
    # as the job's own error, which a resumed run keeps instead of running the job again
    import distributed
    from distributed.client import FutureCancelledError

    from opsched.experiments.executors import DaskExecutor

    class Fut:
        def __init__(self, key: str) -> None:
            self.key = key

        def result(self) -> object:
            if self.key.startswith("opsched-b-"):
                raise FutureCancelledError(self.key, reason="scheduler-restart")
            return {"status": "OPTIMAL"}

        def release(self) -> None:
            pass

    class Client:
        cluster = None

        def submit(self, fn, payload, key, pure):
            return Fut(key)

        def close(self) -> None:
            pass

    monkeypatch.setattr(distributed, "as_completed", iter)
    ex = DaskExecutor(address="tcp://127.0.0.1:1", tag="t")
    monkeypatch.setattr(ex, "_client", Client)
    got = {o.key: o for o in ex.run([("a", None, None), ("b", None, None)])}
    assert got["a"].kind == "ok"
    assert got["b"].kind == "crash" and "FutureCancelledError" in str(got["b"].value)

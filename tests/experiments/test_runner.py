"""Running experiments: validated results, failures recorded, resume, kill -9, deadlines."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from opsched.experiments import load_results, parse_config, run_experiment
from opsched.experiments.executors import LocalExecutor
from opsched.heuristics import greedy
from opsched.ir.jsonio import graph_from_dict
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule
from opsched.validate import validate
from opsched.zoo.generators import layered

REPO = Path(__file__).resolve().parents[2]

# The exact solvers prove these 8-op instances in well under a second; the limit is wide so
# that a loaded machine (a CI run beside benchmarks timed out two of them at 5 s) still
# proves them, and only a job that never finishes would wait it out.
SMALL = """
[experiment]
name = "small"
[[graphs]]
generate = "layered"
ops = 8
count = 2
[[graphs]]
generate = "layered"
ops = 12
seed = 7
[machines]
units = [2]
memory_cap = ["none", 0.8]
[schedulers]
names = {names}
time_limit = 30
"""


def test_results_are_validated_and_exact_solvers_agree(tmp_path) -> None:
    cfg = parse_config(SMALL.format(names='["cpsat", "brute-force", "greedy-blevel"]'))
    s = run_experiment(cfg, tmp_path / "r.sqlite", workers=2, progress=False)
    assert (s.jobs, s.skipped, s.ran) == (16, 0, 16)
    df = load_results(tmp_path / "r.sqlite", schedules=True)
    assert len(df) == 16 and df["job_id"].is_unique
    # brute force cannot take the 12-op graph: those two jobs are left out, not failed
    assert s.left_out == {"brute-force: graphs of more than 10 ops": 2}
    assert not (df["status"] == "ERROR").any()
    # recompute everything independently from the stored schedule
    from opsched.experiments.store import ResultStore

    with ResultStore(tmp_path / "r.sqlite") as store:
        for _, r in df[df["valid"] == True].iterrows():  # noqa: E712
            graph = graph_from_dict(store.graph_json(r["graph_hash"]))
            base = Problem(graph, Machine(units=2))
            peak0 = greedy(base, "b-level").peak_memory
            assert r["unconstrained_peak"] == peak0
            cap = None if np.isnan(r["cap_fraction"]) else int(r["cap_fraction"] * peak0)
            assert (r["memory_cap"] if r["memory_cap"] == r["memory_cap"] else None) == cap
            p = Problem(graph, Machine(units=2, memory_cap=cap))
            rep = validate(p, Schedule.from_dict(json.loads(r["schedule"])))
            assert rep.valid
            assert (rep.makespan, rep.peak_memory) == (r["makespan"], r["peak_memory"])
    # on the four 8-op instances both exact solvers prove the same thing
    small = df[(df["num_ops"] == 8) & (df["scheduler"] != "greedy-blevel")]
    verdict = small.pivot_table(
        index="instance_id", columns="scheduler", values="status", aggfunc="first"
    )
    assert len(verdict) == 4 and (verdict["cpsat"] == verdict["brute-force"]).all()
    assert set(verdict["cpsat"]) <= {"OPTIMAL", "INFEASIBLE"}
    opt = df[df["status"] == "OPTIMAL"].pivot_table(
        index="instance_id", columns="scheduler", values="makespan"
    )
    both = opt.dropna()
    assert len(both) >= 2 and (both["cpsat"] == both["brute-force"]).all()
    heur = df[df["scheduler"] == "greedy-blevel"].set_index("instance_id")["makespan"]
    for inst, row in opt.iterrows():
        if inst in heur and heur[inst] == heur[inst]:
            assert heur[inst] >= row["cpsat"]


def test_resume_runs_only_new_jobs(tmp_path) -> None:
    db = tmp_path / "r.sqlite"
    first = run_experiment(
        parse_config(SMALL.format(names='["greedy"]')), db, workers=1, progress=False
    )
    assert first.ran == 6
    again = run_experiment(
        parse_config(SMALL.format(names='["greedy", "serial"]')), db, workers=1, progress=False
    )
    assert (again.jobs, again.skipped, again.ran) == (12, 6, 6)
    df = load_results(db)
    assert len(df) == 12
    assert df.groupby("run_id").size().sort_values().tolist() == [6, 6]


def test_local_executor_kills_at_deadline_and_survives_crashes() -> None:
    # fork: quick to start, and these builtins need no imports (the runner itself uses spawn)
    ex = LocalExecutor(workers=2, fn=time.sleep, start_method="fork")
    t0 = time.monotonic()
    out = {o.key: o for o in ex.run([("slow", 60, 1.0), ("a", 0, 30.0), ("b", 0.1, 30.0)])}
    assert time.monotonic() - t0 < 30
    assert out["slow"].kind == "timeout" and out["a"].kind == out["b"].kind == "ok"
    crash = {o.key: o for o in LocalExecutor(1, os._exit, "fork").run([("x", 3, 30.0)])}
    assert crash["x"].kind == "crash" and "exit code 3" in crash["x"].value
    errs = {
        o.key: o for o in LocalExecutor(1, int, "fork").run([("y", "nan?", 30.0), ("z", "4", 9)])
    }
    assert errs["y"].kind == "error" and "ValueError" in errs["y"].value
    assert errs["z"].value == 4  # the worker goes on after an exception


def test_a_jobs_clock_starts_when_its_fresh_process_is_ready() -> None:
    # a spawned process imports opsched first (about 2 s, more on a loaded machine): that had
    # counted against its first job's deadline, so a 0.5 s job timed out before it began
    out = list(LocalExecutor(1, time.sleep, "spawn").run([("x", 0, 0.5), ("y", 0, 0.5)]))
    assert [(o.key, o.kind) for o in out] == [("x", "ok"), ("y", "ok")]


KILL_TOML = """
[experiment]
name = "kill"
[[graphs]]
generate = "layered"
ops = 22
count = 10
[machines]
units = [2]
memory_cap = [0.85, 0.7]
[schedulers]
names = ["cpsat"]
time_limit = 1
"""


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
            return int(c.execute("SELECT count(*) FROM results").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def test_sigkill_mid_run_loses_only_jobs_in_flight(tmp_path) -> None:
    exp = tmp_path / "kill.toml"
    exp.write_text(KILL_TOML)
    db = tmp_path / "r.sqlite"
    env = os.environ | {"PYTHONPATH": str(REPO)}
    cli = "from opsched.cli import main; main()"
    cmd = [sys.executable, "-c", cli, "bench", str(exp), "--db", str(db), "-q"]
    proc = subprocess.Popen(cmd, env=env, start_new_session=True, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while _count(db) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its workers, at once
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    before = load_results(db)
    assert 2 <= len(before) < 20, "the run should have been killed mid-way"
    done = subprocess.run([*cmd, "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["jobs"], summary["skipped"], summary["ran"]) == (
        20, len(before), 20 - len(before))  # fmt: skip
    after = load_results(db)
    assert len(after) == 20 and after["job_id"].is_unique
    kept = after.set_index("job_id").loc[before["job_id"]]
    assert (kept["finished"].to_numpy() == before["finished"].to_numpy()).all()  # not redone
    assert set(after["status"]) <= {"OPTIMAL", "FEASIBLE", "INFEASIBLE", "UNKNOWN"}


def test_layered_import_is_the_generator_used() -> None:
    assert layered(8, seed=0).name == "layered-8-s0"


def test_down_set_search_compiled_before_the_jobs(tmp_path, monkeypatch) -> None:
    """A run with exact jobs under a memory cap on graphs past toy size compiles the
    down-set search once, in the parent, before any job (saying so); other runs do not."""
    import io

    import opsched.solver.downsets as ds

    calls: list[int] = []
    monkeypatch.setattr(ds, "kernels_ready", lambda: False)
    monkeypatch.setattr(ds, "compile_kernels", lambda: calls.append(1) or 0.0)

    def run(caps: str, names: str) -> str:
        cfg = parse_config(
            "[experiment]\nname = 'c'\n[[graphs]]\ngenerate = 'layered'\nops = 12\n"
            f"[machines]\nunits = [2]\nmemory_cap = {caps}\n"
            f"[schedulers]\nnames = {names}\ntime_limit = 1\n"
        )
        out = io.StringIO()
        run_experiment(cfg, tmp_path / f"{len(calls)}{caps}{names}.sqlite", workers=1,
                       stream=out)  # fmt: skip
        return out.getvalue()

    assert "compiling the down-set search" not in run("['none']", "['cpsat']")
    assert "compiling the down-set search" not in run("[0.8]", "['greedy']")
    assert not calls
    assert "compiling the down-set search" in run("[0.8]", "['cpsat', 'greedy']")
    assert calls == [1]


def test_a_script_without_a_main_guard_gets_the_reason(tmp_path) -> None:
    # spawn starts each worker by importing the script, which then runs the experiment again
    # while it bootstraps: every worker died at start, and each job was stored as an error
    exp = tmp_path / "e.toml"
    exp.write_text('[experiment]\nname="g"\n[[graphs]]\ngenerate="layered"\nops=6\n'
                   '[machines]\nunits=[2]\n[schedulers]\nnames=["greedy"]\n')  # fmt: skip
    script = tmp_path / "unguarded.py"
    script.write_text("from opsched.experiments import run_experiment\n"
                      f"run_experiment({str(exp)!r}, {str(tmp_path / 'r.sqlite')!r}, "
                      "workers=1, progress=False)\n")  # fmt: skip
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)  # fmt: skip
    assert out.returncode == 1
    assert 'under `if __name__ == "__main__":`' in out.stderr.splitlines()[-1]
    assert _count(tmp_path / "r.sqlite") == 0  # nothing stored as if the job had run


def test_progress_eta_counts_from_the_first_finished_job() -> None:
    import io

    from opsched.experiments.runner import Progress

    p = Progress(10, io.StringIO())
    assert p.eta(now=5.0) != p.eta(now=5.0)  # NaN: nothing finished yet
    p.t0, p.t_first, p.done = 0.0, 20.0, 1  # 20 s for the first (start-up included)
    assert p.eta(now=20.0) == 20.0 * 9
    p.done = 5  # four more in the next 8 s: 2 s a job, 5 left
    assert p.eta(now=28.0) == 10.0
    # the old estimate, elapsed / done, would have said 28 / 5 * 5 = 28 s
    p.done = 10
    assert p.eta(now=40.0) == 0.0


def test_ctrl_c_says_what_was_stored_and_how_to_resume(tmp_path, monkeypatch) -> None:
    import io

    real_run = LocalExecutor.run

    def run_then_interrupt(self, tasks):
        for i, outcome in enumerate(real_run(self, tasks)):
            if i == 2:
                raise KeyboardInterrupt
            yield outcome

    monkeypatch.setattr(LocalExecutor, "run", run_then_interrupt)
    cfg = parse_config(SMALL.format(names='["greedy"]'))
    err = io.StringIO()
    try:
        run_experiment(cfg, tmp_path / "r.sqlite", workers=1, stream=err)
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the interrupt was swallowed")
    assert "interrupted: 2 of 6 jobs stored this run (2 of 6 in all)" in err.getvalue()
    assert "run the same command again to resume" in err.getvalue()
    monkeypatch.setattr(LocalExecutor, "run", real_run)
    s = run_experiment(cfg, tmp_path / "r.sqlite", workers=1, progress=False)
    assert (s.skipped, s.ran) == (2, 4)


def test_a_job_killed_at_its_deadline_stores_the_deadline_as_its_time() -> None:
    # the time table had left timed-out jobs out (no wall time stored): a scheduler that
    # timed out on half its jobs looked fast
    from opsched.experiments.executors import Outcome
    from opsched.experiments.runner import _as_result, _deadline
    from opsched.report.stats import time_table

    row = _as_result(Outcome("k", "timeout", "killed"), _deadline(2.0))
    assert row["status"] == "TIMEOUT" and row["wall_time_s"] == _deadline(2.0) > 2.0
    assert _as_result(Outcome("k", "error", "boom"))["wall_time_s"] is None
    import pandas as pd

    df = pd.DataFrame({"scheduler": ["s"] * 2, "status": ["FEASIBLE", "TIMEOUT"],
                       "wall_time_s": [1.0, row["wall_time_s"]]})  # fmt: skip
    t = time_table(df).iloc[0]
    assert t["max_s"] == row["wall_time_s"] and t["timeouts"] == 1


def test_jobs_a_scheduler_cannot_take_are_left_out_not_failed(tmp_path) -> None:
    """downsets needs a cap, brute force at most 10 ops: those combinations are counted and
    named, never stored as ERROR rows that a report would read as failures."""
    cfg = parse_config(SMALL.format(names='["downsets", "brute-force", "greedy"]'))
    s = run_experiment(cfg, tmp_path / "r.sqlite", workers=1, progress=False)
    assert s.left_out == {
        "brute-force: graphs of more than 10 ops": 2,
        "downsets: no memory cap": 3,
    }
    assert s.jobs == s.ran == 6 + 3 + 4
    assert "ERROR" not in s.statuses and "TIMEOUT" not in s.statuses
    df = load_results(tmp_path / "r.sqlite")
    assert not ((df.scheduler == "downsets") & df.memory_cap.isna()).any()
    assert set(df[df.scheduler == "brute-force"].num_ops) == {8}


def test_a_shorter_progress_line_clears_the_longer_one_on_a_terminal() -> None:
    # the line is redrawn after "\r", which only moves the cursor: "ETA 100s" then "ETA 9s"
    # had shown "ETA 9s0s"
    import io

    from opsched.experiments.runner import Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    term = Terminal()
    p = Progress(3, term)
    lines = iter(["[bench] 1/3, ETA 100s", "[bench] 2/3, ETA 9s", "[bench] 3/3, ETA 0s"])
    p.line = lambda: next(lines)  # type: ignore[method-assign]
    screen = ""
    for expected in ("[bench] 1/3, ETA 100s", "[bench] 2/3, ETA 9s", "[bench] 3/3, ETA 0s"):
        p.update()
        for part in term.getvalue().split("\r"):  # what a terminal shows after each redraw
            screen = part + screen[len(part) :]
        term.seek(0)
        term.truncate()
        assert screen.rstrip() == expected

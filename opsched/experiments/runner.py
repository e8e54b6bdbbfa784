"""Running an experiment: expand, skip what is finished, execute, store each result.

:func:`run_experiment` is what ``opsched bench`` calls. Jobs already in the store are not
run again; every other job is stored in its own transaction as soon as it finishes, so an
interrupted run (Ctrl-C, SIGKILL, a lost machine) is resumed by running the same command.
A job that fails is stored with status ``ERROR`` (or ``TIMEOUT``) and its error text; the
run goes on.
"""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from opsched.errors import OpschedError
from opsched.experiments.config import ExperimentConfig, load_config
from opsched.experiments.executors import DaskExecutor, LocalExecutor, Outcome, check_address
from opsched.experiments.jobs import Job, expand_jobs, iter_payloads, load_graphs
from opsched.experiments.store import ResultStore
from opsched.experiments.worker import CRASHED, error_result

__all__ = ["Progress", "RunSummary", "environment", "run_experiment"]

#: Seconds a local job may run past its time limit before it is killed (plus 50 %).
GRACE_S = 10.0


@dataclass
class RunSummary:
    """What one :func:`run_experiment` call did."""

    experiment: str
    jobs: int
    skipped: int
    ran: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    run_id: str = ""
    #: combinations the scheduler cannot take, no job: "scheduler: reason" -> count
    left_out: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Progress:
    """A progress bar on stderr: done / total, failures, elapsed time and ETA.

    On a terminal the line is redrawn in place; otherwise a line is printed at most every
    ``every`` seconds and at the end (logs of batch systems stay short). The ETA is the pace
    since the first job finished, so starting the workers (a Dask cluster, numba's cache)
    does not inflate it; after the first job it is that job's time, shared among the
    ``parallel`` jobs that run at once.

    Examples
    --------
    >>> import io
    >>> p = Progress(4, io.StringIO())
    >>> p.t0, p.t_first = 0.0, 30.0  # 30 s to start, then one job every 2 s
    >>> p.done = 3
    >>> p.eta(now=34.0)
    2.0
    >>> p = Progress(9, io.StringIO(), parallel=2)
    >>> p.t0, p.t_first, p.done = 0.0, 10.0, 1  # 8 jobs left, two at a time
    >>> p.eta(now=10.0)
    40.0
    """

    def __init__(
        self,
        total: int,
        stream: IO[str] | None = None,
        enabled: bool = True,
        every: float = 10.0,
        parallel: int = 1,
    ) -> None:
        self.total, self.done, self.failed = total, 0, 0
        self.parallel = max(1, parallel)
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every = every
        self.t0 = time.monotonic()
        self.t_first: float | None = None  # when the first job finished
        self._last = -1e9
        self._width = 0  # of the line last drawn on a terminal
        self._closed = False

    def eta(self, now: float | None = None) -> float:
        """Seconds left at the pace since the first job finished (NaN before it)."""
        now = time.monotonic() if now is None else now
        left = self.total - self.done
        if not self.done or self.t_first is None:
            return float("nan")
        if self.done == 1 or now <= self.t_first:  # one job's time, several at once
            return (self.t_first - self.t0) * left / min(self.parallel, max(1, left))
        return (now - self.t_first) / (self.done - 1) * left

    def line(self) -> str:
        el = time.monotonic() - self.t0
        eta = self.eta()
        width = 24
        filled = int(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "." * (width - filled)
        eta_s = "?" if eta != eta else f"{eta:.0f}s"
        return (
            f"[bench] [{bar}] {self.done}/{self.total} jobs, {self.failed} failed, "
            f"{el:.0f}s elapsed, ETA {eta_s}"
        )

    def update(self, failed: bool = False) -> None:
        self.done += 1
        self.failed += failed
        if self.t_first is None:
            self.t_first = time.monotonic()
        if not self.enabled:
            return
        now = time.monotonic()
        if self.tty:
            # padded to the last line's width: "\r" only moves the cursor, so a shorter line
            # (the ETA going from 100s to 99s) had left the end of the longer one on screen
            text = self.line()
            pad = max(0, self._width - len(text))
            self._width = len(text)
            print("\r" + text + " " * pad, end="", file=self.stream, flush=True)
        elif now - self._last >= self.every or self.done == self.total:
            print(self.line(), file=self.stream, flush=True)
            self._last = now

    def close(self) -> None:
        """End the redrawn line (once; a second call does nothing)."""
        if self.enabled and self.tty and not self._closed:
            print(file=self.stream, flush=True)
        self._closed = True


def environment() -> dict[str, Any]:
    """The machine and package versions a run happens on (stored with each run)."""
    from importlib import metadata

    versions: dict[str, str] = {}
    for pkg in ("opsched", "ortools", "numpy", "pandas", "networkx", "dask", "distributed"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[pkg] = metadata.version(pkg)
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "packages": versions,
    }


def _compile_kernels(todo: list[Job], stream: IO[str] | None) -> None:
    """Compile the down-set search here, once, before jobs that may use it start.

    Compiled in a job, it would spend seconds of that job's time limit
    (:data:`~opsched.solver.downsets.COMPILE_S`; solve_cpsat skips it where its share is
    shorter); compiled here, the workers load it from numba's on-disk
    cache in a fraction of a second. Workers of a remote Dask cluster have their own disk:
    they compile it in their first long enough job.
    """
    from opsched.solver.downsets import compile_kernels, must_compile

    def may_search(j: Job) -> bool:  # an exact solver, a memory cap (or least peak first)
        capped = j.cap_bytes is not None or j.cap_fraction is not None or j.objective != "makespan"
        return j.exact and capped

    big = max((j.num_ops for j in todo if may_search(j)), default=0)
    if not must_compile(big):
        return
    if stream is not None:
        print("compiling the down-set search (once per installation) ...", file=stream, flush=True)
    compile_kernels()


def _deadline(time_limit: float) -> float:
    return 1.5 * time_limit + GRACE_S


def _as_result(o: Outcome, deadline: float | None = None) -> dict[str, Any]:
    """The stored row of an outcome; a job killed at its ``deadline`` (seconds) records that
    as its wall time, so the report's time table counts it (it had left such jobs out: a
    scheduler that timed out looked fast)."""
    if o.kind == "ok" and isinstance(o.value, dict):
        return o.value
    if o.kind == "timeout":
        return error_result("TIMEOUT", str(o.value), wall_time_s=deadline)
    return error_result("ERROR", (CRASHED if o.kind == "crash" else "") + str(o.value))


def run_experiment(
    config: ExperimentConfig | str | os.PathLike[str],
    db: str | os.PathLike[str],
    *,
    executor: str = "local",
    workers: int = 2,
    cluster: str | None = None,
    progress: bool = True,
    base: Path | None = None,
    stream: IO[str] | None = None,
) -> RunSummary:
    """Run every unfinished job of an experiment and store the results in ``db``.

    Parameters
    ----------
    config
        An :class:`ExperimentConfig` or the path of its TOML file.
    db
        The SQLite results store (created if missing).
    executor
        ``"local"`` (worker processes here) or ``"dask"``.
    workers
        Local processes, or workers of the local Dask cluster when no ``cluster`` is given.
    cluster
        Address of a running Dask scheduler (``tcp://HOST:PORT``); implies ``executor="dask"``.
    base
        Directory that relative ``files`` globs start from (the current one by default).

    Examples
    --------
    >>> import tempfile, os
    >>> from opsched.experiments.config import parse_config
    >>> cfg = parse_config('''
    ... [experiment]
    ... name = "doc"
    ... [[graphs]]
    ... generate = "layered"
    ... ops = 8
    ... [machines]
    ... units = [2]
    ... [schedulers]
    ... names = ["greedy", "serial"]
    ... ''')
    >>> db = os.path.join(tempfile.mkdtemp(), "r.sqlite")
    >>> s = run_experiment(cfg, db, workers=1, progress=False)
    >>> s.ran, s.statuses, run_experiment(cfg, db, progress=False).ran
    (2, {'FEASIBLE': 2}, 0)
    """
    t0 = time.monotonic()
    cfg = config if isinstance(config, ExperimentConfig) else load_config(config)
    if cluster is not None:
        executor = "dask"
    if executor not in ("local", "dask"):
        raise OpschedError(f"--executor must be 'local' or 'dask', got {executor!r}")
    if workers < 1:
        raise OpschedError(f"--workers must be >= 1, got {workers}")
    if cluster is not None:
        check_address(cluster)  # a malformed address is refused before the store is made
    graphs = load_graphs(cfg, base)
    refused: dict[tuple[str, str], int] = {}
    jobs = expand_jobs(cfg, graphs, refused)
    left_out = {f"{name}: {why}": n for (name, why), n in sorted(refused.items())}
    with ResultStore(db) as store:
        store.register(cfg, jobs, graphs)
        done = store.finished_ids(cfg.name)
        todo = [j for j in jobs if j.job_id not in done]
        summary = RunSummary(cfg.name, len(jobs), len(jobs) - len(todo), left_out=left_out)
        if not todo:
            summary.seconds = time.monotonic() - t0
            return summary
        _compile_kernels(todo, (stream or sys.stderr) if progress else None)
        run_id = uuid.uuid4().hex[:12]
        summary.run_id = run_id
        ex: LocalExecutor | DaskExecutor
        if executor == "local":
            ex = LocalExecutor(workers)
        else:
            ex = DaskExecutor(cluster, workers, tag=run_id)
            # connected before the run is recorded: a scheduler out of reach had left a
            # run in the store (and in every report's list of runs) that ran nothing
            ex.open()
        try:
            store.start_run(run_id, cfg.name, executor, workers, len(todo), environment())
        except BaseException:
            if isinstance(ex, DaskExecutor):
                ex.close()
            raise
        limits = {j.job_id: j.time_limit for j in todo}
        tasks = [(k, p, _deadline(limits[k])) for k, p in iter_payloads(todo, graphs)]
        parallel = ex.parallelism() if isinstance(ex, DaskExecutor) else workers
        bar = Progress(len(todo), stream, progress, parallel=parallel)
        try:
            for outcome in ex.run(tasks):
                result = _as_result(outcome, _deadline(limits[outcome.key]))
                store.record(outcome.key, run_id, result)
                status = str(result.get("status"))
                summary.statuses[status] = summary.statuses.get(status, 0) + 1
                summary.ran += 1
                bar.update(failed=status in ("ERROR", "TIMEOUT"))
        except KeyboardInterrupt:
            bar.close()
            print(
                f"[bench] interrupted: {summary.ran} of {len(todo)} jobs stored this run "
                f"({summary.skipped + summary.ran} of {len(jobs)} in all); run the same "
                "command again to resume",
                file=stream or sys.stderr,
                flush=True,
            )
            raise
        finally:
            bar.close()
        store.finish_run(run_id)
    summary.seconds = time.monotonic() - t0
    return summary

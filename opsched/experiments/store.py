"""The results store: one SQLite file per study.

SQLite in WAL mode, one transaction per finished job, so a process killed at any moment
(SIGKILL included) loses only the jobs that were running; readers (``opsched results``,
``opsched report``, a notebook) may open the file while a run writes to it. The schema is
versioned (``meta.schema_version``); a file of another version or not made by opsched is
refused with a one-line error.

Tables: ``experiments`` (name, TOML text, environment), ``graphs`` (content hash -> graph
JSON, so the report can redraw schedules), ``jobs`` (one row per job, written when a run
starts), ``results`` (one row per finished job; primary key = job id, so a job is recorded
exactly once) and ``runs`` (each invocation of ``opsched bench``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opsched._files import note_input
from opsched.errors import InputError
from opsched.experiments.worker import CRASHED

if TYPE_CHECKING:
    import pandas as pd

    from opsched.experiments.config import ExperimentConfig
    from opsched.experiments.jobs import GraphItem, Job

__all__ = ["SCHEMA_VERSION", "ResultStore", "load_results"]

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS experiments (
    name TEXT PRIMARY KEY, source TEXT, config TEXT, description TEXT, created REAL);
CREATE TABLE IF NOT EXISTS graphs (
    graph_hash TEXT PRIMARY KEY, name TEXT NOT NULL, num_ops INTEGER, graph_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY, experiment TEXT NOT NULL, instance_id TEXT NOT NULL,
    set_label TEXT, graph TEXT NOT NULL, graph_hash TEXT NOT NULL, graph_source TEXT,
    num_ops INTEGER, units INTEGER, cap_fraction REAL, cap_bytes INTEGER, resources TEXT,
    scheduler TEXT NOT NULL, exact INTEGER NOT NULL, time_limit REAL, objective TEXT,
    num_workers INTEGER, known_lb REAL, known_ub REAL);
CREATE INDEX IF NOT EXISTS jobs_experiment ON jobs (experiment);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, experiment TEXT NOT NULL, started REAL, finished REAL,
    executor TEXT, workers INTEGER, submitted INTEGER, environment TEXT);
CREATE TABLE IF NOT EXISTS results (
    job_id TEXT PRIMARY KEY REFERENCES jobs (job_id), run_id TEXT, status TEXT NOT NULL,
    solver_status TEXT, valid INTEGER, makespan REAL, peak_memory INTEGER, lower_bound REAL,
    gap REAL, memory_cap INTEGER, unconstrained_peak INTEGER, wall_time_s REAL, finished REAL,
    host TEXT, error TEXT, schedule TEXT);
"""

#: The jobs of each experiment's file as last run (``bench`` again after an edit that changes
#: a setting makes new jobs; the old ones stay, stored, but are no longer ``current``). Made
#: when first needed, so stores from before it read as they are (every job current).
_CURRENT = """
CREATE TABLE IF NOT EXISTS current_jobs (
    experiment TEXT NOT NULL, job_id TEXT NOT NULL, PRIMARY KEY (experiment, job_id));
"""

#: The ``current_jobs`` row every registration writes beside its jobs' (no job id is empty).
_REGISTERED = ""

_JOB_COLS = (
    "job_id", "experiment", "instance_id", "set_label", "graph", "graph_hash", "graph_source",
    "num_ops", "units", "cap_fraction", "cap_bytes", "resources", "scheduler", "exact",
    "time_limit", "objective", "num_workers", "known_lb", "known_ub",
)  # fmt: skip
_RESULT_COLS = (
    "status", "solver_status", "valid", "makespan", "peak_memory", "lower_bound", "gap",
    "memory_cap", "unconstrained_peak", "wall_time_s", "host", "error", "schedule",
)  # fmt: skip

#: Columns of numbers, NULL where a job has none (no schedule, no known optimum).
_NUMERIC_COLS = (
    "makespan", "peak_memory", "lower_bound", "gap", "memory_cap", "unconstrained_peak",
    "wall_time_s", "known_lb", "known_ub", "cap_fraction", "cap_bytes",
)  # fmt: skip


def _crashed(table: str) -> str:
    """SQL: the result row ``table`` is one of a job whose worker process died
    (:data:`~opsched.experiments.worker.CRASHED`)."""
    return f"({table}.status = 'ERROR' AND COALESCE({table}.error, '') LIKE '{CRASHED}%')"


class ResultStore:
    """An opsched results database (created if missing).

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "r.sqlite")
    >>> with ResultStore(path) as store:
    ...     store.schema_version()
    1
    """

    def __init__(self, path: str | os.PathLike[str], create: bool = True) -> None:
        self.path = Path(path)
        note_input(self.path)  # a command's output must not replace the store
        if not create and not self.path.is_file():
            raise InputError("no such results database", str(self.path))
        if self.path.is_dir():
            raise InputError("is a directory, not a results database", str(self.path))
        if not self.path.parent.is_dir():
            raise InputError(f"no such folder {str(self.path.parent)!r}", str(self.path))
        try:
            self.conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            self.conn.execute("PRAGMA busy_timeout = 60000")
            mode = self.conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            self.conn.execute("PRAGMA synchronous = NORMAL")
            tables = {
                r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
        except sqlite3.DatabaseError as e:
            raise InputError(f"not an SQLite database ({e})", str(self.path)) from None
        if str(mode).lower() != "wal":
            raise InputError(f"cannot switch to WAL mode (got {mode})", str(self.path))
        if tables and "meta" not in tables:
            self.conn.close()
            raise InputError("an SQLite database, but not an opsched results store", str(self.path))
        if not tables:
            if not create:
                self.conn.close()
                raise InputError("empty file, not an opsched results store", str(self.path))
            self.conn.executescript(_SCHEMA)  # IF NOT EXISTS: safe if two runs race here
            self.conn.execute(
                "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        version = self.schema_version()
        if version != SCHEMA_VERSION:
            self.conn.close()
            raise InputError(
                f"results schema version {version}; this opsched reads version {SCHEMA_VERSION}",
                str(self.path),
            )

    # ------------------------------------------------------------------ plumbing
    def _tx(self) -> _Transaction:
        return _Transaction(self.conn)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def schema_version(self) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    # ------------------------------------------------------------------ writing
    def register(
        self, cfg: ExperimentConfig, jobs: Iterable[Job], graphs: Iterable[GraphItem]
    ) -> None:
        """Record the experiment, its graphs and jobs (existing rows are kept), in one go."""
        with self._tx():
            self.conn.execute(
                "INSERT INTO experiments VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE "
                "SET source = excluded.source, config = excluded.config, "
                "description = excluded.description",
                (cfg.name, cfg.source, cfg.text, cfg.description, time.time()),
            )
            self.conn.executemany(
                "INSERT OR IGNORE INTO graphs VALUES (?, ?, ?, ?)",
                (
                    (g.digest, g.name, g.graph.num_ops, json.dumps(g.graph.to_dict()))
                    for g in graphs
                ),
            )
            jobs = list(jobs)
            self.conn.executemany(
                f"INSERT OR IGNORE INTO jobs VALUES ({', '.join('?' * len(_JOB_COLS))})",
                (_job_row(j) for j in jobs),
            )
            # a job kept from an earlier run takes the file's labels as they are now (the
            # job id holds neither: renaming a set should not run its jobs again)
            self.conn.executemany(
                "UPDATE jobs SET set_label = ?, graph_source = ? WHERE job_id = ?",
                ((j.set_label, j.graph_source, j.job_id) for j in jobs),
            )
            self.conn.execute(_CURRENT)
            self.conn.execute("DELETE FROM current_jobs WHERE experiment = ?", (cfg.name,))
            # the empty id marks the experiment as registered with this table, so a file
            # that now makes no job leaves none current (not every earlier one)
            self.conn.executemany(
                "INSERT OR IGNORE INTO current_jobs VALUES (?, ?)",
                [(cfg.name, _REGISTERED)] + [(cfg.name, j.job_id) for j in jobs],
            )

    def start_run(
        self, run_id: str, experiment: str, executor: str, workers: int, submitted: int,
        environment: dict[str, Any],
    ) -> None:  # fmt: skip
        """Record the start of one ``bench`` invocation."""
        with self._tx():
            self.conn.execute(
                "INSERT INTO runs VALUES (?, ?, ?, NULL, ?, ?, ?, ?)",
                (run_id, experiment, time.time(), executor, workers, submitted,
                 json.dumps(environment)),
            )  # fmt: skip

    def finish_run(self, run_id: str) -> None:
        with self._tx():
            self.conn.execute(
                "UPDATE runs SET finished = ? WHERE run_id = ?", (time.time(), run_id)
            )

    def record(self, job_id: str, run_id: str, result: dict[str, Any]) -> bool:
        """Store one finished job in its own transaction; False if it was already there (a
        job whose worker crashed, :data:`~opsched.experiments.worker.CRASHED`, is replaced)."""
        values = [result.get(c) for c in _RESULT_COLS]
        values[2] = None if values[2] is None else int(bool(values[2]))
        cols = ("run_id", "finished", *_RESULT_COLS)
        with self._tx():
            marks = ", ".join("?" * len(_RESULT_COLS))
            cur = self.conn.execute(
                f"INSERT INTO results (job_id, {', '.join(cols)}) VALUES (?, ?, ?, {marks}) "
                f"ON CONFLICT (job_id) DO UPDATE SET "
                f"{', '.join(f'{c} = excluded.{c}' for c in cols)} WHERE {_crashed('results')}",
                (job_id, run_id, time.time(), *values),
            )
        return cur.rowcount == 1

    # ------------------------------------------------------------------ reading
    def finished_ids(self, experiment: str | None = None) -> set[str]:
        """Ids of the jobs that have a result (of one experiment, or all); a job whose worker
        process died has none (:data:`~opsched.experiments.worker.CRASHED`): it runs again."""
        q = f"SELECT r.job_id FROM results r JOIN jobs j USING (job_id) WHERE NOT {_crashed('r')}"
        rows = (
            self.conn.execute(q + " AND j.experiment = ?", (experiment,))
            if experiment
            else self.conn.execute(q)
        )
        return {r[0] for r in rows}

    def experiments(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT name FROM experiments ORDER BY created")]

    def graph_json(self, graph_hash: str) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT graph_json FROM graphs WHERE graph_hash = ?", (graph_hash,)
        ).fetchone()
        if row is None:
            raise InputError(f"graph {graph_hash} is not in the store", str(self.path))
        return dict(json.loads(row[0]))

    def instance_schedules(
        self, instance_id: str, job_ids: Collection[str] | None = None
    ) -> list[dict[str, Any]]:
        """The valid schedules of one instance: job fields plus ``schedule`` (a dict).

        ``job_ids``: only those jobs (a report's current jobs of its experiments; an instance
        id does not name the experiment, and jobs of edited settings share it).
        """
        cur = self.conn.execute(
            "SELECT j.job_id, j.scheduler, j.graph_hash, j.units, j.resources, j.objective, "
            "r.memory_cap, r.schedule FROM jobs j JOIN results r USING (job_id) "
            "WHERE j.instance_id = ? AND r.valid = 1 ORDER BY j.scheduler, j.job_id",
            (instance_id,),
        )
        names = [d[0] for d in cur.description]
        out = []
        for row in cur.fetchall():
            d = dict(zip(names, row, strict=True))
            if job_ids is not None and d["job_id"] not in job_ids:
                continue
            d["resources"] = json.loads(d["resources"] or "{}")
            d["schedule"] = json.loads(d["schedule"])
            out.append(d)
        return out

    def runs(self) -> list[dict[str, Any]]:
        cur = self.conn.execute("SELECT * FROM runs ORDER BY started")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def _current_sql(self) -> str:
        """SQL, true where job ``j`` belongs to its experiment's file as last run."""
        known = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'current_jobs'"
        ).fetchone()
        if not known:
            return "1"  # a store from before the table: every job current
        return (
            "(NOT EXISTS (SELECT 1 FROM current_jobs c WHERE c.experiment = j.experiment) OR "
            "EXISTS (SELECT 1 FROM current_jobs c WHERE c.experiment = j.experiment AND "
            "c.job_id = j.job_id))"
        )

    def unfinished(self, experiment: str | None = None) -> int:
        """How many current jobs (of one experiment, or all) have no result yet: a run that
        was stopped, or is still going. A report of the others covers part of the file."""
        q = (
            f"SELECT count(*) FROM jobs j WHERE {self._current_sql()} AND NOT EXISTS "
            "(SELECT 1 FROM results r WHERE r.job_id = j.job_id)"
        )
        if experiment:
            return int(self.conn.execute(q + " AND j.experiment = ?", (experiment,)).fetchone()[0])
        return int(self.conn.execute(q).fetchone()[0])

    def frame(self, experiment: str | None = None, schedules: bool = False) -> pd.DataFrame:
        """Every finished job as one row: job columns, then result columns, then ``current``:
        whether the job belongs to its experiment's file as last run (one whose settings were
        edited since has new jobs; the earlier ones are kept, not current)."""
        import pandas as pd

        cols = [f"j.{c}" for c in _JOB_COLS] + [
            f"r.{c}" for c in ("run_id", "finished", *_RESULT_COLS) if schedules or c != "schedule"
        ]
        q = (
            f"SELECT {', '.join(cols)}, {self._current_sql()} AS current "
            "FROM jobs j JOIN results r USING (job_id)"
        )
        params: tuple[Any, ...] = ()
        if experiment:
            q += " WHERE j.experiment = ?"
            params = (experiment,)
        df = pd.read_sql_query(q + " ORDER BY j.job_id", self.conn, params=params)
        df["exact"] = df["exact"].astype(bool)
        df["valid"] = df["valid"].map(lambda v: None if v is None or v != v else bool(v))
        df["units"] = df["units"].astype("Int64")
        df["current"] = df["current"].astype(bool)
        for c in _NUMERIC_COLS:  # a column of NULLs alone (no job has a schedule) is numeric
            if c in df and df[c].dtype == object:
                df[c] = pd.to_numeric(df[c]).astype(float)
        return df


def _job_row(j: Job) -> tuple[Any, ...]:
    d = j.to_dict()
    d["resources"] = json.dumps(d["resources"], sort_keys=True)
    d["exact"] = int(d["exact"])
    return tuple(d[c] for c in _JOB_COLS)


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (or ``ROLLBACK`` on an exception)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")


def load_results(
    db: str | os.PathLike[str], experiment: str | None = None, schedules: bool = False
) -> pd.DataFrame:
    """Load every finished job of a results database as a pandas DataFrame.

    One row per job: the job (experiment, instance, graph, units, memory-cap setting,
    scheduler, known optimum) and its result (status, valid, makespan, peak memory, bound,
    gap, wall time, error; the schedule JSON too with ``schedules=True``).

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "empty.sqlite")
    >>> ResultStore(path).close()  # a new, empty store
    >>> df = load_results(path)
    >>> len(df), "makespan" in df.columns
    (0, True)
    """
    with ResultStore(db, create=False) as store:
        return store.frame(experiment, schedules)

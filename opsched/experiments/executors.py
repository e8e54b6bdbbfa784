"""Where jobs run: worker processes on this machine, or a Dask distributed cluster.

Both executors take ``(key, payload, deadline_s)`` tasks and yield :class:`Outcome` objects
in the order jobs finish, so the runner can store each one as soon as it arrives.

:class:`LocalExecutor` keeps ``workers`` processes, each fed one job at a time through a pipe.
A job still running ``deadline_s`` after it started is killed with its process (outcome
``timeout``; a fresh process's first job counts from when the process is ready, since it
first imports opsched, which takes seconds on a loaded machine); a process that dies (a
crash, the out-of-memory killer) gives outcome ``crash``;
either way a fresh process replaces it and the run goes on. If the parent is killed, the
workers see their pipe close and exit.

:class:`DaskExecutor` submits every job to ``distributed.Client(address)`` (or to a local
cluster it starts), one task per job. When a worker dies, the scheduler reruns its tasks
elsewhere; a task that kills several workers ends as ``crash``. Deadlines are left to the
schedulers' own time limits there (Dask cannot stop a running task).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import signal
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from opsched.errors import OpschedError

__all__ = ["DaskExecutor", "LocalExecutor", "Outcome", "Task", "check_address"]

Task = tuple[str, Any, float]  #: (key, payload, deadline in seconds)


@dataclass(frozen=True)
class Outcome:
    """What became of one task: ``kind`` is ``ok``, ``error``, ``timeout`` or ``crash``."""

    key: str
    kind: str
    value: Any  #: the function's return value (``ok``) or an error text


#: What a worker process sends first: it started (a process that dies before is the parent
#: script, re-imported by ``spawn``, calling :func:`run_experiment` at import time again).
_HELLO = ("", "hello", None)

#: Why worker processes that die before their first word are an error of the caller.
UNGUARDED = (
    "worker processes die while starting (exit code {code}): a script that runs an "
    'experiment must do so under `if __name__ == "__main__":` (each worker starts by '
    "importing the script)"
)


def _worker_main(conn: Connection, fn: Callable[[Any], Any]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    try:
        conn.send(_HELLO)
    except (BrokenPipeError, OSError):
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if msg is None:
            return
        key, payload = msg
        try:
            out: tuple[str, str, Any] = (key, "ok", fn(payload))
        except Exception as e:
            text = "".join(traceback.format_exception_only(type(e), e)).strip()
            out = (key, "error", text)
        try:
            conn.send(out)
        except (BrokenPipeError, OSError):
            return


#: Seconds a fresh worker process may take to start (import opsched) before its first job's
#: own deadline starts counting.
START_ALLOWANCE_S = 120.0


class _Proc:
    def __init__(self, ctx: Any, fn: Callable[[Any], Any]) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker_main, args=(child, fn), daemon=True)
        self.proc.start()
        child.close()
        self.key: str | None = None
        self.deadline = 0.0
        self.budget = 0.0  # the running job's seconds, counted from _HELLO
        self.started = False  # sent _HELLO

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.proc.kill()
        else:
            with contextlib.suppress(BrokenPipeError, OSError):
                self.conn.send(None)
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


class LocalExecutor:
    """Run tasks in ``workers`` processes on this machine (default 2: a 2-core machine).

    Examples
    --------
    >>> ex = LocalExecutor(workers=2, fn=abs)
    >>> sorted((o.key, o.kind, o.value) for o in ex.run([("a", -3, 10.0), ("b", 4, 10.0)]))
    [('a', 'ok', 3), ('b', 'ok', 4)]
    """

    name = "local"

    def __init__(
        self, workers: int = 2, fn: Callable[[Any], Any] | None = None, start_method: str = "spawn"
    ) -> None:
        if workers < 1:
            raise OpschedError(f"--workers must be >= 1, got {workers}")
        if fn is None:
            from opsched.experiments.worker import run_job

            fn = run_job
        self.workers = workers
        self.fn = fn
        self.ctx = mp.get_context(start_method)

    def run(self, tasks: Iterable[Task]) -> Iterator[Outcome]:
        """Yield one :class:`Outcome` per task, as each finishes."""
        queue = deque(tasks)
        procs: list[_Proc | None] = [None] * min(self.workers, len(queue))
        try:
            while True:
                for i, p in enumerate(procs):
                    if queue and (p is None or p.key is None):
                        if p is None:  # started lazily: a lost worker is replaced on demand
                            p = procs[i] = _Proc(self.ctx, self.fn)
                        key, payload, deadline = queue.popleft()
                        p.conn.send((key, payload))
                        # a fresh process first imports opsched (seconds on a loaded
                        # machine): the job's clock starts when it says it is ready
                        start = 0.0 if p.started else START_ALLOWANCE_S
                        p.key, p.budget = key, deadline
                        p.deadline = time.monotonic() + deadline + start
                busy = [p for p in procs if p is not None and p.key is not None]
                if not busy:
                    return
                wait_s = max(0.0, min(p.deadline for p in busy) - time.monotonic())
                ready = set(wait([p.conn for p in busy], timeout=min(wait_s, 1.0)))
                for i, p in enumerate(procs):
                    if p is None or p.key is None:
                        continue
                    if p.conn in ready:
                        try:
                            key, kind, value = p.conn.recv()
                        except (EOFError, OSError):
                            p.proc.join(timeout=5)
                            code = p.proc.exitcode
                            if not p.started and code == 1:  # the script, not the job
                                raise OpschedError(UNGUARDED.format(code=code)) from None
                            yield Outcome(p.key, "crash", f"worker process died (exit code {code})")
                            p.stop(kill=True)
                            procs[i] = None
                            continue
                        if (key, kind, value) == _HELLO:
                            p.started = True
                            p.deadline = time.monotonic() + p.budget
                            continue
                        p.key = None
                        yield Outcome(key, kind, value)
                    elif time.monotonic() > p.deadline:
                        p.stop(kill=True)
                        procs[i] = None
                        yield Outcome(p.key, "timeout", "killed: still running at its deadline")
        finally:
            for p in procs:
                if p is not None:
                    p.stop(kill=p.key is not None)


def _dask_run(payload: Any) -> Any:
    from opsched.experiments.worker import run_job

    return run_job(payload)


def _need_distributed() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise OpschedError("--executor dask needs dask: pip install 'opsched[dask]'") from None


def check_address(address: str) -> None:
    """Raise a one-line error if ``address`` is no Dask scheduler address (``tcp://HOST:PORT``),
    before anything connects or is written: ``Client`` raises ValueError for a missing port
    or an unknown scheme, which had ended ``bench`` with an internal error.

    Examples
    --------
    >>> check_address("tcp://127.0.0.1:8786")
    >>> check_address("h")
    Traceback (most recent call last):
    opsched.errors.OpschedError: --cluster 'h': missing port number in address 'h' (expected ...)
    """
    _need_distributed()
    from distributed.comm import parse_address
    from distributed.comm.registry import get_backend

    try:
        scheme, loc = parse_address(address, strict=False)
        get_backend(scheme).get_address_host_port(loc)
    except NotImplementedError:  # a backend without host and port (inproc, ucx): its own form
        return
    except ValueError as e:
        raise OpschedError(f"--cluster {address!r}: {e} (expected tcp://HOST:PORT)") from None


def _failure_kind(exc: BaseException) -> str:
    """The outcome kind of a Dask task that raised ``exc``: ``"crash"`` when the cluster lost
    it (a worker that kept dying, ``KilledWorker``; a future the scheduler cancelled, as when
    it restarts or drops this client), so the job runs again on resume; ``"error"`` for the
    task's own failure.

    >>> import concurrent.futures
    >>> _failure_kind(concurrent.futures.CancelledError("lost")), _failure_kind(ValueError())
    ('crash', 'error')
    """
    import concurrent.futures

    if type(exc).__name__ == "KilledWorker" or isinstance(exc, concurrent.futures.CancelledError):
        return "crash"
    return "error"


class DaskExecutor:
    """Run tasks on a Dask distributed cluster (``address``) or a local one it starts."""

    name = "dask"

    def __init__(self, address: str | None = None, workers: int = 2, tag: str = "") -> None:
        if address is not None:
            check_address(address)
        self.address = address
        self.workers = workers
        self.tag = tag or str(time.time_ns())
        self._c: Any = None

    def open(self) -> None:
        """Connect to the cluster (or start the local one) now, not at the first task: a
        caller that records a run can then do so only once there is somewhere to run it."""
        if self._c is None:
            self._c = self._client()

    def close(self) -> None:
        """Disconnect, and stop the local cluster this executor started (if any)."""
        client, self._c = self._c, None
        if client is None:
            return
        cluster = client.cluster
        client.close()
        if cluster is not None and self.address is None:
            cluster.close()

    def parallelism(self) -> int:
        """How many tasks run at once: the cluster's worker threads once connected (at
        least 1), else the workers asked for."""
        if self._c is None or self.address is None:
            return max(1, self.workers)
        try:
            info = self._c.scheduler_info().get("workers", {})
            return max(1, sum(int(w.get("nthreads", 1)) for w in info.values()))
        except Exception:  # the count only paces an estimate: never fail a run for it
            return max(1, self.workers)

    def _client(self) -> Any:
        _need_distributed()
        from distributed import Client, LocalCluster

        if self.address is None:
            cluster = LocalCluster(
                n_workers=self.workers, threads_per_worker=1, processes=True,
                dashboard_address=None,
            )  # fmt: skip
            return Client(cluster)
        try:
            return Client(self.address, timeout="20s")
        except ValueError as e:  # a form check_address lets through, left to the backend
            raise OpschedError(f"--cluster {self.address!r}: {e}") from None
        except (OSError, TimeoutError) as e:
            raise OpschedError(f"cannot reach the Dask scheduler at {self.address}: {e}") from None

    def run(self, tasks: Iterable[Task]) -> Iterator[Outcome]:
        """Yield one :class:`Outcome` per task, as each finishes on the cluster."""
        from distributed import as_completed

        self.open()
        client = self._c
        try:
            keys: dict[str, str] = {}
            futures = []
            for key, payload, _deadline in tasks:
                dkey = f"opsched-{key}-{self.tag}"
                keys[dkey] = key
                futures.append(client.submit(_dask_run, payload, key=dkey, pure=False))
            for fut in as_completed(futures):
                key = keys[fut.key]
                # result(), not the status: a task whose worker died after it finished is
                # "lost" by now and is run again; result() waits for that run (reading the
                # status here stored such a job as an error, seen once in CI)
                try:
                    value = fut.result()
                except Exception as exc:  # the task's own failure, KilledWorker, cancelled
                    yield Outcome(key, _failure_kind(exc), f"{type(exc).__name__}: {exc}")
                else:
                    yield Outcome(key, "ok", value)
                fut.release()
        finally:
            self.close()

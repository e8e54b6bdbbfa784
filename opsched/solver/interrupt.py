"""Run a CP-SAT solve that Ctrl-C (a notebook's interrupt) stops, and whose log Python sees.

CP-SAT installs its own SIGINT handler by default: an interrupt then only ends the search
early, the solve returns its best schedule as if the time limit had come, and a loop over
graphs goes on to the next one. :func:`run_solver` turns that off and watches for the
signal itself: the interpreter's C-level handler writes to a wake-up pipe even while the
main thread waits inside CP-SAT, a watcher thread then stops the search, and when the solve
returns :class:`KeyboardInterrupt` is raised, as for any other Python code. Off the main
thread (a Dask worker's, a thread pool's), where Python delivers no signals, the solve runs
as it is, and so it does where the process ignores SIGINT (a batch worker, whose parent
decides when to stop: CP-SAT's handler had ended such a job early and stored its schedule
as if the time limit had come).

With ``log``, CP-SAT's search log goes through :func:`print` (so into a notebook's cell)
instead of the process's C-level standard output, which Jupyter does not show.

Examples
--------
>>> from ortools.sat.python import cp_model
>>> m = cp_model.CpModel()
>>> x = m.new_int_var(0, 10, "x")
>>> m.maximize(x)
>>> solver = cp_model.CpSolver()
>>> run_solver(solver, m) == cp_model.OPTIMAL, solver.value(x)
(True, 10)
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
from typing import Any

__all__ = ["run_solver"]


def run_solver(solver: Any, model: Any, callback: Any = None, log: bool = False) -> Any:
    """``solver.solve(model, callback)``, stopped by Ctrl-C with a ``KeyboardInterrupt``.

    ``log``: print CP-SAT's search log through Python (``log_search_progress`` on, the
    C-level log off).
    """
    p = solver.parameters
    if log:
        p.log_search_progress = True
        p.log_to_stdout = False
        solver.log_callback = print
    if threading.current_thread() is not threading.main_thread():
        return solver.solve(model, callback)
    p.catch_sigint_signal = False
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # the process ignores Ctrl-C (a batch worker: its parent decides when to stop), so the
        # solve does too; CP-SAT's own handler would have ended it early, as a time-out
        return solver.solve(model, callback)
    hit: list[bool] = []

    def on_sigint(signum: int, frame: Any) -> None:  # runs once the solve has returned
        hit.append(True)

    try:
        old_handler = signal.signal(signal.SIGINT, on_sigint)
    except ValueError:  # not allowed here (an embedded interpreter): solve as it is
        return solver.solve(model, callback)
    r, w = socket.socketpair()
    r.setblocking(True)
    w.setblocking(False)
    old_fd = -1
    try:
        old_fd = signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)
        watcher = threading.Thread(target=_watch, args=(r, solver, hit), daemon=True)
        watcher.start()
        try:
            status = solver.solve(model, callback)
        finally:
            with contextlib.suppress(OSError):
                w.send(b"\0")  # no signal came: wake the watcher to end it
            watcher.join(timeout=5)
    finally:
        signal.set_wakeup_fd(old_fd)
        signal.signal(signal.SIGINT, old_handler)
        r.close()
        w.close()
    if hit:  # the handler ran when the solve returned, or a signal is still pending
        raise KeyboardInterrupt
    return status


def _watch(r: socket.socket, solver: Any, hit: list[bool]) -> None:
    """Stop the search at the first byte the wake-up pipe gets for SIGINT (and say so in
    ``hit``); end at the zero byte :func:`run_solver` sends when the solve is over."""
    while True:
        try:
            data = r.recv(64)
        except OSError:
            return
        if int(signal.SIGINT) in data:
            hit.append(True)
            solver.stop_search()
            return
        if not data or b"\0" in data:
            return

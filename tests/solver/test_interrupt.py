"""Ctrl-C stops a CP-SAT solve with KeyboardInterrupt, and ``log=True`` prints through Python."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import opsched

REPO = Path(__file__).resolve().parents[2]

# an STG 300 pair no 30 s solve proves (README: rand0028 on 4 processors stays open), so the
# search is still running when the signal comes
SCRIPT = """
import os, signal, threading, time
import opsched
p = opsched.Problem(opsched.read_graph({path!r}), opsched.Machine(units=4))
opsched.solve_cpsat(p, time_limit=1)  # imports and compiles out of the timed part
threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.perf_counter()
try:
    s = opsched.solve_cpsat(p, time_limit=30)
    print("RETURNED", s.status, round(time.perf_counter() - t0, 1))
except KeyboardInterrupt:
    print("INTERRUPTED", round(time.perf_counter() - t0, 1))
"""


def test_ctrl_c_raises_keyboard_interrupt_instead_of_returning() -> None:
    path = str(REPO / "datasets" / "stg" / "300" / "rand0028.stg")
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(path=path)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    words = out.stdout.split()
    assert words[0] == "INTERRUPTED", out.stdout + out.stderr
    assert float(words[1]) < 10.0  # stopped at the signal, not at the 30 s limit


def test_the_search_log_goes_through_print() -> None:
    p = opsched.Problem(opsched.seed_graph(), opsched.Machine(units=2))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        s = opsched.solve_cpsat(p, time_limit=5, log=True)
    assert s.status is opsched.Status.OPTIMAL and s.makespan == 6.0
    assert "CP-SAT solver" in buf.getvalue()  # the log's banner, caught by Python


IGNORED = """
import os, signal, threading, time
import opsched
signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a batch worker does
p = opsched.Problem(opsched.read_graph({path!r}), opsched.Machine(units=4))
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.perf_counter()
s = opsched.solve_cpsat(p, time_limit=4)
print("RETURNED", round(time.perf_counter() - t0, 1))
"""


def test_a_process_that_ignores_ctrl_c_runs_its_solve_to_the_limit() -> None:
    path = str(REPO / "datasets" / "stg" / "300" / "rand0028.stg")
    out = subprocess.run(
        [sys.executable, "-c", IGNORED.format(path=path)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    words = out.stdout.split()
    assert words[0] == "RETURNED", out.stdout + out.stderr
    assert float(words[1]) >= 3.5  # not cut short at the signal (1 s), as CP-SAT's handler did

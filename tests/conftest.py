"""Shared fixtures and helpers for the opsched test-suite."""

from __future__ import annotations

import fcntl
import hashlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from opsched.datasets import dataset_path

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
SHARED = REPO.parent / "shared" / "data"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "timing: asserts wall-clock time; under pytest -n, runs while no other test does",
    )


#: Two locks for the test processes of one checkout (pytest -n starts several): the main
#: one, which a timing test holds alone and every other test shares, and a gate, which a
#: timing test holds while it waits for the main one, so that the other process cannot keep
#: taking its shared lock test after test (flock is not fair: a timing test had waited 64 s).
_LOCKS = [
    Path(tempfile.gettempdir())
    / f"opsched-tests-{hashlib.sha1(str(REPO).encode()).hexdigest()[:12]}.{part}.lock"
    for part in ("main", "gate")
]


def _shared_scope(item: pytest.Item) -> str | None:
    """The module of a test that uses a fixture of module (or wider) scope, else None."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for defs in info.name2fixturedefs.values():
        if defs and defs[-1].scope in ("module", "package", "class"):
            return item.nodeid.split("::")[0]
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup`` (pyproject.toml), the ``timing`` tests form one group: one
    process runs them one after another and takes the lock once for all of them. The tests
    of a module that share a module fixture form a group too, so that the fixture is made
    once, not in each process (tests/test_cli.py's hundred CLI runs took 80 s a copy)."""
    for item in items:
        if item.get_closest_marker("timing") is not None:
            item.add_marker(pytest.mark.xdist_group("timing"))
        elif (scope := _shared_scope(item)) is not None:
            item.add_marker(pytest.mark.xdist_group(scope))


def _is_timing(item: pytest.Item | None) -> bool:
    return item is not None and item.get_closest_marker("timing") is not None


def _lock(alone: bool) -> list[IO[str]]:
    """Take the main lock, alone or shared; the open files that hold it."""
    main, gate = (open(path, "a") for path in _LOCKS)  # noqa: SIM115 (held past this call)
    if alone:
        fcntl.flock(gate, fcntl.LOCK_EX)  # no new shared holder from here on
        fcntl.flock(main, fcntl.LOCK_EX)  # once the test beside it has ended
        return [main, gate]
    fcntl.flock(gate, fcntl.LOCK_SH)  # waits while a timing test waits or runs
    fcntl.flock(main, fcntl.LOCK_SH)
    gate.close()  # closing a file releases its lock
    return [main]


_held: list[list[IO[str]]] = []  # a run of timing tests' locks, passed from one to the next


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A test marked ``timing`` runs alone; every other test shares the lock. Under ``pytest
    -n 2`` on two cores the other process had run a CP-SAT search beside a 1 s time-limit
    test, which then measured 2.5-5.7 s of wall clock for its 1.6 s of work. The lock is
    taken here, around the test's whole run, module fixtures included (a fixture taken
    outside it had run a hundred CLI subprocesses beside a timing test). Consecutive timing
    tests pass it on without releasing it."""
    if not hasattr(item.config, "workerinput"):  # not under xdist: nothing beside it
        return (yield)
    alone = _is_timing(item)
    files = _held.pop() if alone and _held else _lock(alone)
    try:
        return (yield)
    finally:
        if alone and _is_timing(nextitem):
            _held.append(files)
        else:
            for f in files:
                f.close()


@pytest.fixture(scope="session", autouse=True)
def _compiled_kernels() -> None:
    """Compile the down-set search first, as a batch run does: ``solve_cpsat`` skips it
    while it is not compiled and its share of the time limit is shorter than a compile,
    so without this a test's outcome would hang on whether an earlier one compiled it.
    (The skip itself is tested with the readiness patched.)

    Then the list heuristics' kernels, through a short LNS run (its start is the
    portfolio): on a clean checkout they compile in about 40 s, and a timing test that
    happened to be the first to use them measured the compile (the LNS time-limit test:
    2.3 s for its 1 s limit, on two CI runs). Here that happens before any test runs."""
    from opsched.heuristics.lns import lns
    from opsched.problem import Machine, Problem
    from opsched.solver import compile_kernels
    from opsched.zoo.generators import layered

    compile_kernels()
    lns(Problem(layered(60, seed=0), Machine(units=3)), time_limit=0.5)


@pytest.fixture
def stg50_dir() -> Path:
    return dataset_path("stg/50")


@pytest.fixture
def j30_dir() -> Path:
    return dataset_path("psplib/j30")

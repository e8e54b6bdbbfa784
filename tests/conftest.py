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


#: One lock for the test processes of one checkout (pytest -n starts several).
_TIMING_LOCK = Path(tempfile.gettempdir()) / (
    "opsched-tests-" + hashlib.sha1(str(REPO).encode()).hexdigest()[:12] + ".lock"
)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The ``timing`` tests form one xdist group (``--dist loadgroup`` in pyproject.toml):
    one process runs them one after another, and takes the lock once for all of them."""
    for item in items:
        if item.get_closest_marker("timing") is not None:
            item.add_marker(pytest.mark.xdist_group("timing"))


_NEXT = pytest.StashKey[pytest.Item | None]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    item.stash[_NEXT] = nextitem  # whether the lock can pass on to the next test unreleased
    return (yield)


_held: list[IO[str]] = []  # the open lock file, while a run of timing tests holds it alone


def _is_timing(item: pytest.Item | None) -> bool:
    return item is not None and item.get_closest_marker("timing") is not None


@pytest.fixture(autouse=True)
def _timing_alone(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked ``timing`` holds the lock alone; every other test shares it. Under
    ``pytest -n 2`` on two cores the other process had run a CP-SAT search beside a 1 s
    time-limit test, which then measured 2.5-5.7 s of wall clock for its 1.6 s of work.
    Consecutive timing tests keep the lock between them: each wait for it is a wait for
    the other process's test to end, which had cost 26-57 s of idle time apiece."""
    if not hasattr(request.config, "workerinput"):  # not under xdist: nothing beside it
        yield
        return
    node = request.node
    alone = _is_timing(node)
    if alone and _held:
        f = _held.pop()  # the previous test's lock, still held alone
    else:
        f = open(_TIMING_LOCK, "a")  # noqa: SIM115 (kept open past this block)
        fcntl.flock(f, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
    try:
        yield
    finally:
        if alone and _is_timing(node.stash.get(_NEXT, None)):
            _held.append(f)
        else:
            fcntl.flock(f, fcntl.LOCK_UN)
            f.close()


@pytest.fixture(scope="session", autouse=True)
def _downset_kernels() -> None:
    """Compile the down-set search first, as a batch run does: ``solve_cpsat`` skips it
    while it is not compiled and its share of the time limit is shorter than a compile,
    so without this a test's outcome would hang on whether an earlier one compiled it.
    (The skip itself is tested with the readiness patched.)"""
    from opsched.solver import compile_kernels

    compile_kernels()


@pytest.fixture
def stg50_dir() -> Path:
    return dataset_path("stg/50")


@pytest.fixture
def j30_dir() -> Path:
    return dataset_path("psplib/j30")

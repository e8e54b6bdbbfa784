"""Shared fixtures and helpers for the opsched test-suite."""

from __future__ import annotations

import fcntl
import hashlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture(autouse=True)
def _timing_alone(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked ``timing`` holds the lock alone; every other test shares it. Under
    ``pytest -n 2`` on two cores the other process had run a CP-SAT search beside a 1 s
    time-limit test, which then measured 2.5-5.7 s of wall clock for its 1.6 s of work."""
    if not hasattr(request.config, "workerinput"):  # not under xdist: nothing beside it
        yield
        return
    alone = request.node.get_closest_marker("timing") is not None
    with open(_TIMING_LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


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

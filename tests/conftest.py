"""Shared fixtures and helpers for the opsched test-suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from opsched.datasets import dataset_path

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
SHARED = REPO.parent / "shared" / "data"


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

"""Shared fixtures and helpers for the opsched test-suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from opsched.datasets import dataset_path

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
SHARED = REPO.parent / "shared" / "data"


@pytest.fixture
def stg50_dir() -> Path:
    return dataset_path("stg/50")


@pytest.fixture
def j30_dir() -> Path:
    return dataset_path("psplib/j30")

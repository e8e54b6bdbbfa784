"""Locating the built-in datasets shipped in the repository's ``datasets/`` folder.

``datasets/`` holds the STG task graphs (50, 100, 300 tasks) with their proven optima and
PSPLIB J30 with its optima, each with its provenance and license (see ``datasets/README.md``).
Set ``OPSCHED_DATASETS`` to use another copy.
"""

from __future__ import annotations

import csv
import os
from functools import cache
from pathlib import Path

from opsched.errors import InputError

__all__ = ["STG50_CLOSURES", "dataset_path", "psplib_optima", "stg_optima"]

#: Optima opsched's CP-SAT proved for the STG 50 pairs the published table leaves open (same
#: format; ``datasets/stg/PROVENANCE.md``), under ``stg/optimal/``.
STG50_CLOSURES = "Case50_open_CPSAT.csv"


def _root() -> Path:
    env = os.environ.get("OPSCHED_DATASETS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "datasets"


def dataset_path(relative: str = "") -> Path:
    """Absolute path of a file in the built-in datasets (e.g. ``"stg/50/rand0000.stg"``).

    >>> dataset_path("stg/50/rand0000.stg").name
    'rand0000.stg'
    """
    p = _root() / relative
    if not p.exists():
        raise InputError(
            "not found in the built-in datasets (run from a source checkout or set "
            "OPSCHED_DATASETS)",
            str(p),
        )
    return p


def stg_optima(procs: int, size: int = 50, closures: bool = False) -> dict[str, tuple[int, int]]:
    """Optimal makespans of an STG set on ``procs`` processors.

    For 50 tasks, the published table; for 100 and 300 tasks (no table was ever published)
    the one opsched's CP-SAT solver proved, ``stg/optimal/Case300_P_CPSAT.csv`` (see
    ``datasets/stg/PROVENANCE.md``). Returns ``{"rand0000": (lb, ub)}``; ``lb == ub`` where
    the optimum is proven. With ``closures`` (50 tasks), the pairs the published table
    leaves open take the bounds opsched's CP-SAT proved for them (:data:`STG50_CLOSURES`).

    >>> stg_optima(4)["rand0000"]
    (66, 66)
    >>> stg_optima(4)["rand0177"], stg_optima(4, closures=True)["rand0177"]
    ((107, 115), (112, 112))
    """
    name = f"Case{size}_{procs}_OPT.csv" if size == 50 else f"Case{size}_{procs}_CPSAT.csv"
    out = dict(_read_stg_table(dataset_path(f"stg/optimal/{name}")))
    if closures and size == 50:
        closed = _read_stg_table(dataset_path(f"stg/optimal/{STG50_CLOSURES}"), procs)
        out |= {k: v for k, v in closed if k in out}
    return out


@cache
def _read_stg_table(
    path: Path, procs: int | None = None
) -> tuple[tuple[str, tuple[int, int]], ...]:
    """``("rand0000", (lb, ub))`` pairs of a table in the STG format (rows of ``procs`` only).

    Read once per process: batch evaluation looks an optimum up for every graph it runs.
    """
    out = []
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if not row or (procs is not None and int(row[1]) != procs):
                continue
            lb = int(row[2])
            out.append((Path(row[0]).stem, (lb, int(row[3]) if len(row) > 3 else lb)))
    return tuple(out)


def psplib_optima() -> dict[str, int]:
    """Proven optimal makespans of the PSPLIB J30 instances, by instance name (``j301_1``)."""
    out = {}
    with open(dataset_path("psplib/j30_optimum.csv"), newline="") as f:
        for row in csv.DictReader(f):
            out[Path(row["problem"]).stem] = int(row["optimum"])
    return out

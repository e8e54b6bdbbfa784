"""Locating the built-in datasets shipped in the repository's ``datasets/`` folder.

``datasets/`` holds the STG task graphs (50, 100, 300 tasks) with their proven optima and
PSPLIB J30 with its optima, each with its provenance and license (see ``datasets/README.md``).
Set ``OPSCHED_DATASETS`` to use another copy.
"""

from __future__ import annotations

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
    """``("rand0000", (lb, ub))`` pairs of a table in the STG format (rows of ``procs`` only):
    ``graph,procs,optimum`` or ``graph,procs,lb,ub`` per line.

    Read once per process: batch evaluation looks an optimum up for every graph it runs.
    """
    out = []
    for lineno, row in _table_rows(path):
        if len(row) not in (3, 4):
            raise InputError(f"line {lineno}: expected graph,procs,optimum[,upper bound], "
                             f"got {len(row)} fields", str(path))  # fmt: skip
        p, *bounds = (_table_int(v, lineno, path) for v in row[1:])
        if procs is None or p == procs:
            out.append((Path(row[0]).stem, (bounds[0], bounds[-1])))
    return tuple(out)


def psplib_optima() -> dict[str, int]:
    """Proven optimal makespans of the PSPLIB J30 instances, by instance name (``j301_1``):
    the table ``psplib/j30_optimum.csv``, a ``problem,optimum`` header and a row per instance.
    """
    path = dataset_path("psplib/j30_optimum.csv")
    rows = _table_rows(path)
    if not rows or [v.lower() for v in rows[0][1]] != ["problem", "optimum"]:
        raise InputError("expected the header problem,optimum on line 1", str(path))
    out = {}
    for lineno, row in rows[1:]:
        if len(row) != 2:
            raise InputError(f"line {lineno}: expected problem,optimum, got {len(row)} fields",
                             str(path))  # fmt: skip
        out[Path(row[0]).stem] = _table_int(row[1], lineno, path)
    return out


def _table_rows(path: Path) -> list[tuple[int, list[str]]]:
    """The non-empty rows of a comma-separated table (a byte-order mark, spaces around the
    fields and a semicolon as the separator are all accepted), each with its line number;
    an empty table or one that cannot be read raises, naming the file."""
    from opsched._files import read_text

    text = read_text(path)
    sep = ";" if ";" in text and "," not in text else ","
    return [(i + 1, [v.strip() for v in line.split(sep)])
            for i, line in enumerate(text.splitlines()) if line.strip()]  # fmt: skip


def _table_int(value: str, lineno: int, path: Path) -> int:
    try:
        return int(value)
    except ValueError:
        raise InputError(f"line {lineno}: expected an integer, got {value!r}", str(path)) from None

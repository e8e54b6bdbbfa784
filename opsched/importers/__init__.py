"""Readers that turn files into :class:`~opsched.ir.OpGraph`.

:func:`read_graph` picks the reader by file extension: ``.json`` (``opsched-graph/1``),
``.stg`` (Standard Task Graph Set) and ``.sm`` (PSPLIB single-mode RCPSP).
"""

from __future__ import annotations

import os
from pathlib import Path

from opsched.errors import InputError
from opsched.importers.psplib import parse_psplib, read_psplib
from opsched.importers.stg import parse_stg, read_stg
from opsched.ir.graph import OpGraph
from opsched.ir.jsonio import read_graph_json

__all__ = ["READERS", "parse_psplib", "parse_stg", "read_graph", "read_psplib", "read_stg"]

READERS = {".json": read_graph_json, ".stg": read_stg, ".sm": read_psplib}


def read_graph(path: str | os.PathLike[str]) -> OpGraph:
    """Read a graph file of any supported format (chosen by extension).

    Raises
    ------
    InputError
        Unknown extension, missing file, malformed content; the message names the file and
        where in it.
    """
    p = Path(path)
    if p.is_dir():
        raise InputError("is a directory, not a file", str(p))
    if not p.exists():
        raise InputError("no such file", str(p))
    reader = READERS.get(p.suffix.lower())
    if reader is None:
        known = ", ".join(READERS)
        raise InputError(
            f"unknown graph format {p.suffix or '(no extension)'!r}; use {known}", str(p)
        )
    return reader(p)

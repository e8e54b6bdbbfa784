"""Readers that turn files into :class:`~opsched.ir.OpGraph`.

:func:`read_graph` picks the reader by file extension: ``.json`` (``opsched-graph/1``),
``.stg`` (Standard Task Graph Set), ``.sm`` (PSPLIB single-mode RCPSP), ``.rcp`` (RCPSP in
the Patterson format), ``.onnx`` (ONNX, needs ``onnx``), ``.hlo`` / ``.hlo.txt`` (XLA HLO
text) and ``.pt2`` (a ``torch.export`` archive, needs torch). The model importers are also
functions: :func:`from_torch`, :func:`from_onnx`, :func:`from_hlo_text` (see
``docs/importers.md``).
"""

from __future__ import annotations

import os
from pathlib import Path

from opsched.errors import InputError
from opsched.importers.hlo import from_hlo_text, read_hlo
from opsched.importers.onnx import from_onnx, read_onnx
from opsched.importers.psplib import parse_patterson, parse_psplib, read_patterson, read_psplib
from opsched.importers.stg import parse_stg, read_stg
from opsched.importers.torch import from_torch, read_pt2
from opsched.ir.graph import OpGraph
from opsched.ir.jsonio import read_graph_json

__all__ = [
    "READERS",
    "from_hlo_text",
    "from_onnx",
    "from_torch",
    "parse_patterson",
    "parse_psplib",
    "parse_stg",
    "read_graph",
    "read_hlo",
    "read_onnx",
    "read_patterson",
    "read_psplib",
    "read_pt2",
    "read_stg",
]

READERS = {
    ".json": read_graph_json,
    ".stg": read_stg,
    ".sm": read_psplib,
    ".rcp": read_patterson,
    ".onnx": read_onnx,
    ".hlo": read_hlo,
    ".hlo.txt": read_hlo,
    ".pt2": read_pt2,
}


def _format_of(p: Path) -> str:
    """The reader key of ``p``: ``.hlo.txt`` for double extensions, else the suffix."""
    name = p.name.lower()
    return ".hlo.txt" if name.endswith(".hlo.txt") else p.suffix.lower()


def read_graph(path: str | os.PathLike[str]) -> OpGraph:
    """Read a graph file of any supported format (chosen by extension).

    Examples
    --------
    >>> from opsched.datasets import dataset_path
    >>> g = read_graph(dataset_path("hlo/mlp.hlo"))
    >>> g.attrs["source"], g.num_ops
    ('hlo', 39)

    Raises
    ------
    ProblemError
        The reader needs an optional package that is not installed (with the install hint).
    InputError
        Unknown extension, missing file, malformed content; the message names the file and
        where in it.
    """
    p = Path(path)
    if p.is_dir():
        raise InputError("is a directory, not a file", str(p))
    if not p.exists():
        raise InputError("no such file", str(p))
    reader = READERS.get(_format_of(p))
    if reader is None:
        known = ", ".join(READERS)
        raise InputError(
            f"unknown graph format {p.suffix or '(no extension)'!r}; use {known}", str(p)
        )
    return reader(p)

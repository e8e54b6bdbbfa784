"""Reader for Kasahara's Standard Task Graph (STG) ``.stg`` files.

Layout: the first non-comment line holds ``n`` (real tasks); then ``n + 2`` lines
``id proc_time num_preds pred_ids...`` with ids in topological order, task ``0`` and task
``n + 1`` being zero-time dummy entry and exit tasks; a trailing ``#`` block describes how the
graph was generated (``CP Length``, ``Parallelism``...). Ops are named by their task id as a
decimal string, the dummy tasks are kept, every op demands one unit and has no memory sizes.
The header values are kept in ``graph.attrs["stg"]``.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from pathlib import Path

from opsched._files import parse_count as _int
from opsched._files import read_text
from opsched.errors import GraphError, InputError
from opsched.ir.graph import Op, OpGraph

__all__ = ["parse_stg", "read_stg"]

_HEADER = re.compile(r"^#\s*([A-Za-z][A-Za-z .]*?)\s*:\s*([-+0-9.eE]+)")


def parse_stg(text: str, name: str = "stg", where: str = "<stg>") -> OpGraph:
    """Parse STG text. Errors name ``where`` and the line number.

    Examples
    --------
    >>> g = parse_stg("2\\n0 0 0\\n1 3 1 0\\n2 4 1 0\\n3 0 2 1 2\\n")
    >>> g.names, g.work, g["3"].deps
    (['0', '1', '2', '3'], 7.0, ('1', '2'))
    """
    body: list[tuple[int, list[str]]] = []
    attrs: dict[str, float] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            m = _HEADER.match(stripped)
            if m:
                with contextlib.suppress(ValueError):
                    value = float(m.group(2))
                    if math.isfinite(value):
                        # a key the footer repeats (the two generators' "Random Seed"s):
                        # "Random Seed #2", not the first overwritten
                        key, n = m.group(1).strip(), 1
                        label = key
                        while label in attrs:
                            n += 1
                            label = f"{key} #{n}"
                        attrs[label] = value
            continue
        data = stripped.split("#", 1)[0].split()  # a comment after the numbers is dropped
        if data:
            body.append((lineno, data))
    if not body:
        raise InputError("no task count: the file has no data lines", where)
    lineno, first = body[0]
    if len(first) != 1:
        raise InputError(
            f"line {lineno}: expected the task count alone, got {' '.join(first)!r}", where
        )
    n = _int(first[0], "task count", lineno, where)
    tasks = body[1:]
    if len(tasks) != n + 2:
        raise InputError(
            f"expected {n + 2} task lines (n = {n} plus 2 dummy tasks), found {len(tasks)}"
            + (" (truncated file?)" if len(tasks) < n + 2 else ""),
            where,
        )
    ops: list[Op] = []
    for k, (lineno, tok) in enumerate(tasks):
        if len(tok) < 3:
            raise InputError(f"line {lineno}: expected 'id time num_preds preds...'", where)
        tid = _int(tok[0], "task id", lineno, where)
        if tid != k:
            raise InputError(f"line {lineno}: task id {tid} out of order (expected {k})", where)
        dur = _int(tok[1], "processing time", lineno, where)
        npred = _int(tok[2], "predecessor count", lineno, where)
        preds = tok[3:]
        if len(preds) != npred:
            raise InputError(
                f"line {lineno}: task {tid} declares {npred} predecessors but lists {len(preds)}",
                where,
            )
        deps = []
        for p in preds:
            pid = _int(p, "predecessor id", lineno, where)
            if not 0 <= pid < len(tasks):
                raise InputError(f"line {lineno}: task {tid} has unknown predecessor {pid}", where)
            deps.append(str(pid))
        try:
            ops.append(Op(str(tid), dur, deps=tuple(deps), kind="task"))
        except GraphError as e:
            raise InputError(f"line {lineno}: {e}", where) from None
    try:
        return OpGraph(tuple(ops), name=name, attrs={"source": "stg", "stg": attrs})
    except GraphError as e:
        raise InputError(str(e), where) from None


def read_stg(path: str | os.PathLike[str]) -> OpGraph:
    """Read an STG file; the graph is named after the file (``rand0000``)."""
    p = Path(path)
    return parse_stg(read_text(p), name=p.stem, where=str(p))

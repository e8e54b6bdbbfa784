"""Readers for single-mode RCPSP files: PSPLIB ``.sm`` and the Patterson ``.rcp`` format.

Jobs become ops named by their job number (``"1"`` .. ``"32"``, the dummy source and sink
kept); each op demands its requests of the renewable resources ``R1..R4`` (and no compute
``units``); the capacities become the graph's default ``resources``. Successor lists are
turned into ``deps``. Only single-mode files are accepted. A nonrenewable resource (``N1``,
and the nonrenewable side of a doubly constrained ``D1``) limits the jobs' total requests, not
those at one time: with one mode per job it either holds whatever the schedule (and is left
out of the graph) or holds for none (the file is refused, naming the resource).

The Patterson format (``.rcp``; PSPLIB's J30-J120 are also distributed in it, e.g. by the
OR&S group at Ghent) holds the same data without section headers: the job and resource
counts, the capacities, then per job its duration, its requests and its successors, as a
stream of integers (a successor list may wrap onto the next line). Both readers give the
same graph for the same instance.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from opsched._files import parse_count as _int
from opsched._files import read_text
from opsched.errors import GraphError, InputError
from opsched.ir.graph import Op, OpGraph

__all__ = ["parse_patterson", "parse_psplib", "read_patterson", "read_psplib"]

_SECTION = re.compile(
    r"^(PRECEDENCE\s+RELATIONS|REQUESTS\s*/\s*DURATIONS|RESOURCE\s*AVAILABILITIES)\s*:?",
    re.IGNORECASE,
)
#: A section's header as matched, squashed ("PRECEDENCE  RELATIONS" -> "PRECEDENCE RELATIONS").
_SECTION_NAMES = {
    "precedencerelations": "PRECEDENCE RELATIONS",
    "requests/durations": "REQUESTS/DURATIONS",
    "resourceavailabilities": "RESOURCEAVAILABILITIES",
}
_JOBS = re.compile(r"^jobs\s*\(\s*incl", re.IGNORECASE)
#: A header line giving how many resources of one kind there are: ``- renewable : 4 R``.
_KIND_COUNT = re.compile(
    r"^-\s*(renewable|nonrenewable|doubly\s+constrained)\s*:(.*)$", re.IGNORECASE
)
_KIND_LETTER = {"renewable": "R", "nonrenewable": "N", "doublyconstrained": "D"}


def _next_filled(lines: list[str], i: int) -> int:
    """The first line from ``i`` on that is not blank (``len(lines)`` if none)."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    return i


def parse_psplib(text: str, name: str = "psplib", where: str = "<sm>") -> OpGraph:
    """Parse PSPLIB ``.sm`` text. Errors name ``where`` and the line number.

    Examples
    --------
    >>> sm = '''jobs (incl. supersource/sink ):  3
    ... PRECEDENCE RELATIONS:
    ... jobnr.    #modes  #successors   successors
    ...    1        1          1           2
    ...    2        1          1           3
    ...    3        1          0
    ... REQUESTS/DURATIONS:
    ... jobnr. mode duration  R 1
    ... ------------------------------------------------------------------------
    ...   1      1     0       0
    ...   2      1     4       3
    ...   3      1     0       0
    ... RESOURCEAVAILABILITIES:
    ...   R 1
    ...    5
    ... '''
    >>> g = parse_psplib(sm)
    >>> g["2"].duration, dict(g["2"].demands), dict(g.resources), g["3"].deps
    (4.0, {'R1': 3}, {'R1': 5}, ('2',))
    """
    lines = text.splitlines()
    sections: dict[str, int] = {}
    njobs = None
    declared: dict[str, tuple[int, int, str]] = {}  # letter -> (count, line, kind as written)
    for i, line in enumerate(lines):
        m = _SECTION.match(line.strip())
        if m:
            sections[_SECTION_NAMES[re.sub(r"\s+", "", m.group(1)).lower()]] = i
        k = _KIND_COUNT.match(line.strip())
        if k:
            kind = re.sub(r"\s+", " ", k.group(1).lower())
            tok = (k.group(2).split() or [""])[0]
            count = _int(tok, f"{kind} resource count", i + 1, where)
            declared[_KIND_LETTER[kind.replace(" ", "")]] = (count, i + 1, kind)
        if _JOBS.match(line.strip()):
            njobs = _int(line.split(":")[-1].strip(), "job count", i + 1, where)
            if njobs < 1:
                raise InputError(f"line {i + 1}: the job count must be at least 1, got {njobs}",
                                 where)  # fmt: skip
    for sec in ("PRECEDENCE RELATIONS", "REQUESTS/DURATIONS", "RESOURCEAVAILABILITIES"):
        if sec not in sections:
            raise InputError(
                f"missing section {sec!r} (truncated or not a PSPLIB .sm file?)", where
            )
    if njobs is None:
        raise InputError("missing 'jobs (incl. supersource/sink)' line", where)

    succ = _rows(lines, sections["PRECEDENCE RELATIONS"] + 1, njobs, where, "precedence")
    req = _rows(lines, sections["REQUESTS/DURATIONS"] + 1, njobs, where, "request",
                ("job number", "mode", "duration"))  # fmt: skip
    head_line = _next_filled(lines, sections["RESOURCEAVAILABILITIES"] + 1)
    if head_line >= len(lines):
        raise InputError("missing resource names and capacities (truncated file?)", where)
    head = lines[head_line]
    res_names = [a + b for a, b in _RESOURCE_NAME.findall(head)]  # "R 1" and "R1" alike
    if not res_names or _RESOURCE_NAME.sub("", head).strip():
        raise InputError(f"line {head_line + 1}: expected resource names (R 1 R 2 ...), "
                         f"got {head.strip()!r}", where)  # fmt: skip
    twice = next((r for k, r in enumerate(res_names) if r in res_names[:k]), None)
    if twice is not None:  # the second column had replaced the first's capacity and requests
        raise InputError(f"line {head_line + 1}: resource {twice} is listed twice", where)
    cap_line = _next_filled(lines, head_line + 1)
    if cap_line >= len(lines):
        raise InputError("missing resource capacities (truncated file?)", where)
    caps = [_int(t, "capacity", cap_line + 1, where) for t in lines[cap_line].split()]
    if len(caps) != len(res_names):
        raise InputError(
            f"line {cap_line + 1}: {len(caps)} capacities for resources {res_names}", where
        )
    # the header's counts must be the tables' (the request columns are checked against these
    # same names below); a file without those header lines is read by its tables alone
    for letter, (count, lineno, kind) in declared.items():
        listed = [r for r in res_names if r[0].upper() == letter]
        if len(listed) != count:
            raise InputError(f"line {lineno}: {count} {kind} resources, but "
                             f"RESOURCEAVAILABILITIES lists {listed}", where)  # fmt: skip

    deps: dict[int, list[str]] = {j: [] for j in range(1, njobs + 1)}
    for lineno, tok in succ:
        job, modes, count = tok[0], tok[1], tok[2]
        if modes != 1:
            raise InputError(
                f"line {lineno}: job {job} has {modes} modes (single-mode only)", where
            )
        if len(tok) != 3 + count:
            raise InputError(
                f"line {lineno}: job {job} declares {count} successors but lists {len(tok) - 3}",
                where,
            )
        for s in tok[3:]:
            _add_successor(deps, job, s, lineno, where)
    cols = _request_columns(lines, sections["REQUESTS/DURATIONS"] + 1, res_names, where)
    rows: list[tuple[int, int, int, dict[str, int]]] = []
    for lineno, tok in req:
        if len(tok) != 3 + len(res_names):
            raise InputError(
                f"line {lineno}: expected job, mode, duration and {len(res_names)} requests",
                where,
            )
        got = dict(zip(cols, tok[3:], strict=True))
        rows.append((lineno, tok[0], tok[2], {r: got[r] for r in res_names}))
    capacity = dict(zip(res_names, caps, strict=True))
    _check_nonrenewable(rows, capacity, cap_line + 1, where)
    return _job_graph(rows, deps, capacity, name, where)


#: A resource name of a PSPLIB header: its letter (R renewable, N nonrenewable, D doubly
#: constrained) and number, with or without a space between them.
_RESOURCE_NAME = re.compile(r"([A-Za-z]+)\s*(\d+)")


def _request_columns(lines: list[str], first: int, names: list[str], where: str) -> list[str]:
    """The resources of the request columns, in their order: as the REQUESTS/DURATIONS
    header names them (they may come in another order than the availabilities', ``names``;
    they were read in that order, swapping ``R 2  R 1``), else ``names``."""
    for i in range(first, min(first + 3, len(lines))):
        head = lines[i].strip()
        if head.lower().startswith("jobnr"):
            cols = [a + b for a, b in _RESOURCE_NAME.findall(head.split("duration", 1)[-1])]
            if sorted(cols) != sorted(names):
                raise InputError(
                    f"line {i + 1}: request columns {cols} are not the resources {names} of "
                    f"RESOURCEAVAILABILITIES",
                    where,
                )
            return cols
    return list(names)


def _add_successor(deps: dict[int, list[str]], job: int, s: int, lineno: int, where: str) -> None:
    """Record that ``job`` precedes ``s`` (listed on line ``lineno``)."""
    if s == job:
        raise InputError(f"line {lineno}: job {job} lists itself as a successor", where)
    if s not in deps:
        raise InputError(f"line {lineno}: job {job} has unknown successor {s}", where)
    if str(job) in deps[s]:
        raise InputError(f"line {lineno}: job {job} lists successor {s} twice", where)
    deps[s].append(str(job))


def _check_nonrenewable(
    rows: list[tuple[int, int, int, dict[str, int]]],
    capacity: dict[str, int],
    lineno: int,
    where: str,
) -> None:
    """Refuse an instance whose nonrenewable resources (``N*``, ``D*``) its jobs overdraw in
    total, then leave the ``N*`` ones out of the jobs' demands and the capacities: single-mode,
    they hold for every schedule. A doubly constrained ``D*`` stays, renewable as well."""
    for r in [r for r in capacity if r[0] in "NnDd"]:
        total = sum(d[r] for _, _, _, d in rows)
        if total > capacity[r]:
            raise InputError(
                f"line {lineno}: no schedule exists: the jobs request {total} of the "
                f"nonrenewable resource {r} in all, its capacity is {capacity[r]}",
                where,
            )
        if r[0] in "Nn":
            del capacity[r]
            for _, _, _, d in rows:
                del d[r]


def _job_graph(
    jobs: list[tuple[int, int, int, dict[str, int]]],
    deps: dict[int, list[str]],
    resources: dict[str, int],
    name: str,
    where: str,
) -> OpGraph:
    """The graph of ``(line, job, duration, requests)`` rows; errors name the job's line."""
    ops = []
    for lineno, job, dur, demands in jobs:
        try:
            ops.append(Op(str(job), dur, deps=tuple(deps[job]), demands=demands, kind="job"))
        except (GraphError, KeyError) as e:
            raise InputError(f"line {lineno}: {e}", where) from None
    try:
        return OpGraph(tuple(ops), name=name, resources=resources, attrs={"source": "psplib"})
    except GraphError as e:
        raise InputError(str(e), where) from None


def _rows(
    lines: list[str], first: int, count: int, where: str, what: str,
    columns: tuple[str, ...] = (),
) -> list[tuple[int, list[int]]]:  # fmt: skip
    """The ``count`` job rows of a table from line ``first``; a bad field is named by its
    column (``columns``, the table's first fields: job, mode, duration) or by ``what``."""
    rows: list[tuple[int, list[int]]] = []
    i = first
    while len(rows) < count:
        if i >= len(lines) or lines[i].lstrip().startswith("*"):
            raise InputError(f"{what} table has {len(rows)} of {count} jobs (truncated?)", where)
        s = lines[i].strip()
        if s and not s.startswith("-") and not s.lower().startswith("jobnr"):  # rule, header
            fields = s.split()
            names = [
                columns[j] if j < len(columns) else f"{what} field" for j in range(len(fields))
            ]
            rows.append(
                (i + 1, [_int(t, n, i + 1, where) for t, n in zip(fields, names, strict=True)])
            )
        i += 1
    for k, (lineno, tok) in enumerate(rows):
        if len(tok) < 3 or tok[0] != k + 1:
            raise InputError(f"line {lineno}: expected job {k + 1} in the {what} table", where)
    # the table must end where the header's job count says (extra jobs were dropped silently)
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i < len(lines) and lines[i].strip()[:1].isdigit():
        raise InputError(
            f"line {i + 1}: the {what} table lists more jobs than the {count} of the 'jobs "
            f"(incl. supersource/sink)' line",
            where,
        )
    return rows


def read_psplib(path: str | os.PathLike[str]) -> OpGraph:
    """Read a PSPLIB ``.sm`` file; the graph is named after the file (``j301_1``)."""
    p = Path(path)
    return parse_psplib(read_text(p), name=p.stem, where=str(p))


def parse_patterson(text: str, name: str = "rcp", where: str = "<rcp>") -> OpGraph:
    """Parse Patterson-format (``.rcp``) RCPSP text. Errors name ``where`` and the line.

    Examples
    --------
    >>> rcp = '''3 1
    ... 5
    ... 0 0 1 2
    ... 4 3 1 3
    ... 0 0 0
    ... '''
    >>> g = parse_patterson(rcp)
    >>> g["2"].duration, dict(g["2"].demands), dict(g.resources), g["3"].deps
    (4.0, {'R1': 3}, {'R1': 5}, ('2',))
    """
    toks = [(i + 1, t) for i, line in enumerate(text.splitlines()) for t in line.split()]
    pos = 0

    def take(what: str) -> int:
        nonlocal pos
        if pos >= len(toks):
            last = toks[-1][0] if toks else 0
            raise InputError(f"ends after line {last} while reading {what} (truncated?)", where)
        lineno, tok = toks[pos]
        pos += 1
        return _int(tok, what, lineno, where)

    njobs = take("job count")
    nres = take("resource count")
    if njobs < 1 or nres < 1:
        raise InputError(f"line 1: needs at least one job and one resource, got {njobs}, {nres}",
                         where)  # fmt: skip
    # each job takes a duration, a request per resource and a successor count: a header
    # whose counts need more numbers than the file holds is refused before any list is built
    need = 2 + nres + njobs * (nres + 2)
    if need > len(toks):
        raise InputError(f"line 1: {njobs} jobs and {nres} resources need at least {need} "
                         f"numbers, the file has {len(toks)} (a wrong count, or truncated?)",
                         where)  # fmt: skip
    res_names = [f"R{r + 1}" for r in range(nres)]
    caps = [take(f"capacity of {r}") for r in res_names]
    deps: dict[int, list[str]] = {j: [] for j in range(1, njobs + 1)}
    jobs: list[tuple[int, int, int, dict[str, int]]] = []
    for job in range(1, njobs + 1):
        lineno = toks[pos][0] if pos < len(toks) else 0
        dur = take(f"duration of job {job}")
        demands = {r: take(f"request of job {job} for {r}") for r in res_names}
        count = take(f"successor count of job {job}")
        for _ in range(count):
            lno = toks[pos][0] if pos < len(toks) else lineno
            s = take(f"successor of job {job}")
            if s not in deps and s != job and lno != lineno:
                raise InputError(f"line {lno}: job {job} has unknown successor {s} (job {job} "
                                 f"starts on line {lineno}: does its successor count match?)",
                                 where)  # fmt: skip
            _add_successor(deps, job, s, lno, where)
        jobs.append((lineno, job, dur, demands))
    if pos < len(toks):
        lineno, tok = toks[pos]
        raise InputError(f"line {lineno}: unexpected {tok!r} after the last of {njobs} jobs "
                         "(a successor count that does not match its list?)", where)  # fmt: skip
    return _job_graph(jobs, deps, dict(zip(res_names, caps, strict=True)), name, where)


def read_patterson(path: str | os.PathLike[str]) -> OpGraph:
    """Read a Patterson-format ``.rcp`` file; the graph is named after the file."""
    p = Path(path)
    return parse_patterson(read_text(p), name=p.stem, where=str(p))

"""File helpers shared by every reader and writer: one-line errors, atomic writes.

Inside a command (:func:`guarding_outputs`, which the CLI's error handler opens) the files a
command reads are noted (:func:`note_input`), and an output that would replace one of them,
or that the command already wrote, is refused before it is written: ``opsched results
db.sqlite -o db.sqlite`` would otherwise turn the database into a CSV. From Python nothing is
tracked (reading a graph and writing it back to its file is a normal thing to do there).

Inside a command, files are also *staged*: each output is written in full to a temporary file
next to it, and the temporaries are renamed into place only when the command ends well (it
returns, or exits with status 0 or 1, the "no schedule" / "invalid" verdicts). A command that
fails after writing one output, say on a disk that fills up while it writes its second, so
leaves none of its files written or replaced. The renames at the end are undone together:
before each one, the file it replaces is kept under a second name (a hard link), so a k-th
rename that fails (a folder made read-only during the command) puts the earlier files back
as they were and removes the ones that were new. Only a crash in the middle of the renames
(power lost, ``kill -9``) can leave some done and some not. A device or a pipe
(``/dev/stdout``) cannot be staged and is written at once; when that is the command's own
standard output, what the command says after it (``wrote ...``, a summary, ``--json``) goes
to stderr, so the piped file is the output alone. A command whose standard output is closed
under it (``| head``) keeps its files; one stopped with Ctrl-C leaves none.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import stat
import sys
from collections.abc import Collection, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from opsched.errors import InputError

__all__ = [
    "check_writable",
    "guarding_outputs",
    "is_stream",
    "note_input",
    "parse_count",
    "read_text",
    "refuse_lone_surrogates",
    "write_bytes_atomic",
    "write_text_atomic",
]


#: inside a command: (the inputs it read, the outputs it wrote), as resolved paths
_GUARD: ContextVar[tuple[set[str], set[str]] | None] = ContextVar("opsched_files", default=None)
#: inside a command: the outputs written so far, as (temporary file, final path)
_STAGED: ContextVar[list[tuple[Path, Path]] | None] = ContextVar("opsched_staged", default=None)


@contextlib.contextmanager
def guarding_outputs() -> Iterator[None]:
    """Refuse, until the block ends, outputs that replace an input or an earlier output, and
    stage the outputs written inside it: they are put in place when the block ends without an
    error (or with ``SystemExit`` of status 0 or 1), and dropped otherwise.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> try:
    ...     with guarding_outputs():
    ...         write_text_atomic("a", d / "a.txt")
    ...         raise InputError("the second output failed")
    ... except InputError:
    ...     pass
    >>> sorted(p.name for p in d.iterdir())  # neither a.txt nor its temporary is left
    []
    >>> with guarding_outputs():
    ...     write_text_atomic("a", d / "a.txt")
    ...     (d / "a.txt").exists()  # staged until the block ends
    False
    >>> (d / "a.txt").read_text()
    'a'
    """
    token = _GUARD.set((set(), set()))
    stdout = sys.stdout  # an output written to it sends the rest of what is said to stderr
    staged: list[tuple[Path, Path]] = []
    stage_token = _STAGED.set(staged)
    ok = False
    try:
        yield
        ok = True
    except SystemExit as e:
        ok = e.code in (None, 0, 1)  # a verdict, not a failure: what it wrote stands
        raise
    except BrokenPipeError:  # only the reader of stdout went away (`| head`): the files stand
        ok = True
        raise
    finally:
        if sys.stdout is not stdout:
            sys.stdout.flush()
            sys.stdout = stdout
        _STAGED.reset(stage_token)
        _GUARD.reset(token)
        if ok:
            _commit(staged)
        else:
            for tmp, _ in staged:
                tmp.unlink(missing_ok=True)


def _commit(staged: list[tuple[Path, Path]]) -> None:
    """Rename each staged temporary onto its path, all or none: the file each rename replaces
    is kept under a second name (a hard link) until every rename is done, and put back if a
    later one fails; a file that was new is removed then. (On a file system without hard
    links an old file cannot be kept: its rename is not undone.)"""
    done: list[tuple[Path, Path | None, bool]] = []  # (final, its old file kept, was new)
    try:
        for i, (tmp, final) in enumerate(staged):
            second = final.with_name(f".{final.name}.old{os.getpid()}")
            keep: Path | None = second
            new = False
            with contextlib.suppress(OSError):
                second.unlink(missing_ok=True)  # a crash's leftover
            try:
                os.link(final, second)
            except FileNotFoundError:
                keep, new = None, True
            except OSError:
                keep = None
            try:
                os.replace(tmp, final)
            except OSError as e:
                if keep is not None:
                    keep.unlink(missing_ok=True)
                for t, _ in staged[i:]:
                    t.unlink(missing_ok=True)
                _undo(done)
                raise InputError(f"cannot write: {e.strerror or e}", str(final)) from None
            done.append((final, keep, new))
    finally:
        for _, keep, _ in done:
            if keep is not None:
                keep.unlink(missing_ok=True)


def _undo(done: list[tuple[Path, Path | None, bool]]) -> None:
    """Put back the files the renames in ``done`` replaced, and remove those they created."""
    for final, keep, new in reversed(done):
        with contextlib.suppress(OSError):
            if keep is not None:
                os.replace(keep, final)
            elif new:
                final.unlink()


def is_stream(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a device or a pipe (``/dev/stdout``, a FIFO), which an output is
    written into as it is: its name says nothing of the format, so a command that checks an
    output's extension lets such a path through.

    >>> is_stream("/dev/null"), is_stream(__file__), is_stream("no/such/file.json")
    (True, False, False)
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _is_stdout(p: Path) -> bool:
    """Whether ``p`` is this process's standard output (``/dev/stdout``, a link to the pipe
    or terminal that fd 1 is)."""
    try:
        a, b = os.stat(p), os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False  # no stdout, or one without a file descriptor (a test's capture)
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _key(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(path)


def note_input(path: str | os.PathLike[str]) -> None:
    """Note ``path`` as read by the running command (nothing happens outside a command)."""
    guard = _GUARD.get()
    if guard is not None:
        guard[0].add(_key(path))


def _check_target(p: Path, others: Collection[str] = ()) -> str:
    """Refuse an output at an input of the running command, at an output it wrote, or at
    one of ``others``; return the path's key."""
    k = _key(p)
    guard = _GUARD.get()
    if guard is not None and k in guard[0]:
        raise InputError("would overwrite an input of this command; choose another path", str(p))
    if k in others or (guard is not None and k in guard[1]):
        raise InputError("is given for two outputs; choose another path", str(p))
    return k


def read_text(path: str | os.PathLike[str]) -> str:
    """Return the text of ``path`` (a UTF-8 byte-order mark dropped); a missing, unreadable,
    empty or non-UTF-8 file raises."""
    p = Path(path)
    note_input(p)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("no such file", str(p)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", str(p)) from None
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text (byte {e.start})", str(p)) from None
    except OSError as e:
        raise InputError(e.strerror or str(e), str(p)) from None
    if not text.strip():
        raise InputError("file is empty", str(p))
    return text


def check_writable(*paths: str | os.PathLike[str] | None) -> None:
    """Raise, before anything is written, if a file cannot be written at one of ``paths``
    (None: an output not asked for): its folder is missing or not a folder, or the path is a
    folder. A command with several outputs checks them all first, so that a bad last one
    leaves no earlier one written.

    Examples
    --------
    >>> check_writable(None, ".")
    Traceback (most recent call last):
    opsched.errors.InputError: .: is a directory, not a file
    >>> check_writable("no/such/dir/out.csv")
    Traceback (most recent call last):
    opsched.errors.InputError: no/such/dir/out.csv: no such folder 'no/such/dir'
    """
    seen: set[str] = set()
    for path in paths:
        if path is None:
            continue
        p = Path(path)
        seen.add(_check_target(p, seen))
        if p.is_dir():
            raise InputError("is a directory, not a file", str(p))
        parent = p.parent
        if not parent.exists():
            raise InputError(f"no such folder {str(parent)!r}", str(p))
        if not parent.is_dir():
            raise InputError(f"{str(parent)!r} is not a folder", str(p))
        if not os.access(parent, os.W_OK):
            raise InputError(f"folder {str(parent)!r} is not writable", str(p))


def write_text_atomic(text: str, path: str | os.PathLike[str]) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename.

    Readers never see a half-written file, and on an error nothing is left at ``path``.
    Inside a command the file is put in place when the command ends (:func:`guarding_outputs`).
    """
    write_bytes_atomic(text.encode("utf-8"), path)


def write_bytes_atomic(data: bytes, path: str | os.PathLike[str]) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename (as
    :func:`write_text_atomic`).

    A symbolic link is written through (its target is replaced, the link kept); a device or
    a pipe (``/dev/stdout``, a FIFO) is written to directly, never replaced by a file.
    """
    p = Path(path)
    k = _check_target(p)
    guard = _GUARD.get()
    if guard is not None:
        guard[1].add(k)
    mode = None
    with contextlib.suppress(OSError):
        mode = p.stat().st_mode  # through a link: /dev/stdout's target may be "pipe:[N]"
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        to_stdout = guard is not None and _is_stdout(p)
        if to_stdout:
            sys.stdout.flush()  # what the command printed before stays ahead of the file
        try:
            with open(p, "wb") as f:
                f.write(data)
        except OSError as e:
            raise InputError(f"cannot write: {e.strerror or e}", str(path)) from None
        if to_stdout:
            sys.stdout = sys.stderr  # the rest of what the command says (guarding_outputs)
        return
    if p.is_symlink():
        p = Path(os.path.realpath(p))
    if mode is not None and stat.S_ISDIR(mode):  # refused now, not at the staged rename
        raise InputError("is a directory, not a file", str(path))
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}")
    staged = _STAGED.get()
    try:
        tmp.write_bytes(data)
        if staged is None:
            os.replace(tmp, p)
        else:
            staged.append((tmp, p))
    except OSError as e:
        with contextlib.suppress(OSError):  # a parent that is a file: no temporary was made
            tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write: {e.strerror or e}", str(p)) from None


def parse_count(tok: str, what: str, lineno: int, where: str) -> int:
    """A non-negative integer field of a text format; errors name the line."""
    try:
        v = int(tok)
    except ValueError:
        raise InputError(f"line {lineno}: {what} must be an integer, got {tok!r}", where) from None
    if v < 0:
        raise InputError(f"line {lineno}: {what} must be >= 0, got {v}", where)
    return v


#: a JSON escape of a UTF-16 surrogate (``\ud800``-``\udfff``): only these can put one in a string
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def refuse_lone_surrogates(doc: Any, raw: str, where: str) -> None:
    r"""Raise if a string of the parsed JSON ``doc`` holds a lone UTF-16 surrogate.

    JSON's ``\ud800`` escapes parse to such strings, which are no Unicode text: every later
    write of the name (a schedule, a table, the terminal) would fail. ``raw`` is the text the
    document was parsed from, decoded strictly (so it holds no surrogate itself): without a
    surrogate escape in it, nothing is walked.

    >>> import json
    >>> pair = '["\\ud83d\\ude00"]'  # a pair of surrogates: one character (an emoji)
    >>> refuse_lone_surrogates(json.loads(pair), pair, "f.json")
    >>> lone = '{"a\\ud800": 1}'
    >>> refuse_lone_surrogates(json.loads(lone), lone, "f.json")
    Traceback (most recent call last):
    opsched.errors.InputError: f.json: invalid JSON: the string 'a\ud800' holds a lone UTF-16 ...
    """
    if _SURROGATE_ESCAPE.search(raw) is None:
        return
    stack = [doc]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
        elif isinstance(x, str):
            try:
                x.encode("utf-8")
            except UnicodeEncodeError:
                raise InputError(
                    f"invalid JSON: the string {x[:60]!r} holds a lone UTF-16 surrogate,"
                    " which is no Unicode character",
                    where,
                ) from None

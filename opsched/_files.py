"""File helpers shared by every reader and writer: one-line errors, atomic writes.

Inside a command (:func:`guarding_outputs`, which the CLI's error handler opens) the files a
command reads are noted (:func:`note_input`), and an output that would replace one of them,
or that the command already wrote, is refused before it is written: ``opsched results
db.sqlite -o db.sqlite`` would otherwise turn the database into a CSV. From Python nothing is
tracked (reading a graph and writing it back to its file is a normal thing to do there).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Collection, Iterator
from contextvars import ContextVar
from pathlib import Path

from opsched.errors import InputError

__all__ = [
    "check_writable",
    "guarding_outputs",
    "note_input",
    "parse_count",
    "read_text",
    "write_bytes_atomic",
    "write_text_atomic",
]


#: inside a command: (the inputs it read, the outputs it wrote), as resolved paths
_GUARD: ContextVar[tuple[set[str], set[str]] | None] = ContextVar("opsched_files", default=None)


@contextlib.contextmanager
def guarding_outputs() -> Iterator[None]:
    """Refuse, until the block ends, outputs that replace an input or an earlier output."""
    token = _GUARD.set((set(), set()))
    try:
        yield
    finally:
        _GUARD.reset(token)


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
    if p.is_symlink():
        p = Path(os.path.realpath(p))
    with contextlib.suppress(OSError):
        if not stat.S_ISREG(p.stat().st_mode) and not p.is_dir():
            try:
                with open(p, "wb") as f:
                    f.write(data)
            except OSError as e:
                raise InputError(f"cannot write: {e.strerror or e}", str(path)) from None
            return
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, p)
    except OSError as e:
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

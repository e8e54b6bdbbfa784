"""Dependencies of a program: edges implied by read and write sets in program order.

A graph in *program form* lists, per op, the buffers it ``reads`` and ``writes`` instead of
explicit ``deps``. Executing the ops one after another in that order is the reference
semantics; any reordering must keep three kinds of ordering:

* RAW (read after write, true data dependence): a reader waits for the last writer;
* WAR (write after read, anti dependence): a writer waits for every reader of the old value;
* WAW (write after write, output dependence): a writer waits for the previous writer.

WAR and WAW edges exist only because a buffer is reused; renaming buffers
(:func:`opsched.transforms.rename_buffers`) removes them at the cost of memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DEP_KINDS", "Dependency", "derive_dependencies"]

DEP_KINDS = ("RAW", "WAR", "WAW")


@dataclass(frozen=True, slots=True)
class Dependency:
    """One derived edge: ``dst`` must wait for ``src`` because of ``buffer`` (kind RAW/WAR/WAW)."""

    src: int
    dst: int
    kind: str
    buffer: str


def derive_dependencies(
    reads: Sequence[Sequence[str]],
    writes: Sequence[Sequence[str]],
    kinds: Sequence[str] = DEP_KINDS,
) -> list[Dependency]:
    """Derive the dependency edges of a straight-line program.

    Parameters
    ----------
    reads, writes
        For op ``i`` in program order, the buffers it reads and writes.
    kinds
        Which kinds of edges to return (any of ``"RAW"``, ``"WAR"``, ``"WAW"``).

    Returns
    -------
    list of Dependency
        Edges ``src -> dst`` with ``src < dst``, in the order they were found. When one pair is
        ordered for several reasons, each reason is its own entry.

    Examples
    --------
    ``x = a(); y = b(x); x = c(); d(x, y)``:

    >>> deps = derive_dependencies([[], ["x"], [], ["x", "y"]], [["x"], ["y"], ["x"], []])
    >>> [(d.src, d.dst, d.kind) for d in deps]
    [(0, 1, 'RAW'), (1, 2, 'WAR'), (0, 2, 'WAW'), (2, 3, 'RAW'), (1, 3, 'RAW')]
    """
    unknown = set(kinds) - set(DEP_KINDS)
    if unknown:
        raise ValueError(f"unknown dependency kinds {sorted(unknown)}; use {DEP_KINDS}")
    want = set(kinds)
    last_writer: dict[str, int] = {}
    readers_since_write: dict[str, list[int]] = {}
    out: list[Dependency] = []
    for i, (rs, ws) in enumerate(zip(reads, writes, strict=True)):
        for b in dict.fromkeys(rs):
            w = last_writer.get(b)
            if w is not None and w != i and "RAW" in want:
                out.append(Dependency(w, i, "RAW", b))
        for b in dict.fromkeys(ws):
            if "WAR" in want:
                for r in readers_since_write.get(b, []):
                    if r != i:
                        out.append(Dependency(r, i, "WAR", b))
            w = last_writer.get(b)
            if w is not None and w != i and "WAW" in want:
                out.append(Dependency(w, i, "WAW", b))
        for b in dict.fromkeys(rs):
            readers_since_write.setdefault(b, []).append(i)
        for b in dict.fromkeys(ws):
            last_writer[b] = i
            readers_since_write[b] = []
    return out

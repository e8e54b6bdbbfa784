"""Dependency derivation and buffer renaming for graphs in program form.

The seed's "dependency identification": from each op's ``reads``/``writes`` and program order,
derive RAW (true), WAR (anti) and WAW (output) dependencies (:func:`derive_deps`). Only RAW
edges carry data; WAR and WAW edges exist because a buffer is reused, and
:func:`rename_buffers` removes them by giving every write a fresh buffer (SSA), which exposes
more parallelism at the cost of memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from opsched.ir.graph import Op, OpGraph, require_graph
from opsched.ir.program import DEP_KINDS, derive_dependencies

__all__ = [
    "NamedDependency",
    "RenameReport",
    "dependency_edges",
    "derive_deps",
    "program_order_chain",
    "rename_buffers",
]


@dataclass(frozen=True, slots=True)
class NamedDependency:
    """A derived edge between op names: ``dst`` waits for ``src`` (RAW/WAR/WAW on ``buffer``)."""

    src: str
    dst: str
    kind: str
    buffer: str

    def __str__(self) -> str:
        return f"{self.src} -> {self.dst} ({self.kind} on {self.buffer})"


def dependency_edges(
    graph: OpGraph, kinds: Sequence[str] = DEP_KINDS
) -> tuple[OpGraph, list[NamedDependency]]:
    """Derive the dependencies of a program-form graph and return the graph that has them.

    The returned graph's ``deps`` are exactly the derived edges of the chosen ``kinds`` (one
    edge per ordered pair, whatever the number of reasons); the list gives every reason.

    Examples
    --------
    ``x = A(); B(x) -> y; x = C(); D(x, y)``:

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("A", 1, writes=("x",)), Op("B", 1, reads=("x",), writes=("y",)),
    ...              Op("C", 1, writes=("x",)), Op("D", 1, reads=("x", "y"))))
    >>> _, edges = dependency_edges(g)
    >>> [str(e) for e in edges]  # doctest: +NORMALIZE_WHITESPACE
    ['A -> B (RAW on x)', 'B -> C (WAR on x)', 'A -> C (WAW on x)', 'C -> D (RAW on x)',
     'B -> D (RAW on y)']
    >>> [op.deps for op in dependency_edges(g, kinds=["RAW"])[0].ops]
    [(), ('A',), (), ('C', 'B')]
    """
    require_graph(graph, "dependency_edges")
    ops = graph.ops
    raw = derive_dependencies([op.reads for op in ops], [op.writes for op in ops], kinds)
    names = graph.names
    edges = [NamedDependency(names[e.src], names[e.dst], e.kind, e.buffer) for e in raw]
    deps: list[dict[str, None]] = [{} for _ in ops]
    for e in raw:
        deps[e.dst][names[e.src]] = None
    new_ops = [replace(op, deps=tuple(deps[i])) for i, op in enumerate(ops)]
    return graph.replace_ops(new_ops), edges


def derive_deps(graph: OpGraph, kinds: Sequence[str] = DEP_KINDS) -> OpGraph:
    """The graph whose dependencies are those derived from reads/writes (see above)."""
    require_graph(graph, "derive_deps")
    return dependency_edges(graph, kinds)[0]


def program_order_chain(graph: OpGraph) -> OpGraph:
    """Every op depends on the one before it in file order: the naive sequential program.

    >>> from opsched.demo import critical_path_program
    >>> [op.deps for op in program_order_chain(critical_path_program()).ops]
    [(), ('A',), ('B',), ('C',), ('D',)]
    """
    ops = [
        replace(op, deps=(graph.ops[i - 1].name,) if i else ()) for i, op in enumerate(graph.ops)
    ]
    return graph.replace_ops(ops)


@dataclass(frozen=True)
class RenameReport:
    """What :func:`rename_buffers` changed.

    ``extra_bytes`` bounds the memory renaming can add: without renaming, the versions of a
    buffer share one allocation of the largest version's size; with renaming each version has
    its own, so at worst all are live at once. A version's size is its writer's
    ``output_bytes``.
    """

    renamed: dict[str, list[str]]
    removed_edges: list[NamedDependency]
    extra_bytes: int


def rename_buffers(graph: OpGraph) -> tuple[OpGraph, RenameReport]:
    """Give every write a fresh buffer version; WAR and WAW dependencies disappear.

    Returns the renamed graph, whose ``deps`` are its RAW dependencies, and a report.

    Examples
    --------
    ``x = A(); B(x); x = C(); D(x)``: renaming the second ``x`` lets C run beside A and B.

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("A", 1, writes=("x",), output_bytes=8), Op("B", 1, reads=("x",)),
    ...              Op("C", 1, writes=("x",), output_bytes=8), Op("D", 1, reads=("x",))))
    >>> new, rep = rename_buffers(g)
    >>> [op.deps for op in new.ops], rep.renamed, rep.extra_bytes
    ([(), ('A',), (), ('C',)], {'x': ['x', 'x#1']}, 8)
    >>> [str(e) for e in rep.removed_edges]
    ['B -> C (WAR on x)', 'A -> C (WAW on x)']
    """
    version: dict[str, int] = {}
    current: dict[str, str] = {}
    sizes: dict[str, list[int]] = {}
    renamed: dict[str, list[str]] = {}
    new_ops: list[Op] = []
    read_initial: set[str] = set()  # buffers read before any write: their name is taken
    # a new version's name must not be one the program already uses: renaming x's second
    # write to "x#1" beside a buffer of that name would merge the two, and readers of the real
    # "x#1" would wait for (and read) the wrong writer
    taken = {b for op in graph.ops for b in (*op.reads, *op.writes)}
    for op in graph.ops:
        reads = tuple(current.get(b, b) for b in op.reads)
        read_initial.update(b for b in op.reads if b not in version)
        writes = []
        for b in op.writes:
            k = version.get(b, 0 if b in read_initial else -1) + 1
            v = b
            if k > 0:
                while f"{b}#{k}" in taken:
                    k += 1
                v = f"{b}#{k}"
                taken.add(v)
            version[b] = k
            current[b] = v
            writes.append(v)
            renamed.setdefault(b, []).append(v)
            sizes.setdefault(b, []).append(op.output_bytes)
        new_ops.append(replace(op, reads=reads, writes=tuple(writes)))
    renamed = {b: vs for b, vs in renamed.items() if len(vs) > 1 or vs[0] != b}
    # a buffer whose initial value was read keeps that value beside its versions, but the
    # initial value is an input of the graph with no size here: only the versions count
    extra = sum(sum(sizes[b]) - max(sizes[b]) for b in renamed)
    _, before = dependency_edges(graph)
    removed = [e for e in before if e.kind in ("WAR", "WAW")]
    out = derive_deps(graph.replace_ops(new_ops), kinds=("RAW",))
    return out, RenameReport(renamed, removed, int(extra))

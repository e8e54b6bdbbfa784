"""networkx interop: the IR as a :class:`networkx.DiGraph` and back.

networkx is the interop layer only; opsched's own algorithms run on the CSR arrays of
:class:`~opsched.ir.graph.OpGraph`.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from opsched.ir.graph import Op, OpGraph

__all__ = ["from_networkx", "to_networkx"]

_FIELDS = ("duration", "output_bytes", "workspace_bytes", "demands", "kind", "output", "attrs")


def to_networkx(graph: OpGraph) -> nx.DiGraph:
    """Return a DiGraph whose nodes are op names with the op fields as attributes.

    Examples
    --------
    >>> g = OpGraph((Op("a", 1), Op("b", 2, deps=("a",))))
    >>> d = to_networkx(g)
    >>> list(d.edges), d.nodes["b"]["duration"]
    ([('a', 'b')], 2.0)
    """
    d = nx.DiGraph(
        name=graph.name,
        persistent_bytes=graph.persistent_bytes,
        resources=dict(graph.resources),
        attrs=dict(graph.attrs),
    )
    for op in graph.ops:
        d.add_node(op.name, **{f: getattr(op, f) for f in _FIELDS})
    for op in graph.ops:
        for dep in op.deps:
            d.add_edge(dep, op.name)
    return d


def from_networkx(d: nx.DiGraph, name: str | None = None, **graph_fields: Any) -> OpGraph:
    """Build an OpGraph from a DiGraph; node attributes named like :class:`Op` fields are used.

    Nodes are taken in ``d.nodes`` order; node keys become op names (``str(node)``).
    """
    ops = []
    for node, data in d.nodes(data=True):
        kw = {f: data[f] for f in _FIELDS if f in data}
        deps = tuple(str(u) for u in d.predecessors(node))
        ops.append(Op(str(node), deps=deps, **kw))
    for key in ("persistent_bytes", "resources", "attrs"):
        if key in d.graph and key not in graph_fields:
            graph_fields[key] = d.graph[key]
    return OpGraph(tuple(ops), name=name or str(d.graph.get("name") or "graph"), **graph_fields)

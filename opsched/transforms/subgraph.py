"""Cut a piece out of a graph (a cell, a stage, a block) as a graph of its own.

The piece is scheduled as if it ran alone, with the rest of the network already done before
it and run after it:

* every tensor the piece reads from outside becomes a graph input: an op of kind
  ``"input"`` with duration 0, no unit demand and the producer's ``output_bytes`` (named
  like the producer, so the piece's own deps stay as they were). Like the network input of
  a whole graph, it is live from its (zero-length) start until its last reader in the piece
  ends;
* every op of the piece whose tensor is read only outside it (or that is a graph output)
  is a graph output of the piece: its tensor stays allocated until the piece's makespan (it
  is handed to the next piece). A tensor read both inside and outside is freed when its
  last reader inside ends: opsched's liveness rule keeps a tensor to the end only when no
  op of the graph reads it, so the piece undercounts such a tensor after that point;
* the graph's resources are kept; its ``persistent_bytes`` (the whole network's weights)
  are not, unless asked for: they would dwarf the piece's activations, and caps set as a
  fraction of the peak would then mean little.

So the peak memory of a schedule of the piece is the activation memory the network needs
while that piece runs, counting what it inherits and what it hands on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from opsched.errors import GraphError
from opsched.ir.graph import Op, OpGraph

__all__ = ["extract", "select"]


def select(graph: OpGraph, prefixes: str | Iterable[str]) -> list[int]:
    """Indices of the ops named ``P`` or ``P.<anything>`` (or ``P+...`` for a fused op).

    Examples
    --------
    >>> from opsched.demo import seed_graph
    >>> select(seed_graph(), ["Conv1", "Conv2"])
    [1, 3]
    """
    want = [prefixes] if isinstance(prefixes, str) else list(prefixes)
    if not want:
        raise GraphError(f"graph {graph.name!r}: no prefix given to select ops")
    out = []
    for i, op in enumerate(graph.ops):
        # a fused op is named after its members, joined by "+": it belongs to the piece of
        # its first member
        first = op.name.split("+", 1)[0]
        if any(first == p or first.startswith(p + ".") for p in want):
            out.append(i)
    return out


def extract(
    graph: OpGraph,
    prefixes: str | Iterable[str],
    *,
    name: str | None = None,
    keep_persistent: bool = False,
) -> OpGraph:
    """The ops selected by ``prefixes`` (see :func:`select`) as a graph of their own.

    Parameters
    ----------
    graph
        Any graph.
    prefixes
        One name prefix (``"cell_3"``, ``"Mixed_5b"``, ``"stage4"``) or several; an op is
        taken when its name, or its first fused member's name, is a prefix or starts with
        ``prefix + "."``.
    name
        Name of the new graph (default: the graph's name and the prefixes).
    keep_persistent
        Keep the graph's ``persistent_bytes`` (default: 0 in the piece).

    Returns
    -------
    OpGraph
        The piece, with its inputs and outputs as in the module docstring.

    Raises
    ------
    GraphError
        When no op matches, or when the piece is not closed: an op outside it lies on a path
        between two of its ops (the piece could not run with the rest done before or after
        it, and cutting that op out would drop the order it imposes).

    Examples
    --------
    The two convolutions of the seed graph: their input tensor becomes a zero-time input;
    Conv2's tensor, read only by ReLU (outside), becomes a graph output, while Conv1's is
    also read by Conv2 and keeps the usual rule.

    >>> from opsched.demo import seed_graph
    >>> piece = extract(seed_graph(), ["Conv1", "Conv2"])
    >>> [(op.name, op.kind, op.output) for op in piece.ops]
    [('Input', 'input', False), ('Conv1', 'conv2d', False), ('Conv2', 'conv2d', True)]
    """
    want = [prefixes] if isinstance(prefixes, str) else list(prefixes)
    idx = select(graph, want)
    if not idx:
        raise GraphError(f"graph {graph.name!r}: no op matches {', '.join(want)!r}")
    inside = set(idx)
    consumers = graph.consumers()
    _check_closed(graph, inside, consumers)
    pp, pi = graph.pred_ptr, graph.pred_idx
    outer_inputs = {int(u) for i in idx for u in pi[pp[i] : pp[i + 1]] if int(u) not in inside}
    ops: list[Op] = []
    for u in sorted(outer_inputs):
        src = graph.ops[u]
        attrs = {k: v for k, v in src.attrs.items() if k in ("dtype", "out_shape", "numel")}
        ops.append(
            Op(src.name, 0.0, output_bytes=src.output_bytes, demands={}, kind="input", attrs=attrs)
        )
    for i in idx:
        op = graph.ops[i]
        read_inside = any(c in inside for c in consumers[i])
        handed_on = op.output or (not read_inside and bool(consumers[i]))
        ops.append(replace(op, output=handed_on))
    # the graph's own notes (time unit, cost model, dtype) hold for its pieces too (a piece of
    # a costed graph had lost its time unit); its totals do not
    notes = {k: v for k, v in graph.attrs.items() if k not in ("flops", "params")}
    return OpGraph(
        tuple(ops),
        name=name or f"{graph.name}[{'+'.join(want)}]",
        resources=graph.resources,
        persistent_bytes=graph.persistent_bytes if keep_persistent else 0,
        attrs={**notes, "extracted_from": graph.name},
    )


def _check_closed(graph: OpGraph, inside: set[int], consumers: list[list[int]]) -> None:
    """Raise if a path leaves the piece and comes back into it."""
    parent: dict[int, int] = {}  # an outside op reached from the piece -> who reached it
    stack = []
    for i in inside:
        for c in consumers[i]:
            if c not in inside and c not in parent:
                parent[c] = i
                stack.append(c)
    while stack:
        u = stack.pop()
        for c in consumers[u]:
            if c in inside:
                path = [c, u]
                while path[-1] not in inside:
                    path.append(parent[path[-1]])
                names = " -> ".join(graph.ops[k].name for k in reversed(path))
                raise GraphError(
                    f"graph {graph.name!r}: the piece is not closed: {names} leaves it and "
                    "comes back; select the ops between too"
                )
            if c not in parent:
                parent[c] = u
                stack.append(c)

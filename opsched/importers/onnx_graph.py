"""Walking ONNX graph protos for :mod:`opsched.importers.onnx`, with no opsched kinds.

:func:`bind_dims` fixes a model's symbolic input dimensions before shape inference;
:func:`outer_reads` lists the names a node's subgraphs (an ``If``'s branches, a ``Loop``'s or
``Scan``'s body) read from the graph around them: ONNX does not list those as the node's
inputs, yet the node reads them as much as those it lists.
"""

from __future__ import annotations

from typing import Any

__all__ = ["bind_dims", "outer_reads"]


def bind_dims(onnx: Any, model: Any, dims: dict[str, int]) -> tuple[Any, dict[str, int]]:
    """A copy of ``model`` whose symbolic input dims are fixed, and those taken as 1."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    defaulted: dict[str, int] = {}
    for o in out.graph.output:
        # an output typed without a shape is left for inference to fill: one that is also a
        # graph input had stopped onnx's inference of every other node (their outputs came
        # out without shapes)
        if o.type.HasField("tensor_type") and not o.type.tensor_type.HasField("shape"):
            o.ClearField("type")
    for inp in out.graph.input:
        if not inp.type.HasField("tensor_type"):
            continue
        for d in inp.type.tensor_type.shape.dim:
            if not d.HasField("dim_value"):
                if d.dim_param not in dims:
                    defaulted[d.dim_param or "?"] = 1
                d.dim_value = int(dims.get(d.dim_param, 1))
    return out, defaulted


def outer_reads(node: Any) -> list[str]:
    """The names the subgraphs of ``node`` (an If's branches, a Loop's or Scan's body) read
    from the enclosing graph: they are its inputs as much as those it lists.

    >>> import onnx.helper as oh
    >>> from onnx import TensorProto as TP
    >>> out = oh.make_tensor_value_info("o", TP.FLOAT, [4])
    >>> then = oh.make_graph([oh.make_node("Add", ["h", "k"], ["o"])], "t", [], [out])
    >>> other = oh.make_graph([], "e", [], [oh.make_tensor_value_info("h", TP.FLOAT, [4])])
    >>> outer_reads(oh.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other))
    ['h', 'k']
    """
    out: dict[str, None] = {}
    for a in node.attribute:
        for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
            _free_names(g, out)
    return list(out)


def _free_names(g: Any, out: dict[str, None]) -> None:
    """Add to ``out`` the names ``g`` reads but does not define (nested subgraphs too)."""
    local = {v.name for v in [*g.input, *g.initializer]}
    local |= {t.values.name for t in g.sparse_initializer}
    for node in g.node:
        inner: dict[str, None] = {}
        for a in node.attribute:
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                _free_names(sub, inner)
        for v in [*node.input, *inner]:
            if v and v not in local:
                out[v] = None
        local.update(v for v in node.output if v)
    for o in g.output:  # a branch may return an outer value as it is
        if o.name not in local:
            out[o.name] = None

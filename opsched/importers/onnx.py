"""Import an ONNX model as an op graph (``onnx`` is an optional extra).

:func:`from_onnx` runs ``onnx.shape_inference`` (with data propagation, so ``Reshape`` targets
computed from ``Shape`` resolve), then maps every node onto a kind of :mod:`opsched.ir.kinds`
through the same table as the torch importer (an ONNX ``Conv`` is an ATen ``convolution``...).
Initializers and ``Constant`` nodes are not ops: their bytes are ``persistent_bytes``. Graph
inputs are ``input`` ops; symbolic dimensions (``batch``) take the value given in ``dims``, or 1
(listed in ``graph.attrs["symbolic_dims"]``). Every op keeps its ONNX type in
``attrs["onnx_op"]``; types the table does not know get a generic kind and one warning.

Examples
--------
>>> import onnx.helper as oh
>>> from onnx import TensorProto as TP
>>> x = oh.make_tensor_value_info("x", TP.FLOAT, [8, 64])
>>> w = oh.make_tensor("w", TP.FLOAT, [64, 32], [0.0] * 64 * 32)
>>> y = oh.make_tensor_value_info("y", TP.FLOAT, None)
>>> mm = oh.make_node("MatMul", ["x", "w"], ["h"], name="mm")
>>> act = oh.make_node("Relu", ["h"], ["y"], name="act")
>>> model = oh.make_model(oh.make_graph([mm, act], "mlp", [x], [y], [w]))
>>> g = from_onnx(model)
>>> [(op.name, op.kind, op.attrs["flops"]) for op in g.ops]
[('x', 'input', 0), ('mm', 'matmul', 32768), ('act', 'elementwise', 256)]
>>> g.persistent_bytes, g["act"].output
(8192, True)
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from opsched.errors import InputError, OpschedError, ProblemError
from opsched.importers._build import GraphBuilder, TensorMeta, dtype_name
from opsched.importers.onnx_graph import bind_dims, outer_reads
from opsched.importers.torch.aten import Mapped, map_aten
from opsched.ir.graph import OpGraph

__all__ = ["INSTALL_HINT", "from_onnx", "read_onnx"]


def _words(text: str) -> list[str]:
    return text.split()


INSTALL_HINT = "pip install onnx"

#: ONNX op type -> the ATen op with the same meaning (arguments in the same order).
_SAME_AS = {
    **{t: t.lower() for t in _words(
    """
    Relu Sigmoid Tanh Exp Log Sqrt Neg Abs Erf Reciprocal Floor Ceil Round Sign Sin Cos
    Tan Sinh Cosh Asin Acos Atan Softplus Softsign Selu Elu Celu Mish Gelu Add Sub Mul
    Div Pow Where Max Min Sum Mean
    """
)},
    # ATen spells these otherwise (lower-cased, they were unknown and imported as copies)
    "Mod": "remainder", "Not": "logical_not", "And": "logical_and", "Or": "logical_or",
    "Xor": "logical_xor", "Equal": "eq", "Less": "lt", "Greater": "gt",
    "LeakyRelu": "leaky_relu", "HardSwish": "hardswish", "HardSigmoid": "hardsigmoid",
    "PRelu": "prelu", "Clip": "clamp", "Cast": "float", "CastLike": "float",
    "LessOrEqual": "le", "GreaterOrEqual": "ge", "IsNaN": "isnan", "IsInf": "isinf",
    "ThresholdedRelu": "threshold", "Trilu": "triu", "BitwiseAnd": "bitwise_and",
    "BitwiseOr": "bitwise_or", "BitwiseNot": "bitwise_not", "ConstantOfShape": "full",
    "RandomNormalLike": "randn_like", "RandomUniformLike": "rand_like", "Range": "arange",
    "Reshape": "reshape", "Flatten": "flatten", "Squeeze": "squeeze", "Unsqueeze": "unsqueeze",
    "Identity": "alias", "Dropout": "alias", "Shape": "__shape__", "Size": "__shape__",
    "Concat": "cat", "Transpose": "clone", "Slice": "clone", "Split": "clone", "Pad": "pad",
    "Tile": "repeat", "Expand": "clone", "Resize": "interpolate", "Upsample": "interpolate",
    "ScatterND": "scatter", "ScatterElements": "scatter", "GatherElements": "gather",
    "GatherND": "gather", "DepthToSpace": "pixel_shuffle", "SpaceToDepth": "pixel_unshuffle",
    "ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "amax", "ReduceMin": "amin",
    "ReduceProd": "prod", "ReduceL1": "norm", "ReduceL2": "norm", "ReduceLogSumExp": "logsumexp",
    "ReduceSumSquare": "sum", "ArgMax": "argmax", "ArgMin": "argmin", "TopK": "topk",
    "CumSum": "cumsum", "MatMul": "matmul", "BatchNormalization": "batch_norm",
    "InstanceNormalization": "instance_norm",
}  # fmt: skip
_VARIADIC_MINMAX = {"Max", "Min", "Sum", "Mean"}  # elementwise over all their inputs


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise ProblemError(f"the ONNX importer needs onnx: {INSTALL_HINT}") from None
    return onnx


def _attrs(node: Any) -> dict[str, Any]:
    import onnx.helper as oh

    return {a.name: oh.get_attribute_value(a) for a in node.attribute}


def _conv(t: str, ins: list[Any], a: dict[str, Any]) -> tuple[str, list[Any]]:
    x, w = ins[0], ins[1]
    sd = len(w.shape) - 2
    pads = list(a.get("pads", [0] * 2 * sd))[:sd]  # begin pads; the end pads are implied
    auto = a.get("auto_pad", b"NOTSET")
    if isinstance(auto, bytes):
        auto = auto.decode()
    padding: Any = "same" if auto.startswith("SAME") else pads
    call = [x, w, ins[2] if len(ins) > 2 else None, list(a.get("strides", [1] * sd)), padding,
            list(a.get("dilations", [1] * sd)), t == "ConvTranspose",
            list(a.get("output_padding", [0] * sd)), int(a.get("group", 1))]  # fmt: skip
    return "convolution", call


def _map(t: str, ins: list[Any], a: dict[str, Any], outs: list[TensorMeta], opset: int) -> Mapped:
    """Kind and attrs of one ONNX node (``ins``: input metas, None where absent)."""
    x: Any = ins[0] if ins else None
    y = outs[0]
    if t in ("Conv", "ConvTranspose"):
        name, call = _conv(t, ins, a)
        return map_aten(name, call, {}, outs)
    if t == "Gemm":
        a_s, b_s = ins[0].shape, ins[1].shape
        m, k = (a_s[1], a_s[0]) if a.get("transA", 0) else (a_s[0], a_s[1])
        n = b_s[0] if a.get("transB", 0) else b_s[1]
        attrs: dict[str, Any] = {"M": m, "N": n, "K": k}
        if len(ins) > 2 and ins[2] is not None:
            attrs["bias"] = True
        return Mapped("matmul", attrs)
    if t in ("MaxPool", "AveragePool", "LpPool"):
        sd = len(x.shape) - 2
        kernel = list(a["kernel_shape"])
        op = f"{'max' if t == 'MaxPool' else 'avg'}_pool{sd}d"
        pads = list(a.get("pads", [0] * 2 * sd))[:sd]
        call = [
            x,
            kernel,
            list(a.get("strides", [1] * sd)),
            pads,
            list(a.get("dilations", [1] * sd)),
        ]
        return map_aten(op, call, {}, outs)
    if t in ("GlobalAveragePool", "GlobalMaxPool"):
        sd = len(x.shape) - 2
        op = f"adaptive_{'max' if 'Max' in t else 'avg'}_pool{sd}d"
        return map_aten(op, [x, [1] * sd], {}, outs)
    if t in ("Softmax", "LogSoftmax", "Hardmax"):
        axis = int(a.get("axis", -1 if opset >= 13 else 1)) % max(1, len(x.shape))
        cols = x.shape[axis] if opset >= 13 else math.prod(x.shape[axis:])
        return Mapped("softmax", {"rows": x.numel // max(1, cols), "cols": max(1, cols)})
    if t in ("LayerNormalization", "SimplifiedLayerNormalization", "RMSNormalization"):
        axis = int(a.get("axis", -1)) % max(1, len(x.shape))
        cols = math.prod(x.shape[axis:])
        kind = "layernorm" if t == "LayerNormalization" else "rmsnorm"
        return Mapped(kind, {"rows": x.numel // max(1, cols), "cols": max(1, cols)})
    if t == "GroupNormalization":
        return map_aten("group_norm", [x, int(a.get("num_groups", 1))], {}, outs)
    if t == "Attention":  # opset 23: Q [B, H, S, D] or [B, S, H*D] with q_num_heads
        q, k = ins[0], ins[1]
        if len(q.shape) == 4:
            return map_aten("scaled_dot_product_attention", [q, k], {}, outs)
        heads = int(a.get("q_num_heads", 1))
        b, s, hd = q.shape
        return Mapped("attention", {"B": b * heads, "Sq": s, "Skv": k.shape[1], "D": hd // heads})
    if t == "Gather" and x is not None and len(x.shape) == 2 and int(a.get("axis", 0)) == 0:
        return map_aten("embedding", [x, ins[1]], {}, outs)
    if t in ("Gather", "Compress", "OneHot", "NonZero"):
        return Mapped("copy", {"numel": y.numel})
    if t in _SAME_AS:
        name = _SAME_AS[t]
        if name == "__shape__":  # a tiny int64 tensor of metadata: no data is read
            return Mapped("view", {"numel": y.numel})
        tensors = [i for i in ins if i is not None]
        if t in _VARIADIC_MINMAX and len(tensors) > 1:
            return Mapped("elementwise", {"numel": y.numel, "arity": len(tensors), "fn": name})
        if name in ("reshape", "flatten", "squeeze", "unsqueeze", "alias", "clone"):
            tensors = tensors[:1]  # the other inputs are shapes / axes
        return map_aten(name, tensors, {}, outs)
    m = map_aten("__unknown__", [i for i in ins if i is not None], {}, outs)
    m.known = False
    return m


def from_onnx(
    model: Any, name: str | None = None, dims: Mapping[str, int] | None = None, where: str = "onnx"
) -> OpGraph:
    """Build the op graph of an ONNX model.

    Parameters
    ----------
    model
        A path to a ``.onnx`` file or an ``onnx.ModelProto``.
    name
        Graph name (default: the file stem or the ONNX graph's name).
    dims
        Values of symbolic input dimensions (``{"batch": 8}``); the others are taken as 1.
    where
        Prefix of error messages (the file name when ``model`` is a path).

    Raises
    ------
    ProblemError
        ``onnx`` is not installed (with the install hint).
    InputError
        A missing or unreadable file, a failed shape inference, or a node whose output shape
        stays unknown (the message names the node and its op type).

    Examples
    --------
    >>> import onnx.helper as oh
    >>> from onnx import TensorProto as TP
    >>> x = oh.make_tensor_value_info("x", TP.FLOAT, ["batch", 3, 32, 32])
    >>> y = oh.make_tensor_value_info("y", TP.FLOAT, None)
    >>> w = oh.make_tensor("w", TP.FLOAT, [16, 3, 3, 3], [0.0] * 432)
    >>> conv = oh.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], name="conv")
    >>> g = from_onnx(oh.make_model(oh.make_graph([conv], "c", [x], [y], [w])), dims={"batch": 2})
    >>> g["conv"].attrs["flops"] == 2 * 2 * 16 * 3 * 9 * 32 * 32, g["conv"].output_bytes
    (True, 131072)
    """
    onnx = _onnx()
    if isinstance(model, str | os.PathLike):
        p = Path(model)
        where = str(p)
        if not p.is_file():
            raise InputError("no such file", where)
        try:
            model = onnx.load(str(p))
        except Exception as e:
            raise InputError(
                f"not an ONNX model ({type(e).__name__}: {e})".splitlines()[0], where
            ) from None
        if not model.HasField("graph"):  # an empty file parses as an empty model
            raise InputError("holds no ONNX graph (an empty file, or not an ONNX model?)", where)
        name = name or p.stem
    if not isinstance(model, onnx.ModelProto):
        raise InputError(
            f"expected an onnx.ModelProto or a path, got {type(model).__name__}", where
        )
    for k, v in (dims or {}).items():  # a negative size had surfaced as a bad numel of an op
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise InputError(f"dims: {k!r} must be a non-negative integer, got {v!r}", where)
    model, symbolic = bind_dims(onnx, model, dict(dims or {}))
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception as e:
        raise InputError(f"shape inference failed: {str(e).splitlines()[0]}", where) from None
    graph = inferred.graph
    opset = next((o.version for o in inferred.opset_import if o.domain in ("", "ai.onnx")), 13)
    b = GraphBuilder(name or graph.name or "onnx", where=where, source="onnx")
    b.attrs["opset"] = int(opset)
    # a name's type with a shape wins over one without: a graph input passed straight out as
    # an output declared without a shape had lost its shape
    types: dict[str, Any] = {}
    for v in [*graph.input, *graph.value_info, *graph.output]:
        if v.name not in types or v.type.tensor_type.HasField("shape"):
            types[v.name] = v.type

    consts: dict[str, TensorMeta] = {}

    def meta(vname: str, node: str) -> TensorMeta | None:
        tt = types.get(vname)
        if vname in consts and (tt is None or not tt.tensor_type.HasField("shape")):
            return consts[vname]
        if tt is None or not tt.HasField("tensor_type") or not tt.tensor_type.HasField("shape"):
            return None
        shape = []
        for d in tt.tensor_type.shape.dim:
            if d.HasField("dim_value"):
                if d.dim_value < 0:  # -1 is a reshape's wildcard, never a tensor's size
                    raise InputError(f"{node} {vname!r} has a dimension of {d.dim_value} "
                                     "(sizes are counts: give it as a name, or its size)",
                                     where)  # fmt: skip
                shape.append(int(d.dim_value))
            else:
                symbolic[d.dim_param or "?"] = 1
                shape.append(1)
        np_dt = onnx.helper.tensor_dtype_to_np_dtype(tt.tensor_type.elem_type)
        return b.meta(shape, dtype_name(str(np_dt), np_dt.itemsize), bits=_packed_bits(np_dt))

    for init in graph.initializer:
        consts[init.name] = _init_meta(onnx, b, init, where)
        b.add_persistent(init.name, consts[init.name].nbytes)
    if graph.sparse_initializer:  # onnx's shape inference does not see them either
        name_ = graph.sparse_initializer[0].values.name
        raise InputError(f"sparse initializers ({name_!r}) are not supported", where)
    for inp in graph.input:
        if b.has(inp.name):
            continue  # an initializer listed as an input (older exporters)
        t = meta(inp.name, "graph input")
        if t is None:
            raise InputError(f"graph input {inp.name!r} has no tensor shape", where)
        b.add_input(inp.name, inp.name, t)
    produced = {v for node in graph.node for v in node.output if v}
    for i, node in enumerate(graph.node):
        _add_node(b, node, i, meta, opset, where, produced)
    if symbolic:
        b.attrs["symbolic_dims"] = dict(symbolic)
    for o in graph.output:  # one nothing produces had been dropped without a word
        if not b.has(o.name):
            raise InputError(f"graph output {o.name!r} is not produced by any node", where)
    b.mark_outputs(o.name for o in graph.output)
    return b.build()


def _init_meta(onnx: Any, b: GraphBuilder, init: Any, where: str) -> TensorMeta:
    """The tensor of an initializer; a negative dimension is refused (its bytes would be)."""
    if any(d < 0 for d in init.dims):
        raise InputError(f"initializer {init.name!r} has a negative dimension: "
                         f"{list(init.dims)}", where)  # fmt: skip
    np_dt = onnx.helper.tensor_dtype_to_np_dtype(init.data_type)
    return b.meta(init.dims, dtype_name(str(np_dt), np_dt.itemsize), bits=_packed_bits(np_dt))


def _packed_bits(np_dt: Any) -> int:
    """Bits an element of ONNX's packed sub-byte types (int4, uint4, float4e2m1: 4; int2,
    uint2: 2), which ONNX stores several to a byte; 0 for whole-byte types.

    >>> import numpy as np
    >>> _packed_bits(np.dtype("float32"))
    0
    """
    name = str(np_dt)
    if name.startswith(("int4", "uint4", "float4")):
        return 4
    if name.startswith(("int2", "uint2")):
        return 2
    return 0


def _add_node(
    b: GraphBuilder, node: Any, i: int, meta: Any, opset: int, where: str, produced: set[str]
) -> None:
    t = node.op_type
    nname = node.name or f"{t}_{i}"
    a = _attrs(node)
    named = [v for v in node.output if v]
    again = next((v for k, v in enumerate(named) if b.has(v) or v in named[:k]), None)
    if again is not None:  # a second definition had silently replaced the first
        raise InputError(f"node {nname!r} ({t}): output {again!r} is already defined (an ONNX "
                         "value is assigned once)", where)  # fmt: skip
    if t == "Constant" and node.domain in ("", "ai.onnx"):
        out = meta(node.output[0], nname)
        b.add_persistent(node.output[0], out.nbytes if out is not None else 0)
        return
    ins = [meta(v, nname) if v else None for v in node.input]
    outer = outer_reads(node)
    for v in [*node.input, *outer]:
        # a value known only from value_info had been skipped: the edge from a node listed
        # later (a graph out of topological order, or a cycle) was lost without a word
        if v and not b.has(v):
            why = ("is produced by a later node (the nodes are not in topological order, or "
                   "form a cycle)") if v in produced else "is not defined"  # fmt: skip
            side = " (read by a subgraph)" if v not in node.input else ""
            raise InputError(f"node {nname!r} ({t}): input {v!r}{side} {why}", where)
    outs_named = [v for v in node.output if v]
    outs = [meta(v, nname) for v in outs_named]
    missing = [v for v, m in zip(outs_named, outs, strict=True) if m is None]
    if missing:
        raise InputError(
            f"node {nname!r} ({t}): shape inference left output {missing[0]!r} without a shape",
            where,
        )
    metas = [m for m in outs if m is not None]
    if not metas:
        return
    op_type = t if node.domain in ("", "ai.onnx") else f"{node.domain}.{t}"
    try:
        m = _map(op_type, ins, a, metas, opset) if ins or op_type in _SAME_AS else None
    except OpschedError:  # already names the problem (and is a ValueError)
        raise
    except (KeyError, IndexError, ValueError, TypeError, AttributeError):
        m = None
    if m is None:
        m = map_aten("__unknown__", [x for x in ins if x is not None], {}, metas)
        m.known = False
    if not m.known:
        b.unmapped(op_type)
    attrs = {**m.attrs, "onnx_op": op_type}
    keys = [v for v in [*node.input, *outer] if v]
    op = b.add_op(nname, m.kind, attrs, keys, metas, aliasing=m.aliasing and bool(keys))
    for v in outs_named:
        b.register(v, op)


def read_onnx(path: str | os.PathLike[str]) -> OpGraph:
    """Read a ``.onnx`` file (the graph is named after the file)."""
    return from_onnx(path)

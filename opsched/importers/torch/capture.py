"""Walking a captured torch graph into a :class:`~opsched.importers._build.GraphBuilder`.

Two captures feed the same walk: :func:`walk_exported` reads a ``torch.export``
``ExportedProgram`` (ATen ops, shapes in ``node.meta["val"]`` fake tensors, parameters
told apart from user inputs by the graph signature); :func:`walk_fx` reads a
``torch.fx.symbolic_trace`` graph after ``ShapeProp`` (shapes in
``node.meta["tensor_meta"]``), translating leaf modules (``nn.Conv2d``...) and Python functions
into the ATen calls they stand for. Both hand each call to :func:`emit`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from opsched.errors import InputError
from opsched.importers._build import GraphBuilder, TensorMeta, dtype_name
from opsched.importers.torch.aten import allocates_without_inputs, map_aten, tensors_in

__all__ = ["emit", "walk_exported", "walk_fx"]


def _dims(shape: Any, where: str) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in shape)
    except Exception:
        raise InputError(f"{where}: shape {tuple(shape)} is not static", "torch") from None


def _meta_of(b: GraphBuilder, v: Any, where: str) -> Any:
    """A fake tensor / TensorMetadata -> TensorMeta; tuples recursively; else None."""
    if isinstance(v, list | tuple) and not hasattr(v, "shape"):
        return tuple(_meta_of(b, x, where) for x in v)
    shape, dt = getattr(v, "shape", None), getattr(v, "dtype", None)
    if shape is None or dt is None:
        return None
    dims = _dims(shape, where)
    return b.meta(dims, dtype_name(str(dt), getattr(dt, "itemsize", 4)), _contiguous(v, dims))


def _contiguous(v: Any, dims: tuple[int, ...]) -> bool:
    """Row-major layout (size-1 dims ignored); True when the strides are unknown."""
    try:
        strides = tuple(int(s) for s in (v.stride() if callable(v.stride) else v.stride))
    except Exception:
        return True
    expect = 1
    for d, s in zip(reversed(dims), reversed(strides), strict=False):
        if d != 1 and s != expect:
            return False
        expect *= d
    return True


def _flat(m: Any) -> list[TensorMeta]:
    if isinstance(m, TensorMeta):
        return [m]
    if isinstance(m, tuple):
        return [t for x in m for t in _flat(x)]
    return []


def _nodes_in(x: Any) -> Iterator[Any]:
    if hasattr(x, "op") and hasattr(x, "meta"):
        yield x
    elif isinstance(x, list | tuple):
        for y in x:
            yield from _nodes_in(y)
    elif isinstance(x, Mapping):
        for y in x.values():
            yield from _nodes_in(y)


def _subst(x: Any, metas: Mapping[str, Any]) -> Any:
    """Replace fx nodes in an argument structure by their metas (tensors) or values."""
    if hasattr(x, "op") and hasattr(x, "meta"):
        return metas.get(x.name)
    if isinstance(x, list | tuple):
        return [_subst(y, metas) for y in x]
    if isinstance(x, Mapping):
        return {k: _subst(v, metas) for k, v in x.items()}
    return x


def emit(
    b: GraphBuilder,
    node_name: str,
    op_name: str,
    qualname: str,
    args: Any,
    kwargs: Mapping[str, Any],
    out: Any,
    input_keys: list[str],
    known_namespace: bool = True,
) -> None:
    """Add the op of one call (or register an alias for a view-free tuple access)."""
    outs = _flat(out)
    if not outs:  # asserts, shape arithmetic: no tensor, no op
        return
    keys = [k for k in input_keys if b.has(k)]
    m = map_aten(op_name if known_namespace else "__unknown__", args, kwargs, outs)
    if not tensors_in(args) and allocates_without_inputs(op_name):
        m.aliasing = False
    attrs = {**m.attrs, "aten": qualname}
    if not m.known:
        b.unmapped(qualname)
    inplace = op_name.endswith("_") and not op_name.endswith("__") and bool(keys)
    b.add_op(
        node_name, m.kind, attrs, keys, outs, key=node_name, aliasing=m.aliasing, inplace=inplace
    )


def walk_exported(b: GraphBuilder, ep: Any) -> None:
    """Walk an ``ExportedProgram``'s graph into ``b`` (parameters become persistent bytes)."""
    from torch.export.graph_signature import InputKind, OutputKind

    kinds_of = {
        s.arg.name: s.kind for s in ep.graph_signature.input_specs if hasattr(s.arg, "name")
    }
    user_out = {
        s.arg.name
        for s in ep.graph_signature.output_specs
        if s.kind == OutputKind.USER_OUTPUT and hasattr(s.arg, "name")
    }
    metas: dict[str, Any] = {}
    for node in ep.graph.nodes:
        where = f"node {node.name!r}"
        val = node.meta.get("val")
        meta = _meta_of(b, val, where)
        metas[node.name] = meta
        if node.op == "placeholder":
            if not isinstance(meta, TensorMeta):
                continue
            if kinds_of.get(node.name, InputKind.USER_INPUT) == InputKind.USER_INPUT:
                b.add_input(node.name, node.name, meta)
            else:
                b.add_persistent(node.name, meta.nbytes)
        elif node.op == "get_attr":
            b.add_persistent(node.name, sum(t.nbytes for t in _flat(meta)))
        elif node.op == "call_function":
            _emit_function(b, node, meta, metas)
        elif node.op == "output":
            outs = [n.name for n in _nodes_in(node.args) if n.name in user_out or not user_out]
            b.mark_outputs(k for k in outs if b.has(k))


def _emit_function(b: GraphBuilder, node: Any, meta: Any, metas: Mapping[str, Any]) -> None:
    import operator

    target = node.target
    inputs = [n.name for n in _nodes_in((node.args, node.kwargs))]
    if target is operator.getitem:
        src = node.args[0]
        if isinstance(metas.get(src.name), tuple):  # an element of a multi-result op
            if b.has(src.name):
                b.alias(node.name, src.name)
            return
        emit(b, node.name, "getitem", "getitem", [metas.get(src.name)], {}, meta, inputs)
        return
    packet = getattr(target, "overloadpacket", None)
    ns = getattr(target, "namespace", "aten")
    if packet is not None:
        op_name, qual = packet.__name__, f"{ns}.{target.__name__}"
    else:
        op_name = getattr(target, "__name__", str(target)).lstrip("_") or str(target)
        qual = op_name
    args, kwargs = _subst(node.args, metas), _subst(node.kwargs, metas)
    emit(b, node.name, op_name, qual, args, kwargs, meta, inputs, known_namespace=ns == "aten")


# ---------------------------------------------------------------------- symbolic_trace path
_ACTIVATIONS = {
    "ReLU": "relu", "ReLU6": "relu6", "GELU": "gelu", "SiLU": "silu", "Sigmoid": "sigmoid",
    "Tanh": "tanh", "LeakyReLU": "leaky_relu", "Hardswish": "hardswish", "ELU": "elu",
    "Hardsigmoid": "hardsigmoid", "Hardtanh": "hardtanh", "Mish": "mish", "SELU": "selu",
    "Softplus": "softplus", "PReLU": "prelu", "GLU": "glu",
}  # fmt: skip


def _module_call(mod: Any, x: Any, rest: list[Any], b: GraphBuilder) -> tuple[str, list[Any]]:
    """The ATen call a leaf module performs: (op name, args with TensorMeta for weights)."""
    cls = type(mod).__name__

    def t(p: Any) -> Any:
        return None if p is None else _meta_of(b, p, cls)

    if cls == "Linear":
        return "linear", [x, t(mod.weight), t(mod.bias)]
    if cls.startswith(("Conv", "ConvTranspose")) and hasattr(mod, "weight"):
        transposed = cls.startswith("ConvTranspose")
        out_pad = list(getattr(mod, "output_padding", [0]))
        return "convolution", [x, t(mod.weight), t(mod.bias), list(mod.stride), mod.padding,
                               list(mod.dilation), transposed, out_pad, mod.groups]  # fmt: skip
    if cls.startswith(("BatchNorm", "SyncBatchNorm")):
        return "batch_norm", [x]
    if cls in ("LayerNorm", "RMSNorm"):
        return ("layer_norm" if cls == "LayerNorm" else "rms_norm"), [x, list(mod.normalized_shape)]
    if cls == "GroupNorm":
        return "group_norm", [x, mod.num_groups]
    if cls.startswith("InstanceNorm"):
        return "instance_norm", [x]
    for prefix, op in (("MaxPool", "max_pool"), ("AvgPool", "avg_pool")):
        if cls.startswith(prefix):
            d = cls[len(prefix)]
            dil = getattr(mod, "dilation", 1)
            return f"{op}{d}d", [x, mod.kernel_size, mod.stride, mod.padding, dil]
    adaptive = (("AdaptiveAvgPool", "adaptive_avg_pool"), ("AdaptiveMaxPool", "adaptive_max_pool"))
    for prefix, op in adaptive:
        if cls.startswith(prefix):
            return f"{op}{cls[len(prefix)]}d", [x, mod.output_size]
    if cls in ("Softmax", "LogSoftmax"):
        return ("softmax" if cls == "Softmax" else "log_softmax"), [x, mod.dim]
    if cls == "Embedding":
        return "embedding", [t(mod.weight), x]
    if cls.startswith("Dropout") or cls == "AlphaDropout":
        return "dropout", [x, mod.p, mod.training]
    if cls in ("Flatten", "Unflatten", "Identity"):
        return "view", [x]
    if cls == "Upsample":
        return "upsample_nearest2d", [x]
    if cls in _ACTIVATIONS:
        return _ACTIVATIONS[cls], [x, *rest]
    return f"module.{cls}", [x, *rest]


def walk_fx(b: GraphBuilder, gm: Any, module: Any) -> None:
    """Walk a shape-propagated ``symbolic_trace`` graph into ``b``."""
    seen: set[int] = set()
    for p in [*module.parameters(), *module.buffers()]:
        if id(p) not in seen:
            seen.add(id(p))
            b.persistent_bytes += p.numel() * p.element_size()
    metas: dict[str, Any] = {}
    for node in gm.graph.nodes:
        where = f"node {node.name!r}"
        meta = _meta_of(b, node.meta.get("tensor_meta"), where)
        metas[node.name] = meta
        inputs = [n.name for n in _nodes_in((node.args, node.kwargs))]
        if node.op == "placeholder":
            if isinstance(meta, TensorMeta):
                b.add_input(node.name, node.name, meta)
        elif node.op == "get_attr":
            obj: Any = gm
            for part in str(node.target).split("."):
                obj = getattr(obj, part)
            extra = 0 if id(obj) in seen else sum(t.nbytes for t in _flat(meta))
            b.add_persistent(node.name, extra)
        elif node.op == "call_module":
            mod = gm.get_submodule(node.target)
            args = _subst(node.args, metas)
            op, call = _module_call(mod, args[0] if args else None, list(args[1:]), b)
            known = not op.startswith("module.")
            emit(b, node.name, op, f"nn.{type(mod).__name__}", call, {}, meta, inputs, known)
        elif node.op == "call_method":
            args, kwargs = _subst(node.args, metas), _subst(node.kwargs, metas)
            emit(b, node.name, str(node.target), f"Tensor.{node.target}", args, kwargs, meta,
                 inputs)  # fmt: skip
        elif node.op == "call_function":
            _emit_function(b, node, meta, metas)
        elif node.op == "output":
            b.mark_outputs(n.name for n in _nodes_in(node.args) if b.has(n.name))

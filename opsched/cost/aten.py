"""Map PyTorch (aten) ops as recorded by the profiler onto the op-kind vocabulary.

A profiler row names the aten op (``aten::addmm``) and its input dims and types
(``[[1000], [32, 2048], [2048, 1000], [], []]``). :func:`aten_kind` turns that into a kind of
:mod:`opsched.ir.kinds` with its ``attrs``. Ops without a shape rule (optimizer kernels,
fbgemm, NCCL calls) become ``opaque`` (:mod:`opsched.cost.data`) with the FLOP and byte counts
the row carries, or the bytes of its recorded tensor inputs (:func:`input_bytes`), so they
still get a calibrated latency instead of nothing.

Examples
--------
>>> aten_kind("aten::addmm", [[1000], [32, 2048], [2048, 1000], [], []], ["float"] * 3)
('matmul', {'M': 32, 'N': 1000, 'K': 2048, 'dtype': 'float32'})
>>> aten_kind("aten::add_", [[32, 256, 56, 56], [32, 256, 56, 56], []], ["float", "float", "Int"])
('elementwise', {'numel': 25690112, 'arity': 2, 'fn': 'add', 'dtype': 'float32'})
>>> aten_kind("aten::linalg_vector_norm", [[512, 8192], [], [], [], []],
...           ["float", "Scalar", "", "Scalar", ""])
('reduce', {'numel': 4194304, 'out_numel': 1, 'dtype': 'float32'})
>>> aten_kind("aten::max", [[8, 4], [8, 4]], ["float", "float"])[1]["fn"]
'maximum'
"""

from __future__ import annotations

import re
from typing import Any

from opsched.cost.aten_shapes import (  # aten_dtype, input_bytes: re-exported
    BACKWARD_HALVES,
    DTYPE_NAMES,
    ONE_DIM,
    aten_dtype,
    broadcast,
    channels,
    conv_attrs,
    conv_backward,
    input_bytes,
    parse_shape_text,
    pool_attrs,
    prod,
    reduce_out,
    strided,
    tensor_arg,
    tensors,
)
from opsched.errors import OpschedError
from opsched.importers.trace.aten_names import attention_attrs

__all__ = [
    "ELEMENTWISE_FNS",
    "TERNARY_FNS",
    "UNARY_FNS",
    "aten_dtype",
    "aten_kind",
    "inductor_kind",
    "input_bytes",
]


#: The elementwise ops a shape rule knows (one read and one write per element and operand);
#: other sources' op names are read against these too (:mod:`opsched.cost.sources`).
ELEMENTWISE_FNS = frozenset({
    "add", "sub", "mul", "div", "relu", "clamp_min", "clamp", "clamp_max", "sigmoid", "tanh",
    "gelu", "silu", "exp", "log", "log2", "pow", "neg", "abs", "sqrt", "rsqrt", "where",
    "threshold_backward", "sigmoid_backward", "tanh_backward", "gelu_backward",
    "silu_backward", "fill", "zero", "copy", "nan_to_num", "maximum", "minimum", "reciprocal",
    "eq", "ne", "lt", "gt", "le", "ge", "masked_fill", "addcmul", "addcdiv", "lerp", "sign",
    "hardtanh", "leaky_relu", "elu", "dropout", "native_dropout", "mul_out", "ones_like",
    # one read and one write per element as well (rows of them fell to the opaque catch-all)
    "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_not", "sgn", "logit", "logit_backward", "sin", "cos", "floor",
    "ceil", "round", "trunc", "square", "erf", "hardswish", "hardsigmoid", "mish", "softplus",
    "remainder", "fmod", "floor_divide", "rsub", "hardswish_backward", "hardsigmoid_backward",
    "leaky_relu_backward", "elu_backward", "hardtanh_backward", "softplus_backward",
    "mish_backward", "zeros_like", "full_like",
})  # fmt: skip

#: Elementwise ops with one tensor operand: what else the profiler lists is a scalar or the
#: ``out=`` / ``self`` tensor written (``clamp_min.out(x, min, out)``, ``copy_(self, src)``).
UNARY_FNS = frozenset({
    "relu", "clamp_min", "clamp", "clamp_max", "sigmoid", "tanh", "gelu", "silu", "exp", "log",
    "log2", "neg", "abs", "sqrt", "rsqrt", "fill", "zero", "copy", "nan_to_num", "reciprocal",
    "sign", "hardtanh", "leaky_relu", "elu", "dropout", "native_dropout", "ones_like",
    "logical_not", "bitwise_not", "sgn", "logit", "sin", "cos", "floor", "ceil", "round",
    "trunc", "square", "erf", "hardswish", "hardsigmoid", "mish", "softplus", "zeros_like",
    "full_like",
})  # fmt: skip
#: Elementwise ops with three tensor operands; every other one of :data:`ELEMENTWISE_FNS`
#: outside :data:`UNARY_FNS` has two.
TERNARY_FNS = frozenset({"where", "addcmul", "addcdiv", "lerp"})


def _elementwise_arity(name: str, ts: list[list[int]]) -> int:
    """Tensor operands an elementwise op reads in full: the listed tensors of the op's full
    size (a broadcast bias or a scalar tensor is read once, its traffic negligible), at most
    the op's own operand count, at least 1.

    >>> _elementwise_arity("add", [[8, 4], [8, 4], []]), _elementwise_arity("add", [[8, 4], [4]])
    (2, 1)
    >>> _elementwise_arity("clamp_min", [[8, 4], [], [8, 4]])  # the out= tensor is written
    1
    """
    numel = max((prod(t) for t in ts), default=1)
    full = sum(1 for t in ts if prod(t) == numel)
    most = 1 if name in UNARY_FNS else 3 if name in TERNARY_FNS else 2
    return max(1, min(full, most))


_POOL = {"max_pool2d_with_indices", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
         "_adaptive_avg_pool2d", "adaptive_max_pool2d"}  # fmt: skip

#: Average pooling's backward: an elementwise write of the input's gradient, each element
#: its window's share of the output gradient (max pooling's backward scatters through its
#: indices, with atomics, and has no rule).
_AVG_POOL_BACKWARD = {"_adaptive_avg_pool2d_backward", "avg_pool2d_backward"}

#: Reductions, with the position of their ``dim`` argument (whose type tells a full
#: reduction from one over some axes).
_REDUCE = {
    "sum": 1, "mean": 1, "amax": 1, "amin": 1, "max": 1, "min": 1, "prod": 1, "nansum": 1,
    "argmax": 1, "argmin": 1, "var": 1, "std": 1, "var_mean": 1, "std_mean": 1,
    "logsumexp": 1, "all": 1, "any": 1, "norm": 2, "linalg_vector_norm": 2, "linalg_norm": 2,
}  # fmt: skip

#: TorchInductor's generated kernels: ``triton_<kind>_<fused ops>_<n>`` (the ops' names
#: left out, ``triton_poi__0``, where its descriptive names are off).
_INDUCTOR = re.compile(r"^triton_(poi|red|per)_\w*_\d+$")


def inductor_kind(op: str, dims: list[Any], types: list[Any]) -> tuple[str, dict[str, Any]] | None:
    """Kind of a TorchInductor Triton kernel recorded as an op of its own, by the kind its
    name states, or None.

    Inductor names its generated kernels ``triton_<kind>_fused_<ops>_<n>``, and the profiler
    records them as ops with their arguments' dims and types (tensors, inputs and outputs
    alike; scalars ``[]`` of a scalar type, a 0-d tensor ``[]`` of a tensor type). The
    dtype is the largest tensor's. ``poi`` (pointwise) kernels are elementwise over the
    largest tensor, reading the others' share of it (``arity`` = all tensors' elements over
    the largest, less one for the output, at least 1; a kernel updating a buffer in place
    reads it too, and is priced one read short). ``red`` (reduction) and ``per``
    (persistent reduction) kernels reduce the largest tensor into the smallest (one value
    where a 0-d tensor is among them). A tensor whose size does not divide the largest one's
    is not a broadcast operand (a lookup table, an index), and the kernel has no rule; nor
    have template kernels (``tem``: GEMMs and convolutions) and hand-written ones.

    >>> inductor_kind("triton_poi_fused_gelu_view_0", [[1024, 1024], [16, 64, 1024], []],
    ...               ["float", "float", "Scalar"])
    ('elementwise', {'numel': 1048576, 'arity': 1, 'dtype': 'float32'})
    >>> inductor_kind("triton_red_fused_sum_view_0", [[16, 64, 256], [1, 256, 8]],
    ...               ["float", "float"])
    ('reduce', {'numel': 262144, 'out_numel': 2048, 'dtype': 'float32'})
    >>> inductor_kind("triton_poi_fused_embedding_0", [[16, 64], [50257, 768], [16, 64, 768]],
    ...               ["long int", "float", "float"]) is None  # a lookup: the table's rows
    True
    """
    m = _INDUCTOR.match(op)
    if m is None:
        return None
    sized: list[tuple[int, str]] = []  # (elements, dtype) per tensor with dims
    zero_dim = False
    for i, d in enumerate(dims):
        t = str(types[i]).lower() if i < len(types) else ""
        if not isinstance(d, list):
            continue
        if d and all(isinstance(x, int) for x in d):
            sized.append((prod(d), DTYPE_NAMES.get(t, "float32")))
        elif not d and tensor_arg(dims, types, i):  # a 0-d tensor, not a scalar
            zero_dim = True
    if not sized:
        return None
    big, dtype = max(sized, key=lambda v: v[0])
    if big == 0 or any(n == 0 or big % n for n, _ in sized):
        return None
    if m.group(1) == "poi":
        arity = max(1, round(sum(n for n, _ in sized) / big) - 1)
        return "elementwise", {"numel": big, "arity": arity, "dtype": dtype}
    out = 1 if zero_dim or len(sized) == 1 else min(n for n, _ in sized)
    return "reduce", {"numel": big, "out_numel": out, "dtype": dtype}


def aten_kind(
    op: str, dims: list[Any], types: list[Any], shape_text: str = "", kernel_names: str = ""
) -> tuple[str, dict[str, Any]] | None:
    """Kind and attrs of a profiled aten op, or None when no shape rule applies.

    Parameters
    ----------
    op
        The aten name (``"aten::mm"``).
    dims, types
        The profiler's ``Input Dims`` and ``Input type`` lists.
    shape_text
        The timing files' ``shape`` column (``x=[..] w=[..] y=[..] stride~2``), used for
        convolutions whose stride and weight shape the dims lack.
    kernel_names
        The kernels the op launched (the rows' ``kernels`` column): which halves of a
        convolution backward ran.
    """
    name = op.split("::")[-1].rstrip("_")
    dtype = aten_dtype(types)
    ts = tensors(dims)
    try:
        if name in ("mm", "matmul") and len(ts) >= 2 and len(ts[0]) == len(ts[1]) == 2:
            return "matmul", {"M": ts[0][0], "N": ts[1][1], "K": ts[0][1], "dtype": dtype}
        if name == "addmm" and len(ts) >= 3:
            return "matmul", {"M": ts[1][0], "N": ts[2][1], "K": ts[1][1], "dtype": dtype}
        batched = name in ("bmm", "baddbmm") or (name == "matmul" and len(ts) >= 2)
        if batched and min(len(ts[-2]), len(ts[-1])) >= 2 and max(len(ts[-2]), len(ts[-1])) >= 3:
            a, b = ts[-2], ts[-1]
            if len(b) == 2:  # a batch of rows times one matrix: folded into one GEMM
                return "matmul", {"M": prod(a[:-1]), "N": b[-1], "K": a[-1], "dtype": dtype}
            # every leading dim is batch, broadcast between the operands as torch does (a
            # 4-D [B, H, M, K] had been read as [B, M, K])
            batch = broadcast(a[:-2], b[:-2])
            if batch is None:
                return None
            return "matmul", {"B": prod(batch), "M": a[-2], "N": b[-1], "K": a[-1],
                              "dtype": dtype}  # fmt: skip
        if name == "embedding" and len(ts) >= 2 and len(ts[0]) == 2:
            # a lookup moves the rows it gathers, not the table (a 50,000-row table had been
            # priced by its 100 MB, the same for 128 lookups as for 131,072)
            return "embedding", {"tokens": prod(ts[1]), "dim": ts[0][1], "dtype": dtype}
        if name in ("linear",) and len(ts) >= 2:
            x, w = ts[0], ts[1]
            return "matmul", {"M": prod(x[:-1]), "N": w[0], "K": x[-1], "dtype": dtype}
        sh = parse_shape_text(shape_text)
        stride = sh.get("stride", [1])[0]
        conv = name in ("cudnn_convolution", "convolution", "_convolution", "conv2d")
        if conv and len(ts) >= 2 and len(ts[0]) == 4 and len(ts[1]) == 4:
            return "conv2d", conv_attrs(ts[0], ts[1], sh.get("y"), stride) | {"dtype": dtype}
        if name in ("convolution_backward", "cudnn_convolution_backward"):
            fused = conv_backward(name, ts, kernel_names, dtype)
            return ("fused", fused) if fused else None
        half = BACKWARD_HALVES.get(name)
        if half is not None and "dy" not in sh and "x" in sh and "w" in sh:
            # the importer's own rows (opsched import-trace): input, weight, stride and pad
            x, w, pad = sh["x"], sh["w"], sh.get("pad", [0])[0]
            if len(x) == 4 and len(w) == 4:
                recorded = {"stride_h": stride, "stride_w": stride, "pad_h": pad, "pad_w": pad}
                return half, conv_attrs(x, w, None, stride) | recorded | {"dtype": dtype}
        if name == "cudnn_convolution_backward_input" and "dy" in sh and "w" in sh:
            dy, w = sh["dy"], sh["w"]
            # the input where the text gives it (a kernel table's paired halves,
            # opsched.cost.conv_leaves), else rebuilt from the output and the stride
            x = sh["x"] if len(sh.get("x", [])) == 4 else [dy[0], w[1], dy[2] * stride,
                                                            dy[3] * stride]  # fmt: skip
            return "conv2d_bwd_data", strided(conv_attrs(x, w, dy, stride), sh, dy) | {
                "dtype": dtype
            }
        if name == "cudnn_convolution_backward_weight" and {"dy", "x", "w"} <= sh.keys():
            attrs = conv_attrs(sh["x"], sh["w"], sh["dy"], stride)
            return "conv2d_bwd_filter", strided(attrs, sh, sh["dy"]) | {"dtype": dtype}
        if name in ("cudnn_batch_norm", "native_batch_norm", "batch_norm") and ts:
            # the training flag's value is not recorded: cuDNN's inference kernel names it
            training = 0 if "bn_fw_inf" in kernel_names else 1
            return "batchnorm", {"numel": prod(ts[0]), "channels": channels(ts[0]),
                                 "training": training, "dtype": dtype}  # fmt: skip
        if name in ("native_layer_norm", "layer_norm") and ts:
            x = ts[0]
            return "layernorm", {"rows": prod(x[:-1]), "cols": x[-1], "dtype": dtype}
        if name in ("_softmax", "softmax", "_log_softmax", "log_softmax") and ts:
            x = ts[0]
            return "softmax", {"rows": prod(x[:-1]), "cols": x[-1], "dtype": dtype}
        att = attention_attrs(name, ts)
        if att is not None:  # the profiler records no is_causal: taken as not causal
            return "attention", att | {"dtype": dtype}
        if name in ("max", "min") and ts and tensor_arg(dims, types, 1):
            # max(a, b) of two tensors is the elementwise maximum, not a reduction
            numel = max(prod(t) for t in ts)
            return "elementwise", {"numel": numel, "arity": _elementwise_arity("maximum", ts),
                                   "fn": "maximum", "dtype": dtype}  # fmt: skip
        if name in _REDUCE and ts:
            out = reduce_out(ts[0], types, _REDUCE[name], name in ONE_DIM)
            return "reduce", {"numel": prod(ts[0]), "out_numel": out, "dtype": dtype}
        if name == "nll_loss_forward" and len(ts) >= 2:  # picks one value per target
            return "reduce", {"numel": prod(ts[1]), "out_numel": 1, "dtype": dtype}
        if name == "nll_loss_backward" and len(dims) >= 3 and isinstance(dims[2], list):
            # (grad_output, self, target, ...): writes one value of self's gradient per
            # target (zeroing that gradient is a fill_ op of its own in the traces)
            return "elementwise", {"numel": max(1, prod(dims[2])), "arity": 1, "dtype": dtype}
        if name in _AVG_POOL_BACKWARD and len(ts) >= 2:
            # (grad_output, self, ...): each input element is its window's gradient share
            return "elementwise", {"numel": prod(ts[1]), "arity": 1, "dtype": dtype}
        if name in _POOL and ts and len(ts[0]) == 4:
            return "pool", pool_attrs(name, ts[0]) | {"dtype": dtype}
        if name == "cudnn_batch_norm_backward" and ts:
            return "batchnorm", {"numel": prod(ts[0]), "channels": channels(ts[0]),
                                 "fn": "backward", "dtype": dtype}  # fmt: skip
        if name == "native_layer_norm_backward" and ts:
            x = ts[0]
            return "layernorm", {"rows": prod(x[:-1]), "cols": x[-1], "fn": "backward",
                                 "dtype": dtype}  # fmt: skip
        if name in ("_softmax_backward_data", "_log_softmax_backward_data") and ts:
            x = ts[0]
            return "softmax", {"rows": prod(x[:-1]), "cols": x[-1], "fn": "backward",
                               "dtype": dtype}  # fmt: skip
        if name in ELEMENTWISE_FNS:
            numel = max((prod(t) for t in ts), default=1)
            return "elementwise", {"numel": numel, "arity": _elementwise_arity(name, ts),
                                   "fn": name, "dtype": dtype}  # fmt: skip
        if op.startswith("triton_"):  # a TorchInductor kernel recorded as its own op
            return inductor_kind(op, dims, types)
    except OpschedError:  # already names the problem (and is a ValueError)
        raise
    except (IndexError, TypeError, ValueError, ZeroDivisionError):
        return None
    return None

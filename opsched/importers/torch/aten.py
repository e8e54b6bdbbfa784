"""ATen operators -> the op kinds of :mod:`opsched.ir.kinds`.

:func:`map_aten` takes one call (the op's name without namespace or overload, its arguments
with every tensor replaced by its :class:`~opsched.importers._build.TensorMeta`, and the
metas of its results) and returns the kind and shape attrs of the op. It knows no torch
object, so both capture paths (``torch.export`` and the ``symbolic_trace`` fallback) share it,
and it is tested without tracing anything.

Examples
--------
>>> from opsched.importers._build import TensorMeta as T
>>> m = map_aten("linear", (T((8, 64)), T((32, 64)), T((32,))), {}, [T((8, 32))])
>>> m.kind, m.attrs["M"], m.attrs["N"], m.attrs["K"]
('matmul', 8, 32, 64)
>>> map_aten("relu", (T((8, 32)),), {}, [T((8, 32))]).attrs
{'numel': 256, 'arity': 1, 'fn': 'relu'}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opsched.importers._build import TensorMeta, numel
from opsched.ir import kinds

__all__ = ["VIEWS", "Mapped", "map_aten", "tensors_in"]


def _words(text: str) -> list[str]:
    return text.split()


@dataclass
class Mapped:
    """Result of :func:`map_aten`: the kind, its attrs, and how the op treats memory."""

    kind: str
    attrs: dict[str, Any] = field(default_factory=dict)
    aliasing: bool = False  # a view of its first input: allocates nothing
    known: bool = True  # False: an op this table does not know, mapped to a generic kind


#: Ops that only reinterpret their first input's storage (no kernel, no allocation).
VIEWS = frozenset(
    _words(
        """
    view _unsafe_view reshape view_as reshape_as expand expand_as permute transpose t
    numpy_T T mT squeeze unsqueeze slice select narrow as_strided alias detach flatten
    unflatten split split_with_sizes chunk unbind tensor_split unfold diagonal movedim
    moveaxis swapaxes swapdims view_as_real view_as_complex lift_fresh identity getitem
    Identity
    """
    )
)
_UNARY = _words(
    """
    relu relu6 gelu silu sigmoid tanh hardtanh hardswish hardsigmoid leaky_relu elu selu
    celu mish softplus softsign logsigmoid exp exp2 expm1 log log2 log10 log1p sqrt
    rsqrt neg abs sign sin cos tan asin acos atan sinh cosh erf erfc erfinv reciprocal
    square floor ceil round trunc frac clamp clamp_min clamp_max clip nan_to_num
    logical_not bitwise_not isnan isinf isfinite sgn positive relu_ prelu glu threshold
    cumsum cumprod tril triu dropout native_dropout feature_dropout alpha_dropout
    masked_fill fill zero fill_ zeros_like ones_like full_like empty_like rand_like
    randn_like bernoulli zeros ones full arange scalar_tensor new_zeros new_ones
    new_full new_empty empty empty_strided rand randn randint linspace float half
    bfloat16 double int long bool lerp
    """
)
_BINARY = _words(
    """
    add sub rsub mul div true_divide floor_divide truediv floordiv remainder fmod pow
    maximum minimum fmax fmin atan2 eq ne lt le gt ge logical_and logical_or logical_xor
    bitwise_and bitwise_or bitwise_xor where addcmul addcdiv hypot copysign xlogy
    mse_loss iadd imul isub itruediv
    """
)
_RESHAPES = frozenset(("reshape", "reshape_as", "flatten", "view"))
_ELEMENTWISE = frozenset(_UNARY + _BINARY)
_COPIES = frozenset(
    _words(
        """
    cat concat concatenate stack hstack vstack clone contiguous _to_copy to type_as copy
    index_select gather index index_put scatter scatter_add scatter_reduce
    constant_pad_nd pad reflection_pad1d reflection_pad2d replication_pad1d
    replication_pad2d repeat repeat_interleave flip roll upsample_nearest1d
    upsample_nearest2d upsample_bilinear2d interpolate pixel_shuffle pixel_unshuffle
    channel_shuffle masked_select take index_add slice_scatter select_scatter
    """
    )
)
_REDUCES = frozenset(
    _words(
        """
    sum mean amax amin prod var std var_mean std_mean argmax argmin any all norm
    linalg_vector_norm logsumexp max min count_nonzero nansum nanmean median
    """
    )
)
_ALLOCATING = frozenset(
    _words(
        """
    zeros ones full arange scalar_tensor new_zeros new_ones new_full new_empty empty
    empty_strided rand randn randint linspace
    """
    )
)


def tensors_in(args: Sequence[Any]) -> list[TensorMeta]:
    """The tensors among ``args``, lists flattened, in order (``None`` skipped)."""
    out: list[TensorMeta] = []
    for a in args:
        if isinstance(a, TensorMeta):
            out.append(a)
        elif isinstance(a, list | tuple):
            out.extend(tensors_in(a))
    return out


class _Args:
    """Positional-or-keyword access to a call's arguments."""

    def __init__(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        self.args, self.kwargs = args, kwargs

    def get(self, i: int, name: str, default: Any = None) -> Any:
        if i < len(self.args):
            return self.args[i]
        return self.kwargs.get(name, default)

    def t(self, i: int, name: str) -> TensorMeta:
        v = self.get(i, name)
        if not isinstance(v, TensorMeta):
            raise ValueError(f"argument {name!r} is not a tensor")
        return v


def _ints(v: Any, n: int, default: int) -> list[int]:
    """An int or a list of ints as ``n`` ints (an empty list means ``default``)."""
    if v is None or (isinstance(v, list | tuple) and len(v) == 0):
        return [default] * n
    if isinstance(v, list | tuple):
        vals = [int(x) for x in v]
        return vals * n if len(vals) == 1 else vals[-n:]
    return [int(v)] * n


def _window(
    kind: str,
    n: int,
    c: int,
    k_out: int | None,
    in_sp: Sequence[int],
    out_sp: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    pad: Sequence[int],
    dil: Sequence[int],
) -> dict[str, Any]:
    """conv2d / pool attrs for 1-, 2- or 3-d windows (1-d: H = 1; 3-d: depth folded into N)."""
    d = len(in_sp)
    if d == 1:
        in_sp, out_sp, kernel = (1, *in_sp), (1, *out_sp), (1, *kernel)
        stride, pad, dil = (1, *stride), (0, *pad), (1, *dil)
    elif d == 3:
        n *= out_sp[0]
        in_sp, out_sp, kernel = in_sp[1:], out_sp[1:], kernel[1:]
        stride, pad, dil = stride[1:], pad[1:], dil[1:]
    a: dict[str, Any] = {"N": n, "C": c}
    a.update(H=in_sp[0], W=in_sp[1], R=kernel[0], S=kernel[1])
    if k_out is not None:
        a["K"] = k_out
    a.update(stride_h=stride[0], stride_w=stride[1], pad_h=pad[0], pad_w=pad[1])
    if any(x != 1 for x in dil):
        a.update(dilation_h=dil[0], dilation_w=dil[1])
    # ceil_mode / asymmetric "same" padding: widen the padding until the output matches
    for axis, key in ((0, "pad_h"), (1, "pad_w")):
        for _ in range(4):
            got = kinds.conv_out_hw(a, kind)[axis] if _fits(a, kind) else -1
            if got >= out_sp[axis]:
                break
            a[key] += 1
    return a


def _fits(a: Mapping[str, Any], kind: str) -> bool:
    try:
        kinds.conv_out_hw(a, kind)
    except Exception:
        return False
    return True


def _conv(name: str, a: _Args, outs: list[TensorMeta]) -> Mapped:
    x, w, y = a.t(0, "input"), a.t(1, "weight"), outs[0]
    if name == "convolution":
        stride, padding, dil = a.get(3, "stride"), a.get(4, "padding"), a.get(5, "dilation")
        transposed, groups = bool(a.get(6, "transposed", False)), int(a.get(8, "groups", 1))
    else:
        transposed = name.startswith("conv_transpose")
        stride, padding = a.get(3, "stride"), a.get(4, "padding")
        if transposed:  # (x, w, b, stride, padding, output_padding, groups, dilation)
            groups, dil = int(a.get(6, "groups", 1)), a.get(7, "dilation")
        else:
            dil, groups = a.get(5, "dilation"), int(a.get(6, "groups", 1))
    sd = len(w.shape) - 2
    kernel = list(w.shape[2:])
    stride_, dil_ = _ints(stride, sd, 1), _ints(dil, sd, 1)
    pad_ = [0] * sd if isinstance(padding, str) else _ints(padding, sd, 0)
    batched = len(x.shape) == sd + 2
    xs, ys = (x.shape if batched else (1, *x.shape)), (y.shape if batched else (1, *y.shape))
    if transposed:  # the data gradient of a conv from y back to x: K = input channels
        kind = "conv2d_bwd_data"
        attrs = _window(kind, ys[0], ys[1], xs[1], ys[2:], xs[2:], kernel, stride_, pad_, dil_)
    else:
        kind = "conv2d"
        attrs = _window(kind, xs[0], xs[1], ys[1], xs[2:], ys[2:], kernel, stride_, pad_, dil_)
    if groups != 1:
        attrs["groups"] = groups
    # direct-convolution MACs: every output element of the forward conv sums C/groups x R x S
    fwd_out, fwd_in_c = (x.numel, ys[1]) if transposed else (y.numel, xs[1])
    macs = fwd_out * (fwd_in_c // max(1, groups)) * math.prod(kernel)
    if _safe_flops(kind, attrs) != 2 * macs:  # 3-d kernels, odd padding: count directly
        attrs["flops"] = 2 * macs
    if a.get(2, "bias") is not None:
        attrs["bias"] = True
    return Mapped(kind, attrs)


def _safe_flops(kind: str, attrs: Mapping[str, Any]) -> int:
    try:
        return kinds.flops(kind, attrs)
    except Exception:
        return -1


def _matmul(name: str, a: _Args, outs: list[TensorMeta]) -> Mapped:
    y = outs[0]
    if name == "linear":
        x, w = a.t(0, "input"), a.t(1, "weight")
        k = x.shape[-1] if x.shape else 1
        n = w.shape[0] if len(w.shape) == 2 else 1
        attrs = {"M": x.numel // max(k, 1), "N": n, "K": k}
        if a.get(2, "bias") is not None:
            attrs["bias"] = True
        return Mapped("matmul", attrs)
    first = 1 if name in ("addmm", "baddbmm", "addbmm", "addmv") else 0
    lhs, rhs = a.t(first, "mat1" if first else "self"), a.t(first + 1, "mat2" if first else "other")
    k = lhs.shape[-1] if lhs.shape else 1
    m = lhs.shape[-2] if len(lhs.shape) >= 2 else 1
    n = rhs.shape[-1] if len(rhs.shape) >= 2 else 1
    b = max(1, y.numel // max(1, m * n))
    attrs = {"M": m, "N": n, "K": k}
    if b > 1:
        attrs["B"] = b
    if first:
        attrs["bias"] = True
    return Mapped("matmul", attrs)


def _pool(name: str, a: _Args, outs: list[TensorMeta]) -> Mapped:
    x, y = a.t(0, "input"), outs[0]
    sd = 1 if "1d" in name else 3 if "3d" in name else 2
    xs = x.shape if len(x.shape) == sd + 2 else (1, *x.shape)
    ys = y.shape if len(y.shape) == sd + 2 else (1, *y.shape)
    in_sp, out_sp = list(xs[2:]), list(ys[2:])
    if "adaptive" in name:
        stride = [max(1, i // o) for i, o in zip(in_sp, out_sp, strict=True)]
        kernel = [i - (o - 1) * s for i, o, s in zip(in_sp, out_sp, stride, strict=True)]
        pad, dil = [0] * sd, [1] * sd
    else:
        kernel = _ints(a.get(1, "kernel_size"), sd, 1)
        stride = _ints(a.get(2, "stride"), sd, 0)
        stride = [s or k for s, k in zip(stride, kernel, strict=True)]
        pad = _ints(a.get(3, "padding"), sd, 0)
        dil = _ints(a.get(4, "dilation"), sd, 1) if "max" in name else [1] * sd
    attrs = _window("pool", xs[0], xs[1], None, in_sp, out_sp, kernel, stride, pad, dil)
    attrs["mode"] = "max" if "max" in name else "avg"
    return Mapped("pool", attrs)


def _rows_cols(kind: str, x: TensorMeta, cols: int) -> Mapped:
    cols = max(1, cols)
    return Mapped(kind, {"rows": x.numel // cols, "cols": cols})


def _norm(name: str, a: _Args, outs: list[TensorMeta]) -> Mapped:
    x = a.t(0, "input")
    if "batch_norm" in name:
        return Mapped("batchnorm", {"numel": x.numel})
    if "group_norm" in name:
        groups = int(a.get(1, "num_groups", 1)) if name == "group_norm" else int(a.get(6, "group"))
        return _rows_cols("layernorm", x, x.numel // max(1, x.shape[0] * groups))
    if "instance_norm" in name:
        return _rows_cols("layernorm", x, numel(x.shape[2:]))
    shape = a.get(1, "normalized_shape", [])
    cols = math.prod(int(d) for d in shape) if isinstance(shape, list | tuple) else int(shape)
    kind = "rmsnorm" if "rms" in name else "layernorm"
    return _rows_cols(kind, x, cols)


def _softmax(name: str, a: _Args, outs: list[TensorMeta]) -> Mapped:
    x = a.t(0, "input")
    dim = a.get(1, "dim", -1)
    dim = -1 if dim is None else int(dim)
    cols = x.shape[dim] if x.shape else 1
    m = _rows_cols("softmax", x, cols)
    if "log" in name:
        m.attrs["fn"] = "log_softmax"
    return m


def _embedding(name: str, a: _Args, outs: list[TensorMeta]) -> Mapped:
    w, idx = a.t(0, "weight"), a.t(1, "indices")
    return Mapped("embedding", {"tokens": idx.numel, "dim": w.shape[-1], "vocab": w.shape[0]})


def _attention(name: str, a: _Args, outs: list[TensorMeta]) -> Mapped:
    q, k = a.t(0, "query"), a.t(1, "key")
    b = numel(q.shape[:-2])
    return Mapped("attention", {"B": b, "Sq": q.shape[-2], "Skv": k.shape[-2], "D": q.shape[-1]})


_HANDLERS: dict[str, Callable[[str, _Args, list[TensorMeta]], Mapped]] = {}
for _n in [
    "convolution",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
]:
    _HANDLERS[_n] = _conv
for _n in _words(
    """
    linear mm addmm bmm baddbmm matmul addbmm mv addmv dot
    """
):
    _HANDLERS[_n] = _matmul
for _n in _words(
    """
    max_pool1d max_pool2d max_pool3d max_pool2d_with_indices max_pool3d_with_indices
    avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool1d adaptive_avg_pool2d
    _adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool2d
    """
):
    _HANDLERS[_n] = _pool
for _n in _words(
    """
    batch_norm native_batch_norm _native_batch_norm_legit
    _native_batch_norm_legit_functional _native_batch_norm_legit_no_training
    cudnn_batch_norm layer_norm native_layer_norm rms_norm _fused_rms_norm group_norm
    native_group_norm instance_norm
    """
):
    _HANDLERS[_n] = _norm
for _n in ["softmax", "_softmax", "log_softmax", "_log_softmax", "_safe_softmax"]:
    _HANDLERS[_n] = _softmax
_HANDLERS["embedding"] = _embedding
for _n in [
    "scaled_dot_product_attention",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_cudnn_attention",
]:
    _HANDLERS[_n] = _attention


def map_aten(
    name: str, args: Sequence[Any], kwargs: Mapping[str, Any], outs: list[TensorMeta]
) -> Mapped:
    """Kind and attrs of the ATen op ``name`` (no namespace, no overload; ``add_`` in place).

    Parameters
    ----------
    name
        ``"conv2d"``, ``"add_"``... An op not in the table is mapped onto ``elementwise``
        (same number of elements in and out) or ``copy`` with ``known`` False.
    args, kwargs
        The call's arguments, tensors replaced by :class:`TensorMeta`.
    outs
        The metas of the op's tensor results (at least one).

    Examples
    --------
    >>> from opsched.importers._build import TensorMeta as T
    >>> x, w = T((1, 3, 32, 32)), T((16, 3, 3, 3))
    >>> m = map_aten("conv2d", (x, w, None, [1, 1], [1, 1]), {}, [T((1, 16, 32, 32))])
    >>> m.kind, kinds.flops(m.kind, m.attrs)
    ('conv2d', 884736)
    """
    base = name[:-1] if name.endswith("_") and not name.endswith("__") else name
    a = _Args(args, kwargs)
    y = outs[0]
    ins = tensors_in(args) + tensors_in(list(kwargs.values()))
    handler = _HANDLERS.get(base)
    if handler is not None:
        try:
            return handler(base, a, outs)
        except (ValueError, IndexError, TypeError, ZeroDivisionError):
            pass  # unusual signature: fall through to the generic mapping
    if base in _RESHAPES and ins and not ins[0].contiguous:  # strides do not allow a view
        return Mapped("copy", {"numel": y.numel})
    if base in VIEWS:
        return Mapped("view", {"numel": y.numel}, aliasing=bool(ins))
    if base in ("dropout", "feature_dropout", "alpha_dropout") and not a.get(
        2, "train", kwargs.get("training", True)
    ):
        return Mapped("view", {"numel": y.numel}, aliasing=bool(ins))
    if base in _ELEMENTWISE and (not ins or y.numel >= max(t.numel for t in ins)):
        arity = max(1, len(ins))
        return Mapped("elementwise", {"numel": y.numel, "arity": arity, "fn": base})
    if base in _COPIES:
        return Mapped("copy", {"numel": y.numel})
    if base in _REDUCES and ins:
        return Mapped("reduce", {"numel": max(t.numel for t in ins), "out_numel": y.numel})
    known = base in _ELEMENTWISE or base in _REDUCES
    if ins and y.numel == max(t.numel for t in ins) and (y.is_float or known):
        return Mapped("elementwise", {"numel": y.numel, "arity": len(ins), "fn": base}, known=known)
    return Mapped("copy", {"numel": y.numel}, known=known)


def allocates_without_inputs(name: str) -> bool:
    """True for factory ops (``zeros``, ``arange``...) that create a tensor from nothing."""
    return name in _ALLOCATING

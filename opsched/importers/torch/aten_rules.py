"""Per-family shape rules for ATen ops: convolutions, matmuls, pools, norms, softmax,
embedding and attention.

Each rule takes the op's base name, its arguments (:class:`Args`, tensors replaced by
:class:`~opsched.importers._build.TensorMeta`) and the metas of its results, and returns a
:class:`Mapped` (kind and shape attrs of :mod:`opsched.ir.kinds`); :data:`HANDLERS` maps each
ATen name onto its rule. Ops without a rule (elementwise, copies, views, reductions) are
mapped by name tables in :mod:`opsched.importers.torch.aten`, whose
:func:`~opsched.importers.torch.aten.map_aten` is the entry point.

Examples
--------
>>> from opsched.importers._build import TensorMeta as T
>>> x, w = T((2, 16, 8)), T((2, 8, 4))
>>> HANDLERS["bmm"]("bmm", Args((x, w), {}), [T((2, 16, 4))]).attrs
{'M': 16, 'N': 4, 'K': 8, 'B': 2}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opsched.importers._build import ATTENTION_CAUSAL_ARG, TensorMeta, causal_flag, numel
from opsched.ir import kinds

__all__ = ["HANDLERS", "Args", "Mapped"]


def _words(text: str) -> list[str]:
    return text.split()


@dataclass
class Mapped:
    """Kind, attrs, and how the op treats memory: the result of every rule and of
    :func:`~opsched.importers.torch.aten.map_aten`."""

    kind: str
    attrs: dict[str, Any] = field(default_factory=dict)
    aliasing: bool = False  # a view of its first input: allocates nothing
    known: bool = True  # False: an op this table does not know, mapped to a generic kind


class Args:
    """Positional-or-keyword access to a call's arguments."""

    def __init__(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        self.args, self.kwargs = args, kwargs

    def get(self, i: int, name: str, default: Any = None) -> Any:
        """Argument ``i`` if given positionally, else keyword ``name``, else ``default``."""
        if i < len(self.args):
            return self.args[i]
        return self.kwargs.get(name, default)

    def t(self, i: int, name: str) -> TensorMeta:
        """Like :meth:`get`, for a tensor argument (ValueError if it is not one)."""
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


def _conv(name: str, a: Args, outs: list[TensorMeta]) -> Mapped:
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


def _matmul(name: str, a: Args, outs: list[TensorMeta]) -> Mapped:
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


def _pool(name: str, a: Args, outs: list[TensorMeta]) -> Mapped:
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


def _norm(name: str, a: Args, outs: list[TensorMeta]) -> Mapped:
    x = a.t(0, "input")
    if "batch_norm" in name:
        channels = x.shape[1] if len(x.shape) >= 2 else 0
        training = "no_training" not in name and bool(a.get(5, "training", True))
        return Mapped(
            "batchnorm", {"numel": x.numel, "channels": channels, "training": int(training)}
        )
    if "group_norm" in name:
        groups = int(a.get(1, "num_groups", 1)) if name == "group_norm" else int(a.get(6, "group"))
        return _rows_cols("layernorm", x, x.numel // max(1, x.shape[0] * groups))
    if "instance_norm" in name:
        return _rows_cols("layernorm", x, numel(x.shape[2:]))
    shape = a.get(1, "normalized_shape", [])
    cols = math.prod(int(d) for d in shape) if isinstance(shape, list | tuple) else int(shape)
    kind = "rmsnorm" if "rms" in name else "layernorm"
    return _rows_cols(kind, x, cols)


def _softmax(name: str, a: Args, outs: list[TensorMeta]) -> Mapped:
    x = a.t(0, "input")
    dim = a.get(1, "dim", -1)
    dim = -1 if dim is None else int(dim)
    cols = x.shape[dim] if x.shape else 1
    m = _rows_cols("softmax", x, cols)
    if "log" in name:
        m.attrs["fn"] = "log_softmax"
    return m


def _embedding(name: str, a: Args, outs: list[TensorMeta]) -> Mapped:
    w, idx = a.t(0, "weight"), a.t(1, "indices")
    return Mapped("embedding", {"tokens": idx.numel, "dim": w.shape[-1], "vocab": w.shape[0]})


def _attention(name: str, a: Args, outs: list[TensorMeta]) -> Mapped:
    q, k = a.t(0, "query"), a.t(1, "key")
    b = numel(q.shape[:-2])
    attrs = {"B": b, "Sq": q.shape[-2], "Skv": k.shape[-2], "D": q.shape[-1]}
    if name in ATTENTION_CAUSAL_ARG and causal_flag(a.get(*ATTENTION_CAUSAL_ARG[name])):
        attrs["causal"] = 1
    return Mapped("attention", attrs)


#: The shape rule of each ATen op name (no namespace, no overload, no in-place ``_``).
HANDLERS: dict[str, Callable[[str, Args, list[TensorMeta]], Mapped]] = {}
for _n in [
    "convolution",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
]:
    HANDLERS[_n] = _conv
for _n in _words(
    """
    linear mm addmm bmm baddbmm matmul addbmm mv addmv dot
    """
):
    HANDLERS[_n] = _matmul
for _n in _words(
    """
    max_pool1d max_pool2d max_pool3d max_pool2d_with_indices max_pool3d_with_indices
    avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool1d adaptive_avg_pool2d
    _adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool2d
    """
):
    HANDLERS[_n] = _pool
for _n in _words(
    """
    batch_norm native_batch_norm _native_batch_norm_legit
    _native_batch_norm_legit_functional _native_batch_norm_legit_no_training
    cudnn_batch_norm layer_norm native_layer_norm rms_norm _fused_rms_norm group_norm
    native_group_norm instance_norm
    """
):
    HANDLERS[_n] = _norm
for _n in ["softmax", "_softmax", "log_softmax", "_log_softmax", "_safe_softmax"]:
    HANDLERS[_n] = _softmax
HANDLERS["embedding"] = _embedding
for _n in [
    "scaled_dot_product_attention",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_cudnn_attention",
]:
    HANDLERS[_n] = _attention

"""ATen operators -> the op kinds of :mod:`opsched.ir.kinds`.

:func:`map_aten` takes one call (the op's name without namespace or overload, its arguments
with every tensor replaced by its :class:`~opsched.importers._build.TensorMeta`, and the
metas of its results) and returns the kind and shape attrs of the op. It knows no torch
object, so both capture paths (``torch.export`` and the ``symbolic_trace`` fallback) share it,
and it is tested without tracing anything.

This module holds the name tables (views, elementwise, copies, reductions, factories) and
the dispatch; the shape rules of the op families that need one (convolution, matmul,
pooling, normalisation, softmax, embedding, attention) are in
:mod:`opsched.importers.torch.aten_rules`.

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

from collections.abc import Mapping, Sequence
from typing import Any

from opsched.errors import OpschedError
from opsched.importers._build import TensorMeta
from opsched.importers.torch.aten_rules import HANDLERS, Args, Mapped

__all__ = ["VIEWS", "Mapped", "map_aten", "tensors_in"]


def _words(text: str) -> list[str]:
    return text.split()


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
    linalg_vector_norm logsumexp max min count_nonzero nansum nanmean median topk kthvalue
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
    >>> from opsched.ir import kinds
    >>> x, w = T((1, 3, 32, 32)), T((16, 3, 3, 3))
    >>> m = map_aten("conv2d", (x, w, None, [1, 1], [1, 1]), {}, [T((1, 16, 32, 32))])
    >>> m.kind, kinds.flops(m.kind, m.attrs)
    ('conv2d', 884736)
    """
    base = name[:-1] if name.endswith("_") and not name.endswith("__") else name
    a = Args(args, kwargs)
    y = outs[0]
    ins = tensors_in(args) + tensors_in(list(kwargs.values()))
    handler = HANDLERS.get(base)
    if handler is not None:
        try:
            return handler(base, a, outs)
        except OpschedError:  # already names the problem (and is a ValueError)
            raise
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

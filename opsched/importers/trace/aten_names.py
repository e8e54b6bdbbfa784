"""Tables of aten op names by kind, and of recorded type names by dtype.

Used by :mod:`opsched.importers.trace.shapes`; the names are given without the ``aten::``
prefix.
"""

from __future__ import annotations

__all__ = ["attention_attrs", "conv_backward_operands"]

_DTYPES = {
    "float": "float32",
    "c10::Float": "float32",
    "double": "float64",
    "c10::Double": "float64",
    "c10::Half": "float16",
    "Half": "float16",
    "half": "float16",
    "c10::BFloat16": "bfloat16",
    "BFloat16": "bfloat16",
    "c10::Float8_e4m3fn": "float8",
    "c10::Float8_e5m2": "float8",
    "long int": "int64",
    "long": "int64",
    "int": "int32",
    "signed char": "int8",
    "unsigned char": "int8",
    "bool": "bool",
}

_MATMUL = {"mm", "addmm", "bmm", "baddbmm", "linear", "matmul", "_addmm_activation"}
_CONV = {"conv2d", "convolution", "_convolution", "cudnn_convolution", "miopen_convolution"}
_CONV_BWD = {"convolution_backward", "cudnn_convolution_backward"}


def conv_backward_operands(name: str, ts: list[list[int]]) -> tuple[list[int], list[int]]:
    """``(grad_output, input)`` of a convolution backward's first two tensors.

    PyTorch 2's ``convolution_backward`` takes ``(grad_output, input, weight)``, the older
    ``cudnn_convolution_backward`` ``(input, grad_output, weight)``.

    >>> conv_backward_operands("convolution_backward", [[1, 8, 4, 4], [1, 3, 8, 8]])
    ([1, 8, 4, 4], [1, 3, 8, 8])
    """
    return (ts[0], ts[1]) if name == "convolution_backward" else (ts[1], ts[0])


_UNARY = {
    "relu",
    "relu_",
    "clamp_min",
    "clamp_min_",
    "clamp",
    "clamp_",
    "sigmoid",
    "sigmoid_",
    "tanh",
    "tanh_",
    "gelu",
    "silu",
    "silu_",
    "neg",
    "exp",
    "exp_",
    "log",
    "log_",
    "sqrt",
    "rsqrt",
    "abs",
    "reciprocal",
    "nan_to_num",
    "fill_",
    "zero_",
    "hardtanh",
    "hardtanh_",
    "leaky_relu",
    "elu",
    "sin",
    "cos",
    "pow",
    "dropout",
    "native_dropout",
    "erf",
    "floor",
    "round",
    "sign",
    "logical_not",
    "bitwise_not",
    "isnan",
    "hardswish",
    "hardsigmoid",
}
_BINARY = {
    "add",
    "add_",
    "sub",
    "sub_",
    "rsub",
    "mul",
    "mul_",
    "div",
    "div_",
    "threshold_backward",
    "sigmoid_backward",
    "tanh_backward",
    "gelu_backward",
    "silu_backward",
    "where",
    "maximum",
    "minimum",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_and_",
    "logical_or",
    "addcmul_",
    "addcdiv_",
    "lerp_",
    "masked_fill",
    "masked_fill_",
    "hardtanh_backward",
    "leaky_relu_backward",
    "bitwise_and",
    "remainder",
    "fmod",
    "copysign",
    "xlogy",
    "atan2",
}
_COPY = {
    "copy_",
    "to",
    "_to_copy",
    "clone",
    "contiguous",
    "cat",
    "_cat",
    "stack",
    "index_copy_",
    "index_select",
    "gather",
    "scatter",
    "scatter_",
    "scatter_add_",
    "flip",
    "roll",
    "constant_pad_nd",
    "repeat",
    "slice_backward",
    "select_backward",
    "narrow_copy",
}
_SOFTMAX = {
    "softmax",
    "_softmax",
    "log_softmax",
    "_log_softmax",
    "_softmax_backward_data",
    "_log_softmax_backward_data",
}
_LAYERNORM = {"layer_norm", "native_layer_norm", "native_layer_norm_backward"}
_RMSNORM = {"rms_norm", "_fused_rms_norm"}
_BATCHNORM = {
    "batch_norm",
    "_batch_norm_impl_index",
    "cudnn_batch_norm",
    "native_batch_norm",
    "cudnn_batch_norm_backward",
    "native_batch_norm_backward",
    "_native_batch_norm_legit",
    "_native_batch_norm_legit_no_training",
}
_ATTENTION = {
    "scaled_dot_product_attention",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_cudnn_attention_forward",
    "_flash_attention_forward",
    "_efficient_attention_forward",
}
#: Attention kernels whose q / k / v are (batch, seq, heads, dim); the others take
#: (batch, heads, seq, dim) like scaled_dot_product_attention.
_ATTENTION_BSHD = {"_flash_attention_forward", "_efficient_attention_forward"}


def attention_attrs(name: str, ts: list[list[int]]) -> dict[str, int] | None:
    """``attention`` attrs (``B`` = batch x heads, ``Sq``, ``Skv``, ``D``) of a fused attention
    forward from its first three tensors (q, k, v), or None if ``name`` is not one.

    >>> q = [8, 16, 512, 64]
    >>> attention_attrs("_cudnn_attention_forward", [q, q, q])
    {'B': 128, 'Sq': 512, 'Skv': 512, 'D': 64}
    """
    if name not in _ATTENTION or len(ts) < 3 or any(len(t) != 4 for t in ts[:3]):
        return None
    q, k = ts[0], ts[1]
    if name in _ATTENTION_BSHD:  # (batch, seq, heads, dim)
        return {"B": q[0] * q[2], "Sq": q[1], "Skv": k[1], "D": q[3]}
    return {"B": q[0] * q[1], "Sq": q[2], "Skv": k[2], "D": q[3]}


_POOL = {"max_pool2d", "max_pool2d_with_indices", "avg_pool2d"}

"""Shape rules shared by the aten mappings (:mod:`opsched.cost.aten`): the dtypes of
profiler type names, a row's tensor arguments, and the attributes of convolutions, pooling
and reductions from their recorded dims.

Examples
--------
>>> a = conv_attrs([32, 64, 56, 56], [128, 64, 3, 3], None, 1)
>>> a["R"], a["pad_h"], a["K"]
(3, 1, 128)
>>> broadcast([8, 1, 4], [5, 1])
[8, 5, 4]
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from opsched.importers.trace.aten_names import conv_backward_operands
from opsched.ir import kinds
from opsched.ir.kinds import DTYPE_BYTES

#: The profiler's type names of tensor dtypes, lower-cased.
DTYPE_NAMES = {
    "float": "float32",
    "double": "float64",
    "c10::half": "float16",
    "half": "float16",
    "c10::bfloat16": "bfloat16",
    "bfloat16": "bfloat16",
    "long int": "int64",
    "long": "int64",
    "int": "int32",
    "bool": "bool",
    "unsigned char": "int8",
    "signed char": "int8",
    "short int": "int16",
    "short": "int16",
    "c10::complex<float>": "complex64",
    "c10::complex<double>": "complex128",
}


#: Reductions whose ``dim`` is one int (``max.dim(self, dim, keepdim)``, ``argmax(self, dim,
#: keepdim)``, ``prod.dim_int``): the profiler types it ``Int`` or, in newer traces,
#: ``Scalar``, and it is there only in the forms of three arguments or more (``max(self)``,
#: ``prod(self, dtype)`` reduce everything).
ONE_DIM = {"max", "min", "argmax", "argmin", "prod", "all", "any"}

#: Types the profiler gives scalar arguments that read as a dtype once lower-cased (a
#: tensor's type is its dtype: ``"int"``, ``"bool"``, ``"c10::Half"``).
_SCALAR_TYPES = {"Int", "Bool", "Double"}


def pool_attrs(name: str, x: list[int]) -> dict[str, Any]:
    """Pooling attrs: the window is not recorded in the dims.

    Adaptive pooling is taken as global (``R = H``, ``S = W``, one value per channel); max and
    average pooling as the 3x3 stride-2 pad-1 window of CNN stems, which halves ``H`` and
    ``W`` (a 2x2 stride-2 window gives the same output size, so bytes agree either way).
    """
    n, c, h, w = x
    mode = "avg" if "avg" in name else "max"
    if name.lstrip("_").startswith("adaptive"):
        return {"N": n, "C": c, "H": h, "W": w, "R": h, "S": w, "mode": mode}
    return {"N": n, "C": c, "H": h, "W": w, "R": min(3, h), "S": min(3, w), "stride_h": 2,
            "stride_w": 2, "pad_h": 1 if h >= 3 else 0, "pad_w": 1 if w >= 3 else 0,
            "mode": mode}  # fmt: skip


def aten_dtype(types: list[Any]) -> str:
    """dtype of the first tensor input (``"float"`` -> ``"float32"``); float32 if none.

    Examples
    --------
    >>> aten_dtype(["c10::Half", "c10::Half"])
    'float16'
    """
    for t in types:
        d = DTYPE_NAMES.get(str(t).lower())
        if d is not None:
            return d
    return "float32"


def input_bytes(dims: list[Any], types: list[Any]) -> int:
    """Bytes of the tensor inputs a profiler row records (4 per element of an unknown type).

    The size of an op without a shape rule when the row carries no byte count of its own.

    Examples
    --------
    >>> input_bytes([[1024, 64], [], [1024]], ["c10::Half", "Scalar", "long"])
    139264
    """
    total = 0
    for i, d in enumerate(dims):
        if isinstance(d, list) and d and all(isinstance(x, int) for x in d):
            t = DTYPE_NAMES.get(str(types[i]).lower()) if i < len(types) else None
            total += prod(d) * DTYPE_BYTES.get(t or "float32", 4)
    return total


def channels(x: list[int]) -> int:
    """Channels of a batch norm's input (dim 1 of ``N, C, ...``; 0: not known)."""
    return int(x[1]) if len(x) >= 2 else 0


def prod(dims: list[int]) -> int:
    return math.prod(int(x) for x in dims) if dims else 1


def tensors(dims: list[Any]) -> list[list[int]]:
    return [
        list(d) for d in dims if isinstance(d, list) and d and all(isinstance(x, int) for x in d)
    ]


#: The leaf ops of a cuDNN convolution backward and the half each computes.
BACKWARD_HALVES = {
    "cudnn_convolution_backward_input": "conv2d_bwd_data",
    "cudnn_convolution_backward_weight": "conv2d_bwd_filter",
}


def parse_shape_text(text: str) -> dict[str, list[int]]:
    """``"x=[32,3,224,224] w=[64,3,7,7] y=[...] stride~2"`` -> {'x': [...], 'w': [...], ...}.

    >>> parse_shape_text("x=[8,4,9,9] w=[2,4,3,3] stride=2 pad=1 (conv2d_bwd_data)")
    {'x': [8, 4, 9, 9], 'w': [2, 4, 3, 3], 'stride': [2], 'pad': [1]}
    """
    out = {k: [int(v) for v in body.split(",") if v.strip()] for k, body in
           re.findall(r"\b(x|w|y|dy)=\[([0-9, ]*)\]", text or "")}  # fmt: skip
    # "stride~2" in the curated tables; "stride=2 pad=1" in the importer's own rows
    m = re.search(r"stride~(\d+)", text or "") or re.search(r"\bstride=(\d+)", text or "")
    if m:
        out["stride"] = [int(m.group(1))]
    m = re.search(r"\bpad=(\d+)", text or "")
    if m:
        out["pad"] = [int(m.group(1))]
    return out


def _pad(size: int, out: int, window: int, stride: int) -> int:
    """Least padding that makes a ``window``/``stride`` sweep of ``size`` give ``out``."""
    return max(0, -(-((out - 1) * stride + window - size) // 2))


def conv_attrs(x: list[int], w: list[int], y: list[int] | None, stride: int) -> dict[str, Any]:
    """Conv attrs from input, weight and (when recorded) output dims.

    With the output known, stride and padding follow from it; without, ``(R-1)/2`` padding
    (the "same" convention of the CNNs these traces come from) is assumed.
    """
    n, c, h, wd = x
    k, cg, r, s = w
    if y is not None and len(y) == 4 and y[2] > 0 and y[3] > 0:
        stride = max(1, round(h / y[2]))
        pad_h, pad_w = _pad(h, y[2], r, stride), _pad(wd, y[3], s, stride)
    else:
        pad_h, pad_w = (r - 1) // 2, (s - 1) // 2
    groups = max(1, c // cg) if cg else 1
    return {"N": n, "C": c, "H": h, "W": wd, "K": k, "R": r, "S": s, "stride_h": stride,
            "stride_w": stride, "pad_h": pad_h, "pad_w": pad_w, "groups": groups}  # fmt: skip


def strided(attrs: dict[str, Any], sh: dict[str, list[int]], y: list[int]) -> dict[str, Any]:
    """``attrs`` with the stride a shape text states (``stride~s``) where the sizes alone
    read another (``conv_attrs`` takes it as input over output size, which a convolution
    without padding breaks: 14 -> 8 at stride 1 reads as 2), the padding to match.

    >>> a = conv_attrs([1, 4, 14, 14], [8, 4, 7, 7], [1, 8, 8, 8], 1)
    >>> a["stride_h"], strided(a, {"stride": [1]}, [1, 8, 8, 8])["stride_h"]
    (2, 1)
    """
    s = sh.get("stride", [0])[0]
    if s < 1 or s == attrs["stride_h"] or len(y) != 4:
        return attrs
    pad_h, pad_w = _pad(attrs["H"], y[2], attrs["R"], s), _pad(attrs["W"], y[3], attrs["S"], s)
    return attrs | {"stride_h": s, "stride_w": s, "pad_h": pad_h, "pad_w": pad_w}


def reduce_out(x: list[int], types: list[Any], at: int = 1, one_dim: bool = False) -> int:
    """Output size of ``sum``/``mean``/``amax`` over ``x``: the reduced axes are not recorded.

    No ``dim`` argument (its type, argument ``at``, is empty): a full reduction, one value.
    With a ``dim`` list (values not recorded): a 4-D input is taken as a spatial mean (global
    pooling, ``N*C`` out), a 2-D or 3-D one as a reduction over the leading axis (the
    bias-gradient pattern). With ``one_dim`` (:data:`ONE_DIM`: ``argmax``, ``max.dim``) the
    dim is one int, taken as the last axis (``argmax`` over a classifier's logits).

    >>> reduce_out([512, 8192], ["float", "Scalar", "", "Scalar", ""], at=2)  # a full norm
    1
    >>> reduce_out([32, 64, 7, 7], ["float", "GenericList", "Bool", ""])
    2048
    >>> reduce_out([32, 1000], ["float", "Scalar", "Scalar"], one_dim=True)  # argmax(x, 1)
    32
    >>> reduce_out([32, 1000], ["float", "Int"], one_dim=True)  # prod(x, dtype=...)
    1
    """
    kind = str(types[at]) if len(types) > at else ""
    if one_dim:
        if len(types) < 3 or kind not in ("Int", "Scalar") or len(x) < 2:
            return 1
        return prod(x[:-1])
    if kind not in ("GenericList", "IntList", "ScalarList", "Int") or len(x) < 2:
        return 1
    return x[0] * x[1] if len(x) == 4 else prod(x[1:])


def tensor_arg(dims: list[Any], types: list[Any], i: int) -> bool:
    """Whether argument ``i`` of a profiled op is a tensor (a 0-d one has empty dims).

    >>> tensor_arg([[8], []], ["float", "float"], 1), tensor_arg([[8], []], ["float", "Int"], 1)
    (True, False)
    """
    if i >= len(types) or i >= len(dims) or not isinstance(dims[i], list):
        return False
    t = str(types[i])
    return t not in _SCALAR_TYPES and t.lower() in DTYPE_NAMES


def conv_backward(
    name: str, ts: list[list[int]], kernel_names: str, dtype: str
) -> dict[str, Any] | None:
    """``fused`` attrs of a whole convolution backward: a data and a filter part.

    The operand order is :func:`~opsched.importers.trace.aten_names.conv_backward_operands`.
    Which halves ran is read from the kernel names (cuDNN's ``dgrad`` / ``wgrad``); both when
    they do not say (the first layer of a network computes no input gradient).
    """
    if len(ts) < 3 or any(len(t) != 4 for t in ts[:3]):
        return None
    dy, x = conv_backward_operands(name, ts)
    if dy[2] <= 0:
        return None
    base = conv_attrs(x, ts[2], dy, max(1, round(x[2] / dy[2]))) | {"dtype": dtype}
    low = kernel_names.lower()
    want = {p for p, mark in (("data", "dgrad"), ("filter", "wgrad")) if mark in low}
    want = want or {"data", "filter"}
    parts = [(f"conv2d_bwd_{p}", base) for p in ("data", "filter") if p in want]
    return kinds.fused_of(parts) | {"dtype": dtype}


def broadcast(a: Sequence[int], b: Sequence[int]) -> list[int] | None:
    """The broadcast of two batch shapes (numpy's rule), None where they do not broadcast.

    >>> broadcast([1, 16], [8, 16]), broadcast([16], [8, 16]), broadcast([3], [4])
    ([8, 16], [8, 16], None)
    """
    out: list[int] = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return out[::-1]

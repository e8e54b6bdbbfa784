"""One op's row of the curve's design matrix: the terms every family shares, and fast paths.

:func:`opsched.cost.features.feature_matrix` builds a row per op. GEMMs, elementwise ops and
convolutions, most of the ops of a real graph, have a fast path here (:data:`FAST_ROWS`):
it reads each attr once instead of going through :mod:`opsched.ir.kinds`' checked getters
three times over (FLOPs, bytes, shape terms), and gives the same numbers bit for bit (the
same Python arithmetic in the same order; ``tests/cost/test_rows.py`` compares the two on
random ops). An op the fast path is not sure of (stated counts it cannot read, a float or
negative size, an unknown dtype, a window that does not fit) gets None and goes the general
way, which checks it and names what is wrong.

Examples
--------
>>> from opsched.cost.specs import load_specs
>>> row = FAST_ROWS["matmul"]("matmul", {"M": 64, "N": 64, "K": 64}, load_specs()["T4"], {})
>>> len(row), row[0]
(14, 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from opsched.cost.specs import GpuSpec
from opsched.ir import kinds

__all__ = ["FAST_ROWS", "MIN_ELEMENTWISE_NUMEL", "TRANSCENDENTAL", "head_terms", "implicit_gemm",
           "ln", "tiles"]  # fmt: skip

#: Elementwise functions priced as transcendental (a flag among the elementwise terms).
TRANSCENDENTAL = frozenset({"gelu", "tanh", "pow", "exp", "log", "log2", "sigmoid", "silu",
                            "silu_mul", "rope", "sqrt", "rsqrt", "div", "erf",
                            "tanh_backward", "sigmoid_backward", "gelu_backward"})  # fmt: skip
_KNOTS = tuple(math.log(k) for k in (0.3, 3.0, 30.0, 300.0))
#: Elementwise ops smaller than this are priced as this size: one thread block does all the
#: work there (:func:`opsched.cost.features.feature_matrix`).
MIN_ELEMENTWISE_NUMEL = 256
_EPS_US = 1e-4


def implicit_gemm(family: str, a: Mapping[str, Any], pq: int) -> list[float]:
    """Log M, N, K of the GEMM a convolution direction lowers to (implicit GEMM).

    Forward: ``(N*P*Q) x K`` over ``C/groups*R*S``; backward data is a convolution with K and
    C swapped: ``(N*H*W) x C`` over ``K/groups*R*S``; backward filter: ``K x (C/groups*R*S)``
    over ``N*P*Q``.
    """
    g = lambda k, d=1: int(a.get(k, d))  # noqa: E731
    groups = max(g("groups"), 1)
    crs = g("C") // groups * g("R") * g("S")
    if family == "conv2d_bwd_data":
        dims = (g("N") * g("H") * g("W"), g("C"), g("K") // groups * g("R") * g("S"))
    elif family == "conv2d_bwd_filter":
        dims = (g("K"), crs, g("N") * pq)
    else:
        dims = (g("N") * pq, g("K"), crs)
    return [ln(v) for v in dims]


def tiles(rows: int, cols: int, sm: int) -> tuple[float, float]:
    """Wave quantisation and fill of a ``rows x cols`` output cut in 128 x 128 tiles (an
    empty output counts as one tile: a zero-size op is priced as the smallest one)."""
    count = max(1, math.ceil(rows / 128) * math.ceil(cols / 128))
    w = count / sm
    return math.log(math.ceil(w) / w), math.log(min(w, 1.0))


def ln(x: float) -> float:
    """``log(x)`` of a size, 0 for sizes under 1."""
    return math.log(max(float(x), 1.0))


def _plain_ints(a: Mapping[str, Any], keys: tuple[str, ...]) -> bool:
    """Whether ``a`` holds each of ``keys`` as a plain non-negative int (the fast rows' case;
    anything else takes the general path, which checks the attrs and names what is wrong)."""
    for k in keys:
        v = a.get(k)
        if type(v) is not int or v < 0:
            return False
    return True


def _optional_int(a: Mapping[str, Any], key: str) -> bool:
    """Whether ``key`` is absent from ``a`` or a plain non-negative int."""
    return key not in a or _plain_ints(a, (key,))


def head_terms(tf: float, tm: float) -> list[float]:
    """Intercept, log roofline, its hinges and the intensity terms of one row."""
    lf, lm = math.log(tf + _EPS_US), math.log(tm + _EPS_US)
    u = max(lf, lm)
    v = min(max(lf - lm, -8.0), 8.0)
    return [1.0, u, *(max(0.0, u - k) for k in _KNOTS), v, max(v, 0.0)]


def _peak(spec: GpuSpec, dtype: str, peaks: dict[str, float]) -> float:
    """The peak in FLOP per microsecond, cached per dtype in ``peaks``."""
    if dtype not in peaks:
        peaks[dtype] = spec.peak_tflops(dtype) * 1e6
    return peaks[dtype]


def _fast_matmul(
    family: str, a: Mapping[str, Any], spec: GpuSpec, peaks: dict[str, float]
) -> list[float] | None:
    """A GEMM's row, the same numbers as the general path with fewer lookups, or None."""
    dtype = a.get("dtype", "float32")
    if dtype not in kinds.DTYPE_BYTES or not _plain_ints(a, ("M", "N", "K")):
        return None
    if not (_optional_int(a, "B") and _optional_int(a, "flops") and _optional_int(a, "bytes")):
        return None
    b, m, n, k = a.get("B", 1), a["M"], a["N"], a["K"]
    fl, by = a.get("flops"), a.get("bytes")  # stated counts win, as in opsched.ir.kinds
    if fl is None:
        fl = 2 * b * m * n * k
    if by is None:
        by = kinds.DTYPE_BYTES[dtype] * (b * m * k + b * k * n + b * m * n)
    tf = fl / _peak(spec, dtype, peaks)
    tm = by / (spec.mem_bw_gbps * 1e3)
    sm = spec.sm_count
    q, fill = tiles(b * m, n, sm) if family == "matmul" else tiles(m, n, max(1, sm // b))
    return [*head_terms(tf, tm), ln(m), ln(n), ln(k), ln(b), q, fill]


def _fast_elementwise(
    family: str, a: Mapping[str, Any], spec: GpuSpec, peaks: dict[str, float]
) -> list[float] | None:
    """An elementwise op's row (as the general path, small ops at 256 elements), or None."""
    dtype = a.get("dtype", "float32")
    if "flops" in a or "bytes" in a or dtype not in kinds.DTYPE_BYTES:
        return None  # stated counts: the general path (the size floor leaves them alone)
    if not (_plain_ints(a, ("numel",)) and _optional_int(a, "arity")):
        return None
    numel = max(a["numel"], MIN_ELEMENTWISE_NUMEL)
    arity = max(1, a.get("arity", 1))
    tf = numel * arity / _peak(spec, dtype, peaks)
    tm = kinds.DTYPE_BYTES[dtype] * numel * (arity + 1) / (spec.mem_bw_gbps * 1e3)
    sm = spec.sm_count
    return [*head_terms(tf, tm), ln(numel), float(str(a.get("fn", "")) in TRANSCENDENTAL),
            math.log(min(numel / (sm * 2048), 1.0))]  # fmt: skip


_CONV_KEYS = ("N", "C", "H", "W", "K", "R", "S")
_CONV_OPTIONAL = (("stride_h", 1), ("stride_w", 1), ("pad_h", 0), ("pad_w", 0),
                  ("dilation_h", 1), ("dilation_w", 1), ("groups", 1))  # fmt: skip


def _fast_conv(
    family: str, a: Mapping[str, Any], spec: GpuSpec, peaks: dict[str, float]
) -> list[float] | None:
    """A convolution's row (any direction), the general path's numbers, or None."""
    dtype = a.get("dtype", "float32")
    if dtype not in kinds.DTYPE_BYTES or not _plain_ints(a, _CONV_KEYS):
        return None
    opt = []
    for k, d in _CONV_OPTIONAL:
        v = a.get(k, d)
        if type(v) is not int or v < 0:
            return None
        opt.append(v)
    sh, sw, ph, pw, dh, dw, groups = opt
    n, c, h, w, k, r, s = (a[key] for key in _CONV_KEYS)
    if sh == 0 or sw == 0:
        return None
    p = (h + 2 * ph - dh * (r - 1) - 1) // sh + 1
    q = (w + 2 * pw - dw * (s - 1) - 1) // sw + 1
    if p <= 0 or q <= 0:
        return None
    groups = max(1, groups)
    if not (_optional_int(a, "flops") and _optional_int(a, "bytes")):
        return None
    stated = [a.get("flops"), a.get("bytes")]  # None: absent (a None value failed above)
    fl = 2 * n * k * (c // groups) * r * s * p * q if stated[0] is None else stated[0]
    e = kinds.DTYPE_BYTES[dtype]
    by = (e * (n * c * h * w + k * (c // groups) * r * s + n * k * p * q)
          if stated[1] is None else stated[1])  # fmt: skip
    tf = fl / _peak(spec, dtype, peaks)
    tm = by / (spec.mem_bw_gbps * 1e3)
    st = max(sh, sw)
    qq, fill = tiles(n * p * q, k, spec.sm_count)
    return [*head_terms(tf, tm), ln(n), ln(c), ln(k), ln(p * q), ln(r * s),
            float(r == s == 1), float(r == s == 3 and st == 1), float(st > 1),
            ln(groups), float(1 < groups == c), ln(c // groups), qq, fill,
            *implicit_gemm(family, a, p * q),
            float(c % 8 == 0), float(k % 8 == 0)]  # fmt: skip


#: Kind (``matmul`` covers ``bmm``) -> fast row builder ``(family, attrs, spec, peaks)``,
#: ``peaks`` a per-call cache of the peak FLOP rate per dtype.
FAST_ROWS = {"matmul": _fast_matmul, "elementwise": _fast_elementwise, "conv2d": _fast_conv,
             "conv2d_bwd_data": _fast_conv, "conv2d_bwd_filter": _fast_conv}  # fmt: skip

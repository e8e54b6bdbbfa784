"""Op families, the roofline time, and the features the calibrated curves are fitted on.

Every op of a kind in :mod:`opsched.ir.kinds` belongs to one *family* (:func:`family_of`):
``matmul`` (``B == 1``, linear layers), ``bmm`` (``B > 1``), ``conv2d``,
``conv2d_bwd_data``, ``conv2d_bwd_filter``, ``elementwise_unary``, ``elementwise_binary``,
``softmax``, ``layernorm``, ``rmsnorm``, ``batchnorm``, ``pool``, ``reduce``, ``embedding``,
``opaque``, ``attention`` (a fused attention kernel); ``copy`` belongs to
``elementwise_unary`` (a copy kernel reads and writes each element once, as the profiler's
``aten::copy_`` rows the unary curve is fitted on); ``fused`` is priced from its parts or its
roofline, and ``attention`` from its parts where no fused kernel is priced
(:class:`opsched.cost.profile.Profile`); ``view`` / ``input`` take no time.

The roofline time is ``max(flops / peak, bytes / bandwidth)`` with the peak picked by dtype
(:meth:`GpuSpec.peak_tflops`). The features (:func:`feature_matrix`) are expressed in units of
the GPU (roofline microseconds, tiles per SM) so a curve fitted on one GPU carries over to
another through its specs.

Examples
--------
>>> from opsched.cost.specs import load_specs
>>> a100 = load_specs()["A100-SXM4-80GB"]
>>> attrs = {"M": 4096, "N": 4096, "K": 4096, "dtype": "float16"}
>>> round(roofline_us("matmul", attrs, a100), 1)   # 2*4096^3 / 312 TFLOPS
440.5
>>> family_of("matmul", {"B": 8, "M": 64, "N": 64, "K": 64})
'bmm'
>>> family_of("copy", {"numel": 1024})
'elementwise_unary'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from opsched.cost.mathmode import FP16_FP32_MATH
from opsched.cost.specs import GpuSpec
from opsched.ir import kinds

__all__ = [
    "FAMILIES",
    "HALF_FP32_MATH",
    "SAMPLE_ATTRS",
    "WRITE_ONLY_FNS",
    "ZERO_KINDS",
    "as_priced",
    "dtype_class",
    "family_of",
    "feature_matrix",
    "roofline_us",
    "tree_class",
    "write_only",
]

#: Tree class of half-precision GEMMs / convolutions run with FP32 arithmetic
#: (:func:`tree_class`). Their curve is the GPU's own half curve where it has one (fitted on
#: exactly such timings: before Volta every float16 GEMM or convolution is one), else its
#: fp32 curve, the same SIMT arithmetic, never the tensor-core half curve of other GPUs.
HALF_FP32_MATH = "half_fp32math"

#: Every family with a calibrated curve.
FAMILIES: tuple[str, ...] = (
    "matmul", "bmm", "conv2d", "conv2d_bwd_data", "conv2d_bwd_filter", "elementwise_unary",
    "elementwise_binary", "softmax", "layernorm", "rmsnorm", "batchnorm", "pool", "reduce",
    "embedding", "opaque", "attention",
)  # fmt: skip

#: Kinds that launch no kernel: duration 0.
ZERO_KINDS = frozenset({"view", "input"})

_TRANSCENDENTAL = frozenset({"gelu", "tanh", "pow", "exp", "log", "log2", "sigmoid", "silu",
                             "silu_mul", "rope", "sqrt", "rsqrt", "div", "erf",
                             "tanh_backward", "sigmoid_backward", "gelu_backward", "sin",
                             "cos", "logit", "softplus", "mish"})  # fmt: skip
_KNOTS = tuple(math.log(k) for k in (0.3, 3.0, 30.0, 300.0))
#: Elementwise ops smaller than this are priced as this size (see ``_extra``).
MIN_ELEMENTWISE_NUMEL = 256
#: Families whose features count at least one row per SM (:func:`feature_matrix`): softmax.
#: Layer and RMS norms keep their SM-fill term instead: clamped too, their curves transferred
#: worse to a GPU left out (H100 SXM5 layernorm 18.1 -> 28.0 %, rmsnorm 9.0 -> 17.1 %), and
#: their dips below one wave were mild (the worst, 2.5x, was the streaming cap's threshold).
ROW_FAMILIES = frozenset({"softmax"})
_EPS_US = 1e-4


#: Elementwise ``fn`` names (trailing ``_`` dropped) that write their output without reading a
#: tensor: fills and factory ops. :class:`~opsched.cost.profile.Profile` prices such an op of
#: ``n`` elements as a plain unary kernel (one read, one write) over ``n / 2``, the same
#: traffic (:func:`write_only`).
WRITE_ONLY_FNS = frozenset({"fill", "zero", "zeros", "ones", "full", "zeros_like", "ones_like",
                            "full_like", "new_zeros", "new_ones", "new_full"})  # fmt: skip


def write_only(attrs: Mapping[str, Any]) -> bool:
    """Whether an ``elementwise`` op only writes (its ``fn`` is in :data:`WRITE_ONLY_FNS`).

    >>> write_only({"numel": 8, "fn": "fill_"}), write_only({"numel": 8, "fn": "relu"})
    (True, False)
    """
    return str(attrs.get("fn", "")).rstrip("_") in WRITE_ONLY_FNS


def as_priced(kind: str, attrs: Mapping[str, Any]) -> Mapping[str, Any]:
    """The attrs an op is priced (and, for a timing row, fitted) with: a write-only
    elementwise op of ``n`` elements as a unary kernel over ``n / 2`` (the same traffic,
    :func:`write_only`); every other op as it is (the same object).

    >>> as_priced("elementwise", {"numel": 9, "fn": "fill_", "arity": 1})
    {'numel': 5, 'fn': '', 'arity': 1}
    >>> as_priced("elementwise", {"numel": 9, "fn": "relu"})
    {'numel': 9, 'fn': 'relu'}
    """
    if kind != "elementwise" or not write_only(attrs):
        return attrs
    return {**attrs, "numel": max(1, (int(attrs["numel"]) + 1) // 2), "arity": 1, "fn": ""}


def dtype_class(dtype: str) -> str:
    """The calibration class of a dtype: ``fp32``, ``half`` or ``int8``.

    Examples
    --------
    ``tf32`` is ``fp32``. ``float16_fp32math`` (half-precision tensors, FP32 arithmetic, on a
    GPU without half tensor cores) is ``half``: a GPU that timed such ops has a half curve of
    its own; one that did not prices them with its fp32 curve (:data:`HALF_FP32_MATH`).

    >>> dtype_class("bfloat16"), dtype_class("tf32"), dtype_class("float16_fp32math")
    ('half', 'fp32', 'half')
    """
    if dtype in ("float16", "bfloat16", FP16_FP32_MATH):
        return "half"
    if dtype in ("int8", "float8"):
        return "int8"
    return "fp32"


def tree_class(dtype: str) -> str:
    """The dtype class the residual trees see: :func:`dtype_class`, except that half-precision
    tensors with FP32 arithmetic (``float16_fp32math``, :mod:`opsched.cost.mathmode`) are a
    class of their own there: cuDNN's pseudo-half algorithms are neither its tensor-core nor
    its float32 ones (on the P100, DeepBench's pseudo-half backward-data convolutions take
    from 0.7x to 3x the float32 time of the same shape).

    >>> tree_class("float16_fp32math"), tree_class("float16"), tree_class("tf32")
    ('half_fp32math', 'half', 'fp32')
    """
    return HALF_FP32_MATH if dtype == FP16_FP32_MATH else dtype_class(dtype)


def family_of(kind: str, attrs: Mapping[str, Any]) -> str:
    """The calibration family of an op (``attention``, ``view``, ``input`` are their own)."""
    if kind == "matmul":
        return "bmm" if int(attrs.get("B", 1)) > 1 else "matmul"
    if kind == "elementwise":
        return "elementwise_binary" if int(attrs.get("arity", 1)) >= 2 else "elementwise_unary"
    if kind == "copy":
        return "elementwise_unary"
    return kind


def roofline_us(kind: str, attrs: Mapping[str, Any], spec: GpuSpec) -> float:
    """Roofline time in microseconds: ``max(flops / peak(dtype), bytes / bandwidth)``."""
    dtype = str(attrs.get("dtype", "float32"))
    tf = kinds.flops(kind, attrs) / (spec.peak_tflops(dtype) * 1e6)
    tm = kinds.bytes_min(kind, attrs) / (spec.mem_bw_gbps * 1e3)
    return max(tf, tm)


def _ln(x: float) -> float:
    return math.log(max(float(x), 1.0))


def _tiles(rows: int, cols: int, sm: int) -> tuple[float, float]:
    """Wave quantisation and fill of a ``rows x cols`` output cut in 128 x 128 tiles (an
    empty output counts as one tile: a zero-size op is priced as the smallest one)."""
    count = max(1, math.ceil(rows / 128) * math.ceil(cols / 128))
    w = count / sm
    return math.log(math.ceil(w) / w), math.log(min(w, 1.0))


def _implicit_gemm(family: str, a: Mapping[str, Any], pq: int) -> list[float]:
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
    return [_ln(v) for v in dims]


def _batchnorm_channels(a: Mapping[str, Any], sm: int) -> tuple[float, float]:
    """Log elements per channel and log SM fill of a batch norm's per-channel kernels.

    cuDNN's training batch norms (``bn_fw_tr_1C11_*``, ``bn_bw_1C11_*``, NCHW) run one thread
    block per channel, so ``channels`` decides two things the element count does not: how
    many SMs the kernel keeps busy (``min(channels / SMs, 1)``; 64 channels leave half of an
    H200's 132 SMs idle), and how many elements each block streams (``numel / channels``: a
    channel that fits in one block's registers is read once, a larger one twice). Only the
    training form (``training`` set, or ``fn = "backward"``) computes per-channel statistics;
    an inference batch norm is elementwise (``y = x * scale[c] + shift[c]``) and, like one
    without a channel count (``channels`` absent or 0), is taken to fill the GPU, four blocks
    per SM.

    >>> bn = {"numel": 32 * 64 * 56 * 56, "channels": 64, "training": 1}  # 100,352 per channel
    >>> [round(v, 2) for v in _batchnorm_channels(bn, 132)]  # on an H200
    [11.52, -0.72]
    >>> [round(v, 2) for v in _batchnorm_channels({"numel": 1 << 20}, 80)]
    [8.09, 0.0]
    """
    numel = max(int(a.get("numel", 1)), 1)
    channels = kinds.batchnorm_blocks(a) or 4 * sm
    return math.log(max(numel / channels, 1.0)), math.log(min(channels / sm, 1.0))


def _extra(family: str, a: Mapping[str, Any], sm: int) -> list[float]:
    g = lambda k, d=1: int(a.get(k, d))  # noqa: E731
    if family in ("matmul", "bmm"):
        b, m, n, k = g("B"), g("M"), g("N"), g("K")
        q, fill = _tiles(b * m, n, sm) if family == "matmul" else _tiles(m, n, max(1, sm // b))
        return [_ln(m), _ln(n), _ln(k), _ln(b), q, fill]
    if family.startswith("conv2d"):
        p, qq = kinds.conv_out_hw(a, family)
        r, s = g("R"), g("S")
        st = max(g("stride_h"), g("stride_w"))
        q, fill = _tiles(g("N") * p * qq, g("K"), sm)
        groups, c = max(g("groups"), 1), g("C")
        return [_ln(g("N")), _ln(c), _ln(g("K")), _ln(p * qq), _ln(r * s),
                float(r == s == 1), float(r == s == 3 and st == 1), float(st > 1),
                _ln(groups), float(1 < groups == c), _ln(c // groups), q, fill,
                *_implicit_gemm(family, a, p * qq),
                float(c % 8 == 0), float(g("K") % 8 == 0)]  # fmt: skip
    if family.startswith("elementwise"):
        numel = g("numel")  # at least MIN_ELEMENTWISE_NUMEL: feature_matrix
        fn = str(a.get("fn", ""))
        return [_ln(numel), float(fn in _TRANSCENDENTAL),
                math.log(min(numel / (sm * 2048), 1.0))]  # fmt: skip
    backward = float(a.get("fn") == "backward")
    if family in ("softmax", "layernorm", "rmsnorm"):
        rows, cols = g("rows"), g("cols")
        # a softmax's rows are at least sm (feature_matrix), so its fill term is 0
        return [_ln(rows), _ln(cols), math.log(min(max(rows, 1) / sm, 1.0)), backward]
    if family == "batchnorm":
        per_channel, fill = _batchnorm_channels(a, sm)
        return [_ln(g("numel")), backward, per_channel, fill, per_channel * backward]
    if family == "pool":
        return [_ln(kinds.output_numel("pool", a)), _ln(g("R") * g("S"))]
    if family == "attention":
        # a flash kernel runs one thread block per (batch x head, 128 queries)
        b, sq = g("B"), g("Sq")
        q, fill = _tiles(sq, 128 * b, sm)
        return [_ln(b), _ln(sq), _ln(g("Skv")), _ln(g("D")), float(bool(a.get("causal"))),
                q, fill]  # fmt: skip
    if family == "reduce":
        integer = float(str(a.get("dtype", "")).startswith("int"))
        return [_ln(g("numel")), _ln(g("out_numel")), integer]
    if family == "opaque":
        return _opaque_terms(a)
    return [_ln(kinds.output_numel(family, a))]


def _opaque_terms(a: Mapping[str, Any]) -> list[float]:
    """Shape terms of an ``opaque`` op (a profiled op no shape rule reads): log elements, an
    *unsized* flag (neither FLOPs nor bytes recorded: a ``cat`` whose tensor list the
    profiler did not record, a collective), log kernels launched (``n_kernels``, at least 1)
    twice, once for an unsized op and once for a sized one, and a *collective* flag
    (``comm``: NCCL, whose time waits on the other ranks).

    The two kernel-count slopes: an unsized op's kernels are all that tells its work (a
    compiled graph of 429 Triton kernels took 28 ms), a sized op's bytes tell it already. One
    slope for both, fitted on the unsized graphs, had priced a sized 315-kernel compiled graph
    over 506 MB at 359 ms, measured 15.9 ms (docs/cost-model.md, thirty-eighth round).

    >>> _opaque_terms({"flops": 0, "bytes": 0, "numel": 1, "n_kernels": 20, "comm": 0})
    [0.0, 1.0, 2.995732273553991, 0.0, 0.0]
    """
    unsized = float(int(a.get("bytes", 0)) <= 0 and int(a.get("flops", 0)) <= 0)
    kernels = _ln(int(a.get("n_kernels", 1)))
    return [_ln(int(a.get("numel", 1))), unsized, kernels * unsized, kernels * (1.0 - unsized),
            float(bool(a.get("comm", 0)))]  # fmt: skip


def feature_matrix(
    family: str, attrs_list: Sequence[Mapping[str, Any]], spec: GpuSpec
) -> np.ndarray:
    """The design matrix of ``family`` ops on ``spec`` (one row per op).

    Columns: intercept, ``u = ln(roofline us)``, four hinges of ``u`` (at 0.3, 3, 30 and
    300 us), the arithmetic-intensity term ``v = ln(t_flops / t_bytes)`` and ``max(v, 0)``, then
    the family's shape terms (log dims, 1x1 / 3x3-stride-1 (Winograd) / depthwise flags and
    channels per group for convolutions, the log dims of the implicit GEMM each convolution
    direction lowers to and tensor-core alignment of C and K to 8, tile wave quantisation and
    SM fill, a backward flag
    for norms and softmax (``fn == "backward"``), elements per channel and SM fill for batch
    norms (:func:`_batchnorm_channels`), window size for pooling, output size and an
    integer-input flag for reductions, log dims, a causal flag and the wave quantisation of
    128-query blocks for fused attention, and for the ``opaque`` catch-all an unsized flag,
    log kernels launched (a slope each for unsized and sized ops) and a collective flag,
    :func:`_opaque_terms`).

    Every feature of an elementwise op counts at least :data:`MIN_ELEMENTWISE_NUMEL` elements,
    and every feature of a softmax (:data:`ROW_FAMILIES`) at least one row per SM: below that
    the kernel's time is one thread block's (one wave's), so the curve is flat there instead
    of extrapolating.

    Examples
    --------
    >>> from opsched.cost.specs import load_specs
    >>> x = feature_matrix("softmax", [{"rows": 64, "cols": 1024}], load_specs()["T4"])
    >>> x.shape
    (1, 12)
    """
    rows = []
    kind = {"bmm": "matmul", "elementwise_unary": "elementwise",
            "elementwise_binary": "elementwise"}.get(family, family)  # fmt: skip
    peaks: dict[str, float] = {}  # FLOP per microsecond, per dtype
    bandwidth = spec.mem_bw_gbps * 1e3
    for a in attrs_list:
        if kind == "elementwise" and int(a.get("numel", 0)) < MIN_ELEMENTWISE_NUMEL:
            # below this size one thread block does all the work, so every feature (the
            # roofline terms too) stops there: a curve cannot climb again towards a
            # one-element op by extrapolating below its smallest rows
            a = {**a, "numel": MIN_ELEMENTWISE_NUMEL}
        elif family in ROW_FAMILIES and int(a.get("rows", 1)) < spec.sm_count:
            # below one wave every row has a block (or warp) of its own and the op takes one
            # wave's time: the features stop at one row per SM, so a curve cannot price one
            # row above a hundred (the pooled softmax curve dipped 5x from 1 to 256 rows)
            a = {**a, "rows": spec.sm_count}
        dtype = str(a.get("dtype", "float32"))
        if dtype not in peaks:
            peaks[dtype] = spec.peak_tflops(dtype) * 1e6
        lf = math.log(kinds.flops(kind, a) / peaks[dtype] + _EPS_US)
        lm = math.log(kinds.bytes_min(kind, a) / bandwidth + _EPS_US)
        u = max(lf, lm)
        v = min(max(lf - lm, -8.0), 8.0)
        rows.append([1.0, u, *(max(0.0, u - k) for k in _KNOTS), v, max(v, 0.0),
                     *_extra(family, a, spec.sm_count)])  # fmt: skip
    width = 8 + len(_extra(family, SAMPLE_ATTRS[family], 80))
    return np.asarray(rows, dtype=float).reshape(len(rows), width)


#: One valid attrs dict per family (for the width of its feature matrix).
SAMPLE_ATTRS: dict[str, Mapping[str, Any]] = {
    "matmul": {"M": 1, "N": 1, "K": 1},
    "bmm": {"B": 2, "M": 1, "N": 1, "K": 1},
    "conv2d": {"N": 1, "C": 1, "H": 1, "W": 1, "K": 1, "R": 1, "S": 1},
    "conv2d_bwd_data": {"N": 1, "C": 1, "H": 1, "W": 1, "K": 1, "R": 1, "S": 1},
    "conv2d_bwd_filter": {"N": 1, "C": 1, "H": 1, "W": 1, "K": 1, "R": 1, "S": 1},
    "elementwise_unary": {"numel": 1},
    "elementwise_binary": {"numel": 1, "arity": 2},
    "softmax": {"rows": 1, "cols": 1},
    "layernorm": {"rows": 1, "cols": 1},
    "rmsnorm": {"rows": 1, "cols": 1},
    "batchnorm": {"numel": 1},
    "pool": {"N": 1, "C": 1, "H": 1, "W": 1, "R": 1, "S": 1},
    "reduce": {"numel": 1, "out_numel": 1},
    "embedding": {"tokens": 1, "dim": 1},
    "opaque": {"flops": 0, "bytes": 0, "numel": 1},
    "attention": {"B": 1, "Sq": 1, "Skv": 1, "D": 1},
}

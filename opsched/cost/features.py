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

from opsched.cost.mathmode import CONV_KINDS, FP16_FP32_MATH
from opsched.cost.specs import GpuSpec
from opsched.ir import kinds

__all__ = [
    "ELEMENTWISE_CAP",
    "FAMILIES",
    "HALF_FP32_MATH",
    "SAMPLE_ATTRS",
    "STREAMING_ROOFLINE_US",
    "WRITE_ONLY_FNS",
    "ZERO_KINDS",
    "as_priced",
    "dtype_class",
    "elementwise_cap",
    "family_of",
    "feature_matrix",
    "roofline_bound",
    "roofline_us",
    "tree_class",
    "twin_bounds",
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
                             "tanh_backward", "sigmoid_backward", "gelu_backward"})  # fmt: skip
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


#: An elementwise kernel costs at most this many times its launch floor plus its roofline
#: (:func:`elementwise_cap`): in the kernel-timed sweeps (Vidur, our H200 kernel times)
#: 99.7-99.9 % of the rows stay within 4x, 99.2-99.5 % within 3x (the profiler's rows, with
#: their index and integer kernels, 94-97 % within 4x). The bound matters where a GPU has per-call
#: timings alone (NeuSight events: dispatch plus kernel), whose fit can put the ~25 us of
#: dispatch into a flat curve instead of the overhead, both fitting the per-call times alike:
#: the V100-PCIe and P100 priced a 256-element add at 25-50 us of kernel time.
ELEMENTWISE_CAP = 4.0


#: An elementwise kernel whose roofline time is at least this (us) streams from DRAM: its
#: traffic is then 16 MB or more on the slowest GPU of the spec table (T4, L2 4 MB) and 240 MB
#: on the H200 (L2 50 MB). Under it, a benchmark that repeats the call finds its operands in L2
#: and runs faster than the DRAM roofline (Vidur's H100 adds, to 0.79 of it).
STREAMING_ROOFLINE_US = 50.0


def roofline_bound(
    family: str, t: np.ndarray, roof: np.ndarray, l2_us: float | np.ndarray = math.inf
) -> np.ndarray:
    """Prices ``t`` of ops of one ``family`` held at or above their roofline times ``roof``
    (the dtype priced, the op as priced: :func:`as_priced`): no kernel beats the physical
    limit, however a curve extrapolates (an A100's float32 GEMM curve, fitted on 25 profiler
    rows, priced an 8192-cube GEMM at 0.44 of its FP32 roofline).

    Of the timing rows, 0.01 % of the GEMMs run under their roofline (to 0.93: boost clocks
    over the specs' peak), none of the norms, softmaxes, reductions, embeddings and
    attentions. Left out: the convolutions, whose Winograd and FFT algorithms do fewer FLOPs
    than the direct convolution the roofline counts (15 % of their rows run faster than it),
    and the elementwise kernels under :data:`STREAMING_ROOFLINE_US` (L2-resident operands),
    which are held at or above ``roof - l2_us`` instead (``l2_us``: the GPU's
    :attr:`~opsched.cost.specs.GpuSpec.l2_us`, per op or for all): what the L2 cannot hold
    comes from DRAM (none of the 36,000 timed ones under 50 us runs faster; the V100-PCIe's
    curve priced a 32 MB ReLU at 0.69 of its DRAM time). NaN (no curve) stays NaN.

    >>> roofline_bound("matmul", np.array([5.0, 20.0, np.nan]), np.array([10.0, 10.0, 1.0]))
    array([10., 20., nan])
    >>> roofline_bound("elementwise_unary", np.array([5.0, 30.0]), np.array([10.0, 60.0]))
    array([ 5., 60.])
    >>> roofline_bound("elementwise_unary", np.array([5.0, 5.0]), np.array([10.0, 20.0]), 7.0)
    array([ 5., 13.])
    >>> roofline_bound("conv2d", np.array([5.0]), np.array([10.0]))
    array([5.])
    """
    t, roof = np.asarray(t, dtype=float), np.asarray(roof, dtype=float)
    if family in CONV_KINDS:  # the convolution families are named as their kinds
        return t
    if family.startswith("elementwise"):
        return np.where(roof >= STREAMING_ROOFLINE_US, np.maximum(t, roof),
                        np.fmax(t, roof - l2_us))  # fmt: skip
    return np.maximum(t, roof)


#: Math-mode dtypes (:mod:`opsched.cost.mathmode`) -> the dtype of the tensors.
STORAGE_DTYPES = {"tf32": "float32", FP16_FP32_MATH: "float16"}

#: The most a fast convolution algorithm divides the direct convolution's multiplications by,
#: at stride 1 with a kernel larger than 1 x 1: Winograd F(4x4, 3x3) does 36 where the direct
#: form does 144 per 4 x 4 output tile (FFT convolutions, for larger kernels, save less on the
#: shapes networks use). 1 x 1 and strided convolutions are GEMMs in every algorithm cuDNN has.
FAST_CONV_SAVING = 4.0

#: The share of a convolution's bound (:func:`conv_bound_us`) a price may not go under: boost
#: clocks run above the specs' peak (GEMM rows reach 0.93 of their roofline).
CONV_BOUND_SLACK = 0.9


def conv_bound_us(
    kind: str, attrs: Mapping[str, Any], spec: GpuSpec, stored: str | None = None
) -> float:
    """The least time a convolution (``attrs`` with the dtype priced) can take on ``spec``.

    Arithmetic: its direct FLOPs at the faster peak of the dtype priced and of its tensors'
    dtype ``stored`` (default: the one the priced dtype implies; a float16 convolution on a
    P100, priced with FP32 math, may still run its half2 units at twice the FP32 rate; a
    bfloat16 one on a T4 has no such units), divided by :data:`FAST_CONV_SAVING` at stride 1 with a
    kernel larger than 1 x 1. Traffic: its operands read and written once at the DRAM
    bandwidth where that takes :data:`STREAMING_ROOFLINE_US` or more (half of it when strided:
    a 1 x 1 stride-2 kernel skips every other input row). Of the 31,300 convolution timings,
    none runs under :data:`CONV_BOUND_SLACK` of this bound; without it, the curves priced
    a 3 x 3 backward-filter pass of 1.9 TFLOP at 775 TFLOPS on a V100 in float16.

    >>> from opsched.cost.specs import load_specs
    >>> v100 = load_specs()["V100-SXM2"]
    >>> a = dict(N=32, C=256, H=28, W=28, K=256, R=3, S=3, pad_h=1, pad_w=1, dtype="float32")
    >>> round(conv_bound_us("conv2d", a, v100), 1)  # 29.6 GFLOP / 15.7 TFLOPS / 4 x 0.9
    424.1
    >>> round(conv_bound_us("conv2d", {**a, "R": 1, "S": 1, "pad_h": 0, "pad_w": 0}, v100), 1)
    188.5
    """
    dtype = str(attrs.get("dtype", "float32"))
    stored = stored or STORAGE_DTYPES.get(dtype, dtype)
    peak = max(spec.peak_tflops(dtype), spec.peak_tflops(stored))
    rs = int(attrs.get("R", 1)) * int(attrs.get("S", 1))
    stride = max(int(attrs.get("stride_h", 1)), int(attrs.get("stride_w", 1)))
    tf = kinds.flops(kind, attrs) / (peak * 1e6)
    if stride == 1 and rs > 1:
        tf /= FAST_CONV_SAVING
    tm = kinds.bytes_min(kind, attrs) / (spec.mem_bw_gbps * 1e3)
    if tm < STREAMING_ROOFLINE_US:
        tm = 0.0
    elif stride > 1:
        tm /= 2.0
    return CONV_BOUND_SLACK * max(tf, tm)


def twin_bounds(
    half: Mapping[str, Any] | None, fp32: Mapping[str, Any] | None, family: str
) -> bool:
    """Whether an op's float32 twin bounds its half-precision price: where the GPU's float32
    curve of ``family`` is fitted on its own timings and its half curve is not (pooled, a
    sibling's). A half op does its twin's arithmetic on half the bytes, but the twin's price
    is only worth more than the half one's where it rests on more: with both curves fitted,
    each on its own rows, the half one stands (Vidur's embedding lookups, timed in float16
    only, held out fell from 3.9 to 67 % under a float32 twin priced by the donor curve).
    Never for the fused attention kernel, which has no float32 form.

    >>> twin_bounds({"source": "pooled"}, {"source": "fitted"}, "elementwise_binary")
    True
    >>> twin_bounds({"source": "fitted"}, {"source": "fitted"}, "elementwise_binary")
    False
    """
    if family == "attention" or half is None or fp32 is None:
        return False
    return half.get("source") != "fitted" and fp32.get("source") == "fitted"


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


def elementwise_cap(roofline: np.ndarray, floor: float) -> np.ndarray:
    """Most an elementwise kernel may take: ``ELEMENTWISE_CAP * (floor + roofline)`` (a kernel
    time: a per-call price keeps its fitted sum of dispatch and kernel).

    >>> elementwise_cap(np.array([0.0, 10.0]), 1.5).tolist()
    [6.0, 46.0]
    """
    return ELEMENTWISE_CAP * (floor + np.asarray(roofline, dtype=float))


#: The row-wise and reducing families whose large ops :func:`streaming_cap` bounds.
STREAMING_CAPPED = frozenset({"softmax", "layernorm", "rmsnorm", "batchnorm", "pool", "reduce"})
#: A kernel of :data:`STREAMING_CAPPED` takes at most :data:`STREAMING_CAP` times its roofline
#: time, counted as at least :data:`STREAMING_CAP_FROM_US` (so at most 160 us below it). Of the
#: 14,600 timings with a roofline of 20 us or more, none takes more than 6.2 times it (that one
#: per call, with PyTorch's dispatch in it), none of those timed as kernels more than 5.1; of the
#: 17,200 kernel timings below it, none takes more than 98 us (4.9 x 20 us). Beyond their data
#: the curves grew faster than the work: an A100's float16 layernorm over 256 x 65,536 was
#: priced at 34 times its roofline, and an L4's float16 layernorm backward over 32 x 32,768 (a
#: 14 us roofline, under the cap's old 20 us threshold) at 483 us, above the same op over 64
#: rows (224 us, capped).
STREAMING_CAP = 8.0
STREAMING_CAP_FROM_US = 20.0


def streaming_cap(family: str, t: np.ndarray, roof: np.ndarray) -> np.ndarray:
    """Kernel prices ``t`` of one ``family`` held within :data:`STREAMING_CAP` times their
    rooflines ``roof``, each counted as at least :data:`STREAMING_CAP_FROM_US` (families in
    :data:`STREAMING_CAPPED`; others unchanged). A per-call price keeps its fitted dispatch.

    >>> streaming_cap("layernorm", np.array([1000.0, 100.0, 900.0]),
    ...               np.array([30.0, 10.0, 10.0])).tolist()
    [240.0, 100.0, 160.0]
    """
    t, roof = np.asarray(t, dtype=float), np.asarray(roof, dtype=float)
    if family not in STREAMING_CAPPED:
        return t
    return np.fmin(t, STREAMING_CAP * np.maximum(roof, STREAMING_CAP_FROM_US))


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
        return [_ln(g("numel")), backward]
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
    numel = kinds.output_numel(family, a) if family != "opaque" else g("numel")
    return [_ln(numel)]


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
    for norms and softmax (``fn == "backward"``), window size for pooling, output size and an
    integer-input flag for reductions, log dims, a causal flag and the wave quantisation of
    128-query blocks for fused attention).

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

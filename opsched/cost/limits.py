"""Physical limits on prices: what no kernel can beat, and what no kernel should exceed.

Every price :class:`~opsched.cost.profile.Profile` gives (and every held-out prediction of
:func:`opsched.cost.fit.predict_family`) is held within these, wherever a fitted curve
extrapolates beyond its data (docs/cost-model.md, items 11-13 of the model and the
twenty-second to twenty-fifth rounds):

- at least the op's roofline (:func:`roofline_bound`), for convolutions a bound that allows
  Winograd's saving (:func:`conv_bound_us`);
- at most a multiple of the launch floor plus the roofline for elementwise kernels
  (:func:`elementwise_cap`) and of the roofline for row-wise and reducing ones
  (:func:`streaming_cap`);
- a half-precision price bounded by its float32 twin where only the latter rests on the
  GPU's own timings (:func:`twin_bounds`).

Examples
--------
>>> roofline_bound("bmm", np.array([1.0, 9.0]), np.array([2.0, 2.0])).tolist()
[2.0, 9.0]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from opsched.cost.mathmode import CONV_KINDS, FP16_FP32_MATH
from opsched.cost.specs import GpuSpec
from opsched.ir import kinds

__all__ = [
    "CONV_BOUND_SLACK",
    "ELEMENTWISE_CAP",
    "FAST_CONV_SAVING",
    "STORAGE_DTYPES",
    "STREAMING_CAP",
    "STREAMING_CAPPED",
    "STREAMING_CAP_FROM_US",
    "STREAMING_ROOFLINE_US",
    "conv_bound_us",
    "elementwise_cap",
    "roofline_bound",
    "streaming_cap",
    "twin_bounds",
]


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

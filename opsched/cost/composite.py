"""Ops a :class:`~opsched.cost.profile.Profile` prices from other ops' prices.

- a ``fused`` op: the sum of its ``parts`` (the trace importer's convolution backward), else
  its roofline (the fusion pass's groups);
- ``attention`` where no fused kernel is priced (:func:`fused_attention`): its three
  kernels, scores (bmm), softmax and weighted sum (bmm); where one is, those parts still
  bound the fused kernel's price;
- a small GEMM's or row-wise op's paddings (:func:`opsched.cost.paddings.paddings`), whose
  least price bounds its own;
- the bounds some families' curve prices are held within (:func:`bounded`).

Each function takes the profile and prices the parts through it.

Examples
--------
>>> from opsched.cost import load_profile
>>> p = load_profile("A100-SXM4-80GB")
>>> a = {"B": 8, "Sq": 512, "Skv": 512, "D": 64, "dtype": "float16"}
>>> fused = p.predict("attention", a)            # a flash kernel on the A100
>>> fused < price_attention(p, a, "float16", "kernel")
True
>>> v100 = load_profile("V100-SXM2")            # no fused kernel priced before sm_80
>>> price_attention(v100, a, "float16", "kernel") == v100.predict("attention", a)
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from opsched.cost.curve import FREE_OVERHEAD_METHODS
from opsched.cost.features import ZERO_KINDS, roofline_us
from opsched.cost.limits import elementwise_cap, roofline_bound, streaming_cap
from opsched.cost.mathmode import CONV_KINDS
from opsched.cost.paddings import paddings
from opsched.cost.specs import GpuSpec
from opsched.ir import kinds

if TYPE_CHECKING:
    from opsched.cost.profile import Profile

__all__ = ["FUSED_ATTENTION_MIN_CC", "bounded", "fused_attention", "padded_prices",
           "price_attention", "price_attentions", "price_fused"]  # fmt: skip

#: Least compute capability at which PyTorch's fused attention runs a flash kernel
#: (FlashAttention-2 and cuDNN's fused attention need sm_80); the ``attention`` curve is fitted
#: on such kernels alone (cuDNN's ``sm90_flash_fprop`` on our H200).
FUSED_ATTENTION_MIN_CC = 80


def fused_attention(spec: GpuSpec, dtype: str) -> bool:
    """Whether an ``attention`` op of ``dtype`` is priced as one fused flash kernel on ``spec``.

    Yes in float16 / bfloat16 on compute capability 8.0 and newer, where PyTorch's
    ``scaled_dot_product_attention`` runs a flash kernel. Elsewhere (float32, which the flash
    kernels do not take, and older GPUs, where PyTorch falls back to its memory-efficient
    kernel) no fused kernel was ever timed, and the op is priced from its parts
    (:func:`price_attention`).

    >>> from opsched.cost.specs import load_specs
    >>> s = load_specs()
    >>> fused_attention(s["H100-SXM5"], "bfloat16"), fused_attention(s["V100-SXM2"], "float16")
    (True, False)
    >>> fused_attention(s["A100-SXM4-80GB"], "float32")
    False
    """
    cc = spec.compute_capability
    return dtype in ("float16", "bfloat16") and cc is not None and cc >= FUSED_ATTENTION_MIN_CC


#: Kinds a fused op's ``parts`` may have (not ``fused`` itself, nor kinds without a kernel).
_PART_KINDS = frozenset(kinds.KINDS) - {"fused"} - ZERO_KINDS


def padded_prices(
    profile: Profile,
    family: str,
    idx: Sequence[int],
    kind_list: Sequence[str],
    attrs_list: Sequence[Mapping[str, Any]],
    method: str,
    allow_tf32: bool | None,
) -> np.ndarray:
    """Per op of ``idx`` (all of ``family``), the least price of its paddings (inf where none
    applies)."""
    best = np.full(len(idx), np.inf)
    pos, kinds_, padded = [], [], []
    for j, i in enumerate(idx):
        for a in paddings(family, attrs_list[i]):
            if a is not None:
                pos.append(j)
                kinds_.append(kind_list[i])
                padded.append(a)
    if pos:
        priced = profile._predict(kinds_, padded, method, allow_tf32, pad=False)
        np.minimum.at(best, np.asarray(pos), priced)
    return best


def price_fused(
    profile: Profile, a: Mapping[str, Any], method: str, allow_tf32: bool | None
) -> float:
    """A fused op: the sum of its ``parts`` where it lists them, else its roofline.

    The trace importer lists the parts of a convolution backward (data and filter kernels),
    each priced by its own family. The fusion pass and the HLO importer give only the group's
    ``flops`` and ``bytes``: no timing row is such a group, so it is priced at the roofline of
    those counts (and the kernel floor), as the fusion pass documents.
    """
    parts = a.get("parts")
    extra = 0.0
    if method in FREE_OVERHEAD_METHODS:  # one framework call, as for an elementwise op
        c = profile.curve("elementwise_unary", str(a.get("dtype", "float32")), method)
        extra = c["overheads"].get(method, 0.0) if c else 0.0
    if not isinstance(parts, list | tuple):
        parts = ()
    if parts and all(isinstance(p, Mapping) and p.get("kind") in _PART_KINDS for p in parts):
        dt = a.get("dtype", "float32")
        ks = [str(p["kind"]) for p in parts]
        ats = [{"dtype": dt} | {k: v for k, v in p.items() if k != "kind"} for p in parts]
        return float(profile.predict_many(ks, ats, "kernel", allow_tf32).sum()) + extra
    return roofline_us("fused", a, profile.spec) + extra


def price_attention(profile: Profile, a: Mapping[str, Any], mm_dtype: str, method: str) -> float:
    """Attention priced from its parts: scores (bmm), softmax, weighted sum (bmm).

    ``mm_dtype`` is the dtype the two GEMMs run at (``tf32`` under TF32 math mode). The parts
    are the full ``Sq x Skv`` scores also for a causal op: an unfused causal attention computes
    them all and masks half. One op of :func:`price_attentions`.
    """
    return float(price_attentions(profile, [a], [mm_dtype], method)[0])


def price_attentions(
    profile: Profile, attrs: Sequence[Mapping[str, Any]], mm_dtypes: Sequence[str], method: str
) -> np.ndarray:
    """:func:`price_attention` of many ops, their parts priced in one call."""
    kinds_: list[str] = []
    parts: list[dict[str, Any]] = []
    extra = np.zeros(len(attrs))
    for i, (a, mm) in enumerate(zip(attrs, mm_dtypes, strict=True)):
        b, sq, skv, d = (int(a[k]) for k in ("B", "Sq", "Skv", "D"))
        dt = a.get("dtype", "float32")
        kinds_ += ["matmul", "softmax", "matmul"]
        parts += [{"B": b, "M": sq, "N": skv, "K": d, "dtype": mm},
                  {"rows": b * sq, "cols": skv, "dtype": dt},
                  {"B": b, "M": sq, "N": d, "K": skv, "dtype": mm}]  # fmt: skip
        if method in FREE_OVERHEAD_METHODS:  # one framework call
            c = profile.curve("softmax", str(dt), method)
            extra[i] = c["overheads"].get(method, 0.0) if c else 0.0
    if not parts:
        return extra
    times = profile.predict_many(kinds_, parts, "kernel", allow_tf32=False)
    return times.reshape(len(attrs), 3).sum(axis=1) + extra


def bounded(
    profile: Profile,
    family: str,
    t: np.ndarray,
    kind_list: Sequence[str],
    attrs: Sequence[Mapping[str, Any]],
    given: Sequence[Mapping[str, Any]],
    method: str,
) -> np.ndarray:
    """Curve prices ``t`` of ops of one ``family`` (``attrs`` with the dtype priced, ``given``
    as the caller gave them) held within what is known of them:

    - an elementwise kernel time at most :func:`~opsched.cost.limits.elementwise_cap` (a
      per-call price keeps its fitted sum of dispatch and kernel, which is right where the
      split is not: docs/cost-model.md, item 11);
    - at least the op's roofline (:func:`~opsched.cost.limits.roofline_bound`: every family
      but the convolutions, elementwise kernels where they stream from DRAM), however far
      from its data a curve extrapolates (the catch-all ``opaque`` curve, fitted on profiler
      calls of every sort; a fused attention kernel decoding one query over a long cache);
    - a fused attention kernel at most its unfused parts: its curve rests on one GPU's 216
      timings (Sq = Skv of 128-2048, compute-bound).
    """
    if family in CONV_KINDS:  # neither bound applies (roofline_bound): no roofline to price
        return t
    spec = profile.spec
    roof = np.array([roofline_us(k, a, spec) for k, a in zip(kind_list, attrs, strict=True)])
    if method not in FREE_OVERHEAD_METHODS:  # kernel times: a per-call price keeps its sum
        if family.startswith("elementwise"):
            t = np.minimum(t, elementwise_cap(roof, profile.kernel_floor))
        t = streaming_cap(family, t, roof)
    t = roofline_bound(family, t, roof, spec.l2_us)
    if family == "attention":
        t = np.minimum(t, price_attentions(profile, given, [str(a["dtype"]) for a in attrs],
                                           method))  # fmt: skip
    return t

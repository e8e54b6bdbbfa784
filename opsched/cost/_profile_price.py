"""Pricing steps of :meth:`opsched.cost.profile.Profile.predict_many`: :func:`price_family`
prices a group of ops of one family and dtype from the family's curve, corrected by its
residual trees where they apply (:mod:`opsched.cost.boost`), and holds that price within
what else is known of the ops (the family's own bounds, a float32 twin, a small op's
paddings, a convolution's physical bound, the family's floor); :func:`_empty` tells the
ops whose output has no element, which launch no kernel and are priced as a call's
dispatch instead. The profile sorts its ops into such groups and prices the rest
(attention from its parts, fused ops, families with no curve) itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from opsched.cost.boost import corrects, tree_features, tree_method
from opsched.cost.composite import bounded, padded_prices
from opsched.cost.curve import FREE_OVERHEAD_METHODS, predict_curve
from opsched.cost.features import dtype_class, feature_matrix, tree_class
from opsched.cost.limits import conv_bound_us, twin_bounds
from opsched.cost.mathmode import CONV_KINDS
from opsched.cost.paddings import PADDED_FAMILIES
from opsched.errors import GraphError
from opsched.ir import kinds

if TYPE_CHECKING:
    from opsched.cost.profile import Profile

__all__ = ["price_family"]


def price_family(
    profile: Profile,
    fam: str,
    dtype: str,
    curve: Mapping[str, Any],
    idx: list[int],
    attrs: list[dict[str, Any]],
    kind_list: Sequence[str],
    attrs_list: Sequence[Mapping[str, Any]],
    method: str,
    allow_tf32: bool | None,
    pad: bool,
) -> np.ndarray:
    """Prices (us) of the ops ``idx`` of ``kind_list`` / ``attrs_list``, all of family
    ``fam`` priced in ``dtype`` on ``curve`` (``profile.curve(fam, dtype, method)``);
    ``attrs`` are theirs with that dtype. ``method``, ``allow_tf32`` and ``pad`` as in
    :meth:`~opsched.cost.profile.Profile._predict`."""
    ovh = curve["overheads"].get(method, 0.0) if method in FREE_OVERHEAD_METHODS else 0.0
    x = feature_matrix(fam, attrs, profile.spec)
    t = predict_curve(x, curve["beta"], ovh)
    ens = profile.trees.get(fam)
    read_as = tree_method(fam, method, bool(curve.get("profiler")))
    if ens is not None and read_as is not None and corrects(fam, curve.get("source")):
        n = len(idx)
        feats = tree_features(x, np.full(n, profile.gpu), np.full(n, tree_class(dtype)),
                              np.full(n, read_as), {profile.gpu: profile.spec})  # fmt: skip
        t = t * np.exp(np.clip(ens.predict(feats), -3.0, 3.0))
    kinds_of = [kind_list[i] for i in idx]
    t = bounded(profile, fam, t, kinds_of, attrs, [attrs_list[i] for i in idx], method)
    # a twin priced in float32 (FP32 math) bounds the price: TF32 math mode permits
    # tensor-core kernels, and cuBLAS / cuDNN pick one only where it is faster (the
    # fp32 curve is not monotone in the peak far from its data: no TF32 convolution
    # timings exist); a half-precision op does its float32 twin's arithmetic on half
    # the bytes (PyTorch's kernels compute in float32 registers, the libraries can
    # always multiply half tensors in FP32), which bounds it where the twin's price
    # rests on this GPU's own timings and the half one does not (the V100-SXM2, its
    # half curve the pooled one, priced a 2^24-element float16 add at 3.4 times its
    # float32 one)
    if dtype == "tf32" or (
        dtype_class(dtype) == "half"
        and twin_bounds(curve, profile.curve(fam, "float32", method), fam)
    ):
        fp32 = [{**attrs_list[i], "dtype": "float32"} for i in idx]
        t = np.minimum(t, profile._predict(kinds_of, fp32, method, False, pad))
    if pad and fam in PADDED_FAMILIES:  # a small op costs at most its paddings
        t = np.minimum(t, padded_prices(profile, fam, idx, kind_list, attrs_list, method,
                                        allow_tf32))  # fmt: skip
    if fam in CONV_KINDS:  # last, since the twin and paddings bound it from above
        stored = [str(attrs_list[i].get("dtype", "float32")) for i in idx]
        t = np.maximum(t, [conv_bound_us(k, a, profile.spec, d) for k, a, d
                           in zip(kinds_of, attrs, stored, strict=True)])  # fmt: skip
    return np.maximum(t, profile.family_floors.get(fam, 0.0))


def _empty(kind: str, attrs: Mapping[str, Any]) -> bool:
    """Whether the op's output has no element (a batch of 0, an empty sequence): PyTorch
    returns such a result without launching a kernel, so it is priced at the kernel floor
    (per call, the dispatch of a plain unary op), not by a curve that never saw it (a T4
    convolution of batch 0 had come out at 192 us, twice the same convolution of batch 1).

    >>> _empty("conv2d", {"N": 0, "C": 8, "H": 4, "W": 4, "K": 8, "R": 3, "S": 3}), _empty(
    ...     "matmul", {"M": 4, "N": 4, "K": 0})
    (True, False)
    """
    try:
        return kind not in ("fused", "opaque") and kinds.output_numel(kind, attrs) == 0
    except (GraphError, KeyError, ValueError, TypeError):
        return False

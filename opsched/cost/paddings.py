"""Larger ops that compute a small op's result, whose least price bounds the small op's.

The calibrated curves are log-linear in the roofline time and were fitted on few ops as small
as some that graphs hold; below their data they climbed again (a 2 x 2 x 2 float32 GEMM at
150-370 us, a 16-channel convolution over 7 x 7 at 2,173 us on the H200). A small op of a
family in :data:`PADDED_FAMILIES` is therefore priced at most as its paddings
(:func:`paddings`): the same GEMM with zero rows and columns, the same norm over more rows,
the same convolution with zero channels or, grouped, as a dense one. Both the fit's held-out
predictions (:func:`opsched.cost.fit.predict_family`) and
:class:`~opsched.cost.profile.Profile` apply the bound (docs/cost-model.md, item 10).

Examples
--------
>>> [p and p["M"] for p in paddings("matmul", {"M": 2, "N": 2, "K": 2})]
[64, 128, 256]
>>> paddings("softmax", {"rows": 1, "cols": 8})
[]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opsched.ir import kinds

__all__ = [
    "CONV_PADS",
    "GEMM_PADS",
    "GEMM_PAD_BELOW",
    "OPAQUE_PADS",
    "PADDED_FAMILIES",
    "ROW_PADS",
    "ROW_PAD_BELOW",
    "conv_paddings",
    "gemm_paddings",
    "opaque_paddings",
    "paddings",
    "row_paddings",
]

#: A GEMM with less work than a 128^3 one (``B * M * N * K < 128**3``) is priced at most as the
#: GEMM it pads to with every one of ``M``, ``N``, ``K`` raised to each of these sizes
#: (:func:`gemm_paddings`). Zero padding computes the same product, so the larger GEMM's time
#: bounds the smaller one's; the curves, fitted on few such GEMMs (mostly skinny), climbed
#: again towards tiny square ones (a 2 x 2 x 2 float32 GEMM priced at 190-370 us on the A100
#: and V100, its 256^3 padding at 11-24 us). Larger GEMMs are left alone: for skinny ones
#: (``N`` of 1-16) the library's own kernels can be slower than the padded GEMM would be.
GEMM_PADS = (64, 128, 256)
GEMM_PAD_BELOW = 128**3
#: A layernorm / rmsnorm over fewer than ``ROW_PAD_BELOW`` elements is priced at most as the
#: same op over each of these row counts (:func:`row_paddings`): more rows do more work. Their
#: curves climbed again towards one row (a float32 layernorm of one 1024-wide row priced at
#: 29-44 us on the A100s, one of 32 rows at 8-13 us). Softmax is left out: bounded, the
#: profiler's log-softmax rows (V100 ResNet-50, 32 x 1000) went from 3.5 to 56 % in sample
#: (42.9 to 66.0 % held out), which its NeuSight-fitted curve prices lower at 64 rows than they
#: take at 32. Its worst dip, below one row per SM (one float16 row of 4,096 on the A100 at 5x
#: the price of 256), is gone since the features count at least one row per SM
#: (:func:`opsched.cost.features.feature_matrix`).
ROW_PADS = (64, 256, 1024)
ROW_PAD_BELOW = 2**20
#: A convolution (any direction, ``groups == 1``) whose implicit GEMM has less work than a
#: 128^3 GEMM is priced at most as the same convolution with ``C`` and ``K`` each raised to
#: these channel counts (:func:`conv_paddings`): zero channels compute the same result. The
#: float32 curves climbed steeply below their data: a 16-channel 3x3 convolution over 7 x 7
#: (batch 1) at 2,173 us on the H200 and 274 us on the A100-SXM4-80GB, its 128-channel version
#: at 20 and 18 us.
CONV_PADS = (64, 128, 256)
#: An ``opaque`` op (a profiled op no shape rule reads, priced by its FLOP and byte counts)
#: moving fewer bytes than each of these is priced at most as the same op moving that many
#: (:func:`opaque_paddings`). The catch-all's curve is fitted on a mixed bag (fbgemm
#: lookups, NCCL calls, ``cat`` rows without shapes), whose zero-byte rows hold both 9 us
#: concatenations and 700 us collectives, and it climbed again below its data: 112 us for a
#: 640-byte op on the H200, 1,380 us for a 64-byte one on the V100-SXM2.
OPAQUE_PADS = (2**16, 2**20, 2**24)
#: The families :func:`paddings` bounds; each gives three paddings.
PADDED_FAMILIES = frozenset({"matmul", "bmm", "layernorm", "rmsnorm", "conv2d",
                             "conv2d_bwd_data", "conv2d_bwd_filter", "opaque"})  # fmt: skip


def _resized(attrs: Mapping[str, Any], **shape: int) -> dict[str, Any]:
    """``attrs`` with new shape values, without stated ``flops`` / ``bytes`` (which
    :mod:`opsched.ir.kinds` would otherwise take over the shape's: a zoo op states the
    small op's counts, not its padding's)."""
    return {k: v for k, v in attrs.items() if k not in ("flops", "bytes")} | shape


def gemm_paddings(attrs: Mapping[str, Any]) -> list[Mapping[str, Any] | None]:
    """Per size of :data:`GEMM_PADS`, the GEMM ``attrs`` padded to it (``M``, ``N``, ``K`` each
    at least that size; the batch ``B`` kept), or None where padding changes nothing or the
    GEMM has :data:`GEMM_PAD_BELOW` work or more.

    >>> pads = gemm_paddings({"M": 2, "N": 300, "K": 64, "dtype": "float16"})
    >>> pads[0], pads[2]["K"]
    ({'M': 64, 'N': 300, 'K': 64, 'dtype': 'float16'}, 256)
    """
    out: list[Mapping[str, Any] | None] = []
    work = int(attrs.get("B", 1)) * int(attrs.get("M", 1)) * int(attrs.get("N", 1))
    if work * int(attrs.get("K", 1)) >= GEMM_PAD_BELOW:
        return [None] * len(GEMM_PADS)
    for size in GEMM_PADS:
        dims = {d: max(int(attrs.get(d, 1)), size) for d in ("M", "N", "K")}
        same = all(dims[d] == int(attrs.get(d, 1)) for d in dims)
        out.append(None if same else _resized(attrs, **dims))
    return out


def row_paddings(attrs: Mapping[str, Any]) -> list[Mapping[str, Any] | None]:
    """Per size of :data:`ROW_PADS`, a row-wise op's ``attrs`` with at least that many
    ``rows``, or None where that changes nothing or the op has :data:`ROW_PAD_BELOW` elements
    or more.

    >>> row_paddings({"rows": 8, "cols": 1024})[0]
    {'rows': 64, 'cols': 1024}
    """
    rows, cols = int(attrs.get("rows", 1)), int(attrs.get("cols", 1))
    if rows * cols >= ROW_PAD_BELOW:
        return [None] * len(ROW_PADS)
    return [None if rows >= r else _resized(attrs, rows=r) for r in ROW_PADS]


def conv_paddings(attrs: Mapping[str, Any]) -> list[Mapping[str, Any] | None]:
    """Larger convolutions computing the same result, whose least price bounds ``attrs``'s.

    Per size of :data:`CONV_PADS`, the convolution with ``C`` and ``K`` each at least that
    size (None where that changes nothing or the implicit GEMM, ``N*P*Q x K`` over
    ``C*R*S``, has :data:`GEMM_PAD_BELOW` work or more). A grouped convolution (depthwise
    ones) is instead bounded by the dense one with the same channels (zero weights off the
    groups' blocks give the same result), and that one's paddings to the two larger sizes:
    no timed convolution is grouped, and their curve prices climbed like the small dense ones
    (a depthwise 3x3 over 256 x 7 x 7 at 164 us on the H200).

    >>> a = {"N": 1, "C": 16, "H": 7, "W": 7, "K": 16, "R": 3, "S": 3, "pad_h": 1, "pad_w": 1}
    >>> [(p["C"], p["K"]) for p in conv_paddings(a)]
    [(64, 64), (128, 128), (256, 256)]
    >>> dw = conv_paddings(a | {"C": 256, "K": 256, "groups": 256})
    >>> dw[0]["groups"], [p and p["C"] for p in dw]
    (1, [256, None, None])
    """
    g = lambda k, d=1: int(attrs.get(k, d))  # noqa: E731
    if g("groups") != 1:
        dense = _resized(attrs, groups=1)
        return [dense, *conv_paddings(dense)[1:]]
    p, q = kinds.conv_out_hw(attrs, "conv2d")
    if g("N") * p * q * g("K") * g("C") * g("R") * g("S") >= GEMM_PAD_BELOW:
        return [None] * len(CONV_PADS)
    out: list[Mapping[str, Any] | None] = []
    for size in CONV_PADS:
        c, k = max(g("C"), size), max(g("K"), size)
        out.append(None if (c, k) == (g("C"), g("K")) else _resized(attrs, C=c, K=k))
    return out


def opaque_paddings(attrs: Mapping[str, Any]) -> list[Mapping[str, Any] | None]:
    """Per size of :data:`OPAQUE_PADS`, the ``opaque`` op moving at least that many bytes
    (its elements raised with them, four bytes each as the fitted rows count them; its FLOPs
    kept), or None where it moves as many already. An op of no bytes is one whose size the
    profiler did not record (an NCCL collective, a ``cat`` without shapes), not a small one:
    it has no paddings.

    >>> opaque_paddings({"flops": 0, "bytes": 640, "numel": 160, "dtype": "float32"})[0]
    {'flops': 0, 'bytes': 65536, 'numel': 16384, 'dtype': 'float32'}
    """
    moved = int(attrs.get("bytes", 0))
    if moved <= 0:  # nothing recorded of its size (collectives, ops without shapes): unknown
        return [None] * len(OPAQUE_PADS)
    # elements counted as the fitted rows count them, four bytes each whatever the dtype
    # (opsched.cost.sources.profiled_kind): the curve has a term in them
    return [
        None if moved >= size else dict(attrs) | {"bytes": size, "numel": size // 4}
        for size in OPAQUE_PADS
    ]


def paddings(family: str, attrs: Mapping[str, Any]) -> list[Mapping[str, Any] | None]:
    """The larger ops whose least price bounds a small op of ``family`` (three entries, None
    where none applies; empty for a family outside :data:`PADDED_FAMILIES`)."""
    if family in ("matmul", "bmm"):
        return gemm_paddings(attrs)
    if family.startswith("conv2d"):
        return conv_paddings(attrs)
    if family == "opaque":
        return opaque_paddings(attrs)
    if family in PADDED_FAMILIES:
        return row_paddings(attrs)
    return []

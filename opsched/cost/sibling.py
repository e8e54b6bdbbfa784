"""Same-chip borrowing: a GPU without timings of a family takes a sibling's calibrated curve.

GPUs built on the same chip (same architecture and SM count: the A100 boards, the two V100
boards, H100 SXM5 and H200, GTX 1080 Ti and Titan X (Pascal), M40 and Titan X (Maxwell))
differ in clocks, memory and power limit, not in the kernels cuBLAS and cuDNN run or in how
those kernels' efficiency changes with the shape. So where a GPU has no curve of its own for
a family and dtype class, the curve a sibling fitted on its own rows is a better start than
the curve pooled over every GPU. The curve is in the GPU's own units (log roofline time on
*its* specs, tiles per SM...), so the borrowed curve still sees the borrower's bandwidth and
peak. A GPU with no sibling of its SM count may borrow from one of its architecture with at
most :data:`SM_SPREAD` times more or fewer SMs (a cut-down die: the Titan Xp's 30 SMs
against the GTX 1080 Ti's 28); same-SM siblings come first. The Tesla P4 (20 SMs, 75 W)
priced from the 28-SM Pascal cards was worse than the pooled curve (matmul 31 -> 46 %,
docs/cost-model.md, ninth round: another die, 1.4 times fewer SMs, a 75 W power limit),
hence the limit. Within it lies the H100 PCIe: the GH100 die cut down to 114 SMs (1.16
times fewer than the H100 SXM5's and H200's 132), priced from the H200's float32 curves
and the H100 SXM5's half-precision ones. No timings of it exist to check that; the pooled
curve it had instead misses the H200 itself, left out, by 42 % on float32 GEMMs and 81 % on
convolutions, while every borrowing of a matching kind of timing that could be measured
beat the pooled curve or tied with it, bar three profiler pairs within 7 points.

A sibling's curve is borrowed only for the kind of timing it was fitted on: ``call`` (one
framework call timed on the host or with CUDA events: NeuSight ``events``, DeepBench
``wallclock``), ``kernel`` (pure kernel time of a shape sweep: Vidur, ``opsched cost
collect``) or ``profiler`` (kernel time of the ops of a few models' training steps,
``cupti``). A curve fitted on per-call times leaves the kernel time of small ops unidentified
(the call's fixed cost hides it): borrowed across kinds, the V100-SXM2's profiler elementwise
rows priced from the V100-PCIe's NeuSight curve were off by a median 930 %
(docs/cost-model.md, thirteenth round). A profiler curve knows a few models' shapes, and in
the A100-SXM4-40GB's traces float32 GEMMs ran on TF32 tensor cores: its curve priced a
1024^3 float32 GEMM at 240 us, against 121 us for the pooled curve and 150-190 us for the
A100-PCIe-40GB's NeuSight calls, so it lends only to profiler rows. Profiler rows, being
kernel times too, take a sweep's kernel curve where no sibling has a profiler curve
(:data:`LENDERS`). The sibling must also have :data:`MIN_SIBLING_SHAPES` distinct shapes of
the kind it lends.

Examples
--------
>>> from opsched.cost.specs import load_specs
>>> specs = load_specs()
>>> siblings("H100-SXM5", specs), siblings("L4", specs)   # the same chip first
(['H200', 'H100-PCIe'], [])
>>> siblings("Titan-Xp", specs)          # 30 SMs: the 28-SM GP102 boards
['GTX-1080-Ti', 'Titan-X-Pascal']
>>> method_kind("events"), method_kind("kernel"), method_kind("cupti")
('call', 'kernel', 'profiler')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from opsched.cost.specs import GpuSpec

__all__ = [
    "LENDERS",
    "METHOD_KINDS",
    "MIN_SIBLING_SHAPES",
    "SM_SPREAD",
    "method_kind",
    "pick_sibling",
    "shape_counts",
    "siblings",
]

#: Timing method -> the kind of time it measures.
METHOD_KINDS: Mapping[str, str] = {
    "events": "call",
    "wallclock": "call",
    "kernel": "kernel",
    "cupti": "profiler",
}

#: Kind of timing predicted -> the kinds of curve that may lend to it, in order of preference.
LENDERS: Mapping[str, tuple[str, ...]] = {
    "call": ("call",),
    "kernel": ("kernel",),
    "profiler": ("profiler", "kernel"),
}

#: Most SM-count ratio between a GPU and a sibling of its architecture on another board.
SM_SPREAD = 1.2

#: Least distinct shapes of one timing kind a sibling's curve needs to be borrowed for it
#: (DeepBench times 94-160 shapes per GPU and family; a profiler trace a few dozen).
MIN_SIBLING_SHAPES = 40


def method_kind(method: str) -> str:
    """``call``, ``kernel`` or ``profiler`` (an unknown method counts as kernel time)."""
    return METHOD_KINDS.get(str(method), "kernel")


def siblings(gpu: str, specs: Mapping[str, GpuSpec]) -> list[str]:
    """Other GPUs of ``specs`` that ``gpu`` may borrow from, nearest first.

    Same architecture and SM count first (by name), then the same architecture with at most
    :data:`SM_SPREAD` times more or fewer SMs (fewest SMs apart, then by name).
    """
    s = specs.get(gpu)
    if s is None:
        return []
    near = [(abs(o.sm_count - s.sm_count), k) for k, o in specs.items()
            if k != gpu and o.arch == s.arch
            and max(o.sm_count, s.sm_count) <= SM_SPREAD * min(o.sm_count, s.sm_count)]  # fmt: skip
    return [k for _, k in sorted(near)]


def shape_counts(group: np.ndarray, methods: np.ndarray) -> dict[str, int]:
    """Distinct shapes per timing kind among some rows (``group``: the rows' shape keys)."""
    kinds = np.array([method_kind(m) for m in methods.tolist()], dtype=object)
    return {k: int(np.unique(group[kinds == k]).size) for k in sorted(set(kinds.tolist()))}


def pick_sibling(
    gpu: str,
    family: str,
    cls: str,
    kind: str,
    groups: Mapping[tuple[str, str, str], Mapping[str, Any]],
    specs: Mapping[str, GpuSpec],
) -> tuple[str, Mapping[str, Any]] | None:
    """The nearest sibling (:func:`siblings`) whose own curve of ``(family, cls)`` has enough
    shapes of ``kind``; among equally near ones, the one with the most.

    ``groups`` maps ``(gpu, family, class)`` to a fitted curve with a ``shapes`` count per
    kind (:func:`shape_counts`). The kinds of :data:`LENDERS` are tried in order; None when no
    sibling has :data:`MIN_SIBLING_SHAPES` of any of them.
    """
    sm = specs[gpu].sm_count if gpu in specs else 0
    for lender in LENDERS.get(kind, (kind,)):
        # nearest SM count first; among equals, the most shapes (then the first name)
        best: tuple[int, int, str] | None = None
        for sib in siblings(gpu, specs):
            c = groups.get((sib, family, cls))
            if c is None or c.get("source") != "fitted":
                continue
            n = int(c.get("shapes", {}).get(lender, 0))
            key = (abs(specs[sib].sm_count - sm), -n, sib)
            if n >= MIN_SIBLING_SHAPES and (best is None or key < best):
                best = key
        if best is not None:
            return best[2], groups[(best[2], family, cls)]
    return None

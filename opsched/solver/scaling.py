"""Integer scaling of times and sizes for CP-SAT.

CP-SAT works on integers. Times are measured in *ticks* of ``1 / time_scale`` time units and
memory in *quanta* of ``memory_quantum`` bytes; both choices are explicit, reported with every
result, and conservative:

* Time. If every duration is a multiple of ``10^-j`` for some ``j <= 6`` (integers, ``0.5``,
  ``0.125``...) the scale ``10^j`` is exact. Otherwise durations are rounded **up** to ticks of
  ``serial_time / 10^6``, so that a schedule valid in ticks is valid in real time (ops only
  finish earlier); the result is then not claimed optimal.
* Memory. Sizes are divided by the gcd of all sizes and of the cap's free part (exact). If
  that leaves numbers above 2^40, sizes are rounded **up** and the cap **down** to quanta of
  ``total / 2^31`` bytes: any schedule within the rounded cap is within the real one, but
  optimality is no longer claimed.

Examples
--------
>>> from opsched.ir import Op, OpGraph
>>> g = OpGraph((Op("a", 1.5, output_bytes=4096), Op("b", 2.25, deps=("a",), output_bytes=8192)))
>>> s = choose_scaling(g, memory_cap=65536)
>>> s.time_scale, s.durations, s.time_exact, s.memory_quantum, s.sizes_out, s.cap
(100, [150, 225], True, 4096, [1, 2], 16)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

import numpy as np

from opsched.ir.graph import OpGraph
from opsched.solver.settle import settle_starts

__all__ = ["Scaling", "choose_scaling", "limit_in_ticks"]

_MAX_DECIMALS = 6
_TICKS_IF_INEXACT = 10**6
_MAX_EXACT_QUANTA = 2**40
_QUANTA_IF_INEXACT = 2**31


@dataclass(frozen=True)
class Scaling:
    """How a problem was turned into integers (see the module docstring)."""

    time_scale: float  #: ticks per time unit
    durations: list[int]  #: durations in ticks (rounded up when not exact)
    time_exact: bool
    max_time_error: float  #: largest rounding of one duration, in time units
    memory_quantum: int  #: bytes per quantum
    sizes_out: list[int]  #: output sizes in quanta (rounded up when not exact)
    sizes_ws: list[int]  #: workspace sizes in quanta
    cap: int | None  #: free memory (cap - persistent) in quanta, rounded down
    memory_exact: bool

    @property
    def exact(self) -> bool:
        return self.time_exact and self.memory_exact

    def to_time(self, ticks: float) -> float:
        return ticks / self.time_scale

    def starts_of(self, ticks: Sequence[int], durations: np.ndarray) -> np.ndarray:
        """Start times of tick starts, exact in floating point: each one at or after the
        float end of every op that ends before it in ticks (:mod:`opsched.solver.settle`;
        ``tick / scale`` alone put a start one ulp before such an end)."""
        return settle_starts([t / self.time_scale for t in ticks], durations)

    def to_dict(self) -> dict[str, object]:
        return {
            "time_scale": self.time_scale,
            "time_exact": self.time_exact,
            "max_time_error": self.max_time_error,
            "memory_quantum": self.memory_quantum,
            "memory_exact": self.memory_exact,
        }


def _time_scale(d: np.ndarray) -> tuple[float, list[int], bool, float]:
    for j in range(_MAX_DECIMALS + 1):
        s = 10**j
        x = d * s
        r = np.round(x)
        # float noise only (a few ulps): a looser relative tolerance would swallow whole
        # fractions of a tick for long durations
        # and no op that takes time rounded to zero ticks (5e-10 is not "0 within 1e-9")
        near = np.abs(x - r) <= np.maximum(1e-9, 8 * np.finfo(float).eps * np.abs(x))
        if np.all(near & ((r > 0) | (d == 0))):
            return s, [int(v) for v in r], True, 0.0
    total = float(d.sum())
    s = _TICKS_IF_INEXACT / total if total > 0 else 1.0
    ticks = np.where(d > 0, np.maximum(np.ceil(d * s - 1e-9), 1), 0)
    err = max(0.0, float(np.max(ticks / s - d))) if len(d) else 0.0
    return s, [int(v) for v in ticks], False, err


def choose_scaling(graph: OpGraph, memory_cap: int | None = None) -> Scaling:
    """Pick the tick and memory quantum for ``graph`` under ``memory_cap`` (bytes)."""
    s, ticks, t_exact, err = _time_scale(graph.durations)
    out = [int(x) for x in graph.output_sizes]
    ws = [int(x) for x in graph.workspace_sizes]
    free = None if memory_cap is None else memory_cap - graph.persistent_bytes
    values = [v for v in out + ws if v > 0] + ([free] if free and free > 0 else [])
    q = reduce(math.gcd, values, 0) or 1
    total = sum(out) + sum(ws) + max(free or 0, 0)
    m_exact = True
    if total // q > _MAX_EXACT_QUANTA:
        q = max(1, math.ceil(total / _QUANTA_IF_INEXACT))
        m_exact = False
    cap = None if free is None else (free // q if free >= 0 else -1)
    return Scaling(
        time_scale=s,
        durations=ticks,
        time_exact=t_exact,
        max_time_error=err,
        memory_quantum=q,
        sizes_out=[-(-v // q) for v in out],
        sizes_ws=[-(-v // q) for v in ws],
        cap=cap,
        memory_exact=m_exact,
    )


def limit_in_ticks(limit: float, scaling: Scaling) -> int:
    """The most ticks a schedule may take to end by time ``limit``.

    With exact ticks, a limit that is a whole number of ticks up to float noise is that
    number (``4.35 * 100`` is ``434.99999999999994``: flooring it refused the schedule that
    ends at 4.35 exactly); otherwise the ticks below it, since every end lies on a tick.

    >>> from opsched.ir import Op, OpGraph
    >>> sc = choose_scaling(OpGraph((Op("a", 2.2), Op("b", 2.15))))
    >>> sc.time_scale, limit_in_ticks(4.35, sc), limit_in_ticks(4.355, sc)
    (100, 435, 435)
    """
    x = min(limit * scaling.time_scale, 2.0**62)
    r = round(x)
    if scaling.time_exact and abs(x - r) <= max(1e-9, 8 * np.finfo(float).eps * abs(x)):
        return int(r)
    return math.floor(x)

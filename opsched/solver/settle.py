"""Start times read back from integer ticks, made exact in floating point.

A solver works in ticks, where ``end(j) <= start(i)`` is an exact integer comparison. Read
back as ``tick / time_scale``, the relation can fail by one unit in the last place: with
durations 0.1 and 0.2, an op starting at tick 3 starts at ``0.3`` while its predecessor, started
at ``0.1``, ends at ``0.1 + 0.2 = 0.30000000000000004``. The validator compares times exactly
(a tensor freed at ``t`` and one allocated at ``t`` never coexist, but one freed an ulp later
does), so such a schedule breaks a memory cap it meets in ticks.

:func:`settle_starts` moves each start up to the latest float end of the ops that, in the
intended times, end no later than it starts: afterwards every "ends before" relation of the
intended schedule holds exactly, and no new overlap appears (starts only move later by
rounding noise, ends with them).

Examples
--------
>>> starts = settle_starts([0.0, 0.1, 0.3], [0.1, 0.2, 0.1])
>>> starts.tolist()
[0.0, 0.1, 0.30000000000000004]
>>> bool(starts[2] >= starts[1] + 0.2)
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["settle_starts"]


def settle_starts(
    starts: Sequence[float] | np.ndarray, durations: Sequence[float] | np.ndarray, tol: float = 1e-9
) -> np.ndarray:
    """Starts no earlier than the float ends of the ops that end before them.

    Times within ``tol`` times the largest time of each other count as one instant (the
    intended schedule's, blurred by rounding). Processing the instants in order, an op that
    starts at one is moved to the latest end, as computed in floats, of the ops that end at or
    before it; the zero-duration ops of an instant all start at the same time, after every op
    that ends there, and before the ops that take time start.

    Returns the settled starts (a new float array, in the order given).
    """
    s = np.asarray(starts, dtype=np.float64).copy()
    d = np.asarray(durations, dtype=np.float64)
    n = len(s)
    if n == 0:
        return s
    e = s + d
    both = np.concatenate([s, e])
    eps = tol * float(np.max(np.abs(both))) if np.isfinite(both).all() else 0.0
    # rank every time, merging times within eps of the one before into one instant
    order = np.argsort(both, kind="stable")
    ranked = both[order]
    new_instant = np.r_[True, np.diff(ranked) > eps]
    rank = np.empty(2 * n, dtype=np.int64)
    rank[order] = np.cumsum(new_instant) - 1
    s_rank, e_rank = rank[:n], rank[n:]
    timed = e_rank > s_rank  # takes time at the intended instants
    by_end = np.flatnonzero(timed)[np.argsort(e_rank[timed], kind="stable")]
    by_start = np.lexsort((timed, s_rank))  # zero-duration ops first at an instant
    latest = -np.inf  # latest float end of the ops that ended so far
    p = 0
    i = 0
    while i < n:
        r = s_rank[by_start[i]]
        while p < len(by_end) and e_rank[by_end[p]] <= r:
            j = by_end[p]
            latest = max(latest, s[j] + d[j])
            p += 1
        k = i
        while k < n and s_rank[by_start[k]] == r:
            k += 1
        group = by_start[i:k]
        zero = group[~timed[group]]
        if len(zero):
            # they end where they start, each before the others: one common start
            at = max(float(s[zero].max()), latest)
            s[zero] = at
            latest = max(latest, float((at + d[zero]).max()))
        rest = group[timed[group]]
        s[rest] = np.maximum(s[rest], latest)
        i = k
    return s

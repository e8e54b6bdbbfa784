"""The ramp bound: idle capacity forced while a graph's parallelism ramps up and drains.

A resource of capacity ``C`` (the compute units, or a named renewable resource) offers
``C x T`` of capacity-time in a schedule of makespan ``T``, and the ops use ``W`` of it (the
sum of demand x duration), so ``C x T - W`` is idle. The work bound ``T >= W / C`` only says
that idle time is not negative. But no op starts before its head ``r`` (its earliest start
on unlimited units) or ends later than ``T - q``, where ``q`` is its tail (the longest path
after it). So over the first ``a`` time units op ``j`` can do at most
``clip(a - r_j, 0, d_j)`` of its work, and over the last ``b`` at most
``clip(b - q_j, 0, d_j)``. The idle capacity forced at the two ends,

    S(a) = C a - sum_j w_j clip(a - r_j, 0, d_j)
    E(b) = C b - sum_j w_j clip(b - q_j, 0, d_j)

(``w_j`` the op's demand) adds up over disjoint windows, so every schedule of makespan ``T``
satisfies

    max { S(a) + E(b) : a, b >= 0, a + b <= T }  <=  C T - W.

The left side grows with ``T`` by at most ``C`` per time unit (``S`` and ``E`` rise no faster
than ``C``), so the gap between the two sides never grows with ``T``: the least ``T`` that
satisfies it is found by bisection and is a lower bound on the makespan. It is the
left-shift / right-shift energy reasoning of cumulative scheduling, summed over all ops at
the two ends of the schedule instead of per window.

The heads and tails may be any valid ones; the sharper, the stronger the bound.
:func:`energy_heads` raises the longest-path ones by the work that must come first: an op
starts only after all its ancestors ended, which on ``C`` units takes at least their work
over ``C`` (tails likewise with the descendants). Every op also lies on a path of its head,
its duration and its tail, which bounds ``T`` too. On the 28 STG 300 pairs (graph,
processors) that CP-SAT had left open at their work or path bound, one to fifteen time units
below the best schedule, the bound with longest-path heads reaches that schedule on 16 and
with the energy heads on 19, proving them optimal (docs/cpsat-model.md).

``S`` and ``E`` are piecewise linear with breakpoints at the heads and head ends (tails and
tail ends), so the maximum lies at a pair of breakpoints or on the line ``a + b = T``;
each evaluation sorts ``O(n)`` points, and the bisection takes ``O(log T)`` of them.

Examples
--------
A fork on 2 units: one op of duration 2, then four of duration 2 that read it. Work 10,
so the work bound is 5, and the critical path is 4. But one unit idles while the first op
runs, and no schedule is shorter than 6:

>>> import numpy as np
>>> heads = np.array([0.0, 2, 2, 2, 2])
>>> tails = np.array([2.0, 0, 0, 0, 0])
>>> ramp_bound(heads, tails, np.full(5, 2.0), np.ones(5), 2, integral=True)
6.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "ENERGY_HEADS_MAX_OPS",
    "NESTED_HEADS_MAX_OPS",
    "energy_heads",
    "nested_heads",
    "ramp_bound",
]

#: Graphs with more ops than this keep the plain heads and tails: the energy heads hold an
#: n x n ancestor matrix (9 MB at 3,000 ops).
ENERGY_HEADS_MAX_OPS = 3000

#: Graphs with more ops than this keep the energy heads: the nested ones run one ramp bound
#: per op over its ancestors and hold an n x n matrix of path lengths (8 MB at 1,000 ops).
NESTED_HEADS_MAX_OPS = 1000


def energy_heads(
    durations: np.ndarray,
    pred_ptr: np.ndarray,
    pred_idx: np.ndarray,
    order: Sequence[int],
    loads: Sequence[tuple[np.ndarray, float]],
    integral: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Heads and tails raised by the work that must come before (after) each op.

    An op starts only after all its ancestors have ended, and on a resource of capacity ``C``
    they need at least their work on it (demand x duration) over ``C``; likewise its
    descendants after its end. So ``head_v = max(max over preds (head_u + d_u), W(anc v) / C)``
    for each ``(demands, C)`` of ``loads``, and the tails the same way backwards
    (rounded up when ``integral``: a schedule can be left-justified to integer starts without
    growing). Plain heads and tails are the case without loads.

    Parameters
    ----------
    durations, pred_ptr, pred_idx
        Per op, and the predecessor lists in CSR form (as :class:`~opsched.ir.OpGraph` keeps
        them).
    order
        A topological order of the ops.
    loads
        ``(demands per op, capacity)`` of each resource with a finite capacity.

    Returns
    -------
    heads, tails : ndarray
        Earliest start of each op, and the least time after its end, in every schedule.

    Examples
    --------
    Four independent ops of 2, then one reading them all, on 2 units: the last op cannot
    start before 4 (the work before it is 8), though its longest path in is 2:

    >>> import numpy as np
    >>> ptr, idx = np.array([0, 0, 0, 0, 0, 4]), np.array([0, 1, 2, 3])
    >>> h, t = energy_heads(np.full(5, 2.0), ptr, idx, range(5), [(np.ones(5), 2)], True)
    >>> h.tolist(), t.tolist()
    ([0.0, 0.0, 0.0, 0.0, 4.0], [2.0, 2.0, 2.0, 2.0, 0.0])
    """
    n = len(durations)
    d = np.asarray(durations, float)
    rates = np.array([np.asarray(w, float) * d / c for w, c in loads if c]).reshape(-1, n)
    preds = [pred_idx[pred_ptr[v] : pred_ptr[v + 1]].tolist() for v in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for v in range(n):
        for u in preds[v]:
            succs[u].append(v)

    def sweep(seq: Sequence[int], before: Sequence[Sequence[int]]) -> np.ndarray:
        need = np.zeros(n)  # the most work on one resource before v, over its capacity
        if len(rates):
            reach = np.zeros((n, n), bool)  # reach[v, u]: u comes before v
            for v in seq:
                if before[v]:
                    np.any(reach[before[v]], axis=0, out=reach[v])
                    reach[v, before[v]] = True
            for i in range(0, n, 512):  # in blocks: a float copy of the matrix is 8 n^2 bytes
                need[i : i + 512] = (reach[i : i + 512].astype(float) @ rates.T).max(axis=1)
            if integral:
                need = np.ceil(need - 1e-9)
        out = np.zeros(n)
        for v in seq:
            out[v] = max(max((out[u] + d[u] for u in before[v]), default=0.0), need[v])
        return out

    heads = sweep(list(order), preds)
    tails = sweep(list(order)[::-1], succs)
    return heads, tails


def nested_heads(
    durations: np.ndarray,
    before: Sequence[Sequence[int]],
    order: Sequence[int],
    loads: Sequence[tuple[np.ndarray, float]],
    heads: np.ndarray,
    integral: bool = False,
) -> np.ndarray:
    """Heads raised by the ramp bound of each op's ancestors.

    Op ``v`` starts only after all its ancestors ``A`` have ended, so the part of any schedule
    before ``s_v`` schedules ``A`` on the same resources: each ``u`` of ``A`` starts no
    earlier than its head and ends no later than ``s_v - g_u``, where ``g_u`` is the longest
    path from ``u``'s end to ``v``'s start. The ramp bound of that sub-problem (heads, tails
    ``g``, each load) is a lower bound on ``s_v``. It counts the units left idle while the
    ancestors drain into ``v``, which the energy heads (their work over the capacity) do not.
    The ops are taken in topological order, so each sub-problem already has its ops' raised
    heads. With integer durations (``integral``) it holds for schedules with integer starts,
    among which an optimal one always lies.

    Tails are the same on the reversed graph: pass the successor lists as ``before`` and the
    order reversed. On STG 300 this closes 5 of the 9 pairs that stayed open with the energy
    heads (docs/cpsat-model.md).

    Parameters
    ----------
    durations
        Per op.
    before
        Per op, the ops directly before it (predecessors, or successors for tails).
    order
        An order in which every op comes after those ``before`` it.
    loads
        ``(demands per op, capacity)`` of each resource with a finite capacity.
    heads
        Valid heads to start from, e.g. :func:`energy_heads`' (not changed).

    Examples
    --------
    On 2 units: op 0 (6), then ops 1, 2, 3 and 5 (4, 6, 4, 1) that read it, then op 6 (2)
    that reads those four; op 4 (1) stands alone. Op 6's energy head is 12 (the path; its
    ancestors' work 21 over 2 units is 11). But while op 0 runs, none of its other ancestors
    can, so they take at least 6 + (21 - 6) / 2 = 13.5, hence 14: op 6 ends at 16 at the
    earliest, which the ramp bound of the whole graph (15) misses, as op 4 could fill that
    idle unit as far as it knows. 16 is the optimum.

    >>> import numpy as np
    >>> d = np.array([6.0, 4, 6, 4, 1, 1, 2])
    >>> before = [[], [0], [0], [0], [], [0], [1, 2, 3, 5]]
    >>> ptr, idx = np.cumsum([0] + [len(b) for b in before]), np.concatenate(before)
    >>> loads = [(np.ones(7), 2.0)]
    >>> h, t = energy_heads(d, ptr, idx.astype(int), range(7), loads, True)
    >>> h.tolist()
    [0.0, 6.0, 6.0, 6.0, 0.0, 6.0, 12.0]
    >>> h2 = nested_heads(d, before, range(7), loads, h, True)
    >>> h2.tolist()
    [0.0, 6.0, 6.0, 6.0, 0.0, 6.0, 14.0]
    >>> ramp_bound(h, t, d, np.ones(7), 2, True), ramp_bound(h2, t, d, np.ones(7), 2, True)
    (15.0, 16.0)
    """
    n = len(durations)
    d = np.asarray(durations, float)
    out = np.array(heads, float)
    weights = [(np.asarray(w, float), float(cap)) for w, cap in loads if cap]
    # path[v, u]: the longest path from u's start to v's start (-inf: u is not before v)
    path = np.full((n, n), -np.inf)
    for v in order:
        prev = list(before[v])
        if not prev:
            path[v, v] = 0.0
            continue
        np.max(path[prev] + d[prev, None], axis=0, out=path[v])
        path[v, v] = 0.0
        out[v] = max(out[v], float((out[prev] + d[prev]).max()))
        mask = path[v] > -np.inf
        mask[v] = False
        gap = path[v, mask] - d[mask]
        for w, cap in weights:
            dem = w[mask]
            # ancestors that fit side by side need no more than their paths, already counted
            if dem.sum() > cap:
                found = ramp_bound(out[mask], gap, d[mask], dem, cap, integral,
                                   at_least=float(out[v]))  # fmt: skip
                out[v] = max(out[v], found)
    return out


class _Ramp:
    """``f(t) = C t - sum_j w_j clip(t - s_j, 0, d_j)`` evaluated at many points at once."""

    def __init__(self, starts: np.ndarray, dur: np.ndarray, w: np.ndarray, cap: float) -> None:
        self.cap = cap
        o = np.argsort(starts)
        self.s, self.sw, self.sws = self._prefix(starts[o], w[o])
        ends = starts + dur
        o = np.argsort(ends)
        self.e, self.ew, self.ews = self._prefix(ends[o], w[o])
        # the breakpoints, where the maximum over a window can lie (two sorted runs merged),
        # and f's prefix maximum
        points = np.concatenate([[0.0], self.s, self.e])
        points.sort(kind="stable")
        keep = np.ones(len(points), bool)
        np.not_equal(points[1:], points[:-1], out=keep[1:])
        self.points = points[keep]
        self.values = self(self.points)
        self.best = np.maximum.accumulate(self.values)

    @staticmethod
    def _prefix(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        sw, sws = np.zeros(len(x) + 1), np.zeros(len(x) + 1)
        np.cumsum(w, out=sw[1:])
        np.cumsum(w * x, out=sws[1:])
        return x, sw, sws

    def __call__(self, t: np.ndarray) -> np.ndarray:
        # sum_j w_j ((t - s_j)^+ - (t - e_j)^+), from prefix sums over the sorted s and e
        i = np.searchsorted(self.s, t, side="right")
        k = np.searchsorted(self.e, t, side="right")
        done = t * self.sw[i] - self.sws[i] - (t * self.ew[k] - self.ews[k])
        return self.cap * t - done

    def best_upto(self, t: np.ndarray) -> np.ndarray:
        """max f over [0, t] (t >= 0): a breakpoint's value or f(t) itself."""
        j = np.searchsorted(self.points, t, side="right") - 1
        return np.maximum(self.best[j], self(t))


def _forced_idle(head: _Ramp, tail: _Ramp, T: float) -> float:
    """max S(a) + E(b) over a, b >= 0, a + b <= T."""
    a = head.points[head.points <= T]
    b = tail.points[tail.points <= T]
    one = head.values[: len(a)] + tail.best_upto(T - a)
    two = tail.values[: len(b)] + head.best_upto(T - b)
    return float(max(one.max(), two.max()))


def ramp_bound(
    heads: np.ndarray,
    tails: np.ndarray,
    durations: np.ndarray,
    demands: np.ndarray,
    capacity: float,
    integral: bool = False,
    at_least: float = 0.0,
) -> float:
    """Least makespan the ramp rule (module docstring) allows on one resource.

    Parameters
    ----------
    heads, tails
        Per op: earliest start, and longest path after its end (its duration excluded).
    durations, demands
        Per op; ops with a zero duration or demand are ignored.
    capacity
        The resource's capacity (units: the number of compute units); must be positive.
    integral
        Durations, heads and tails are integers, so the makespan is one: the result is the
        least integer makespan the rule allows. Otherwise the result is a makespan the rule
        refutes, within a relative 1e-9 of the least one it allows.
    at_least
        A makespan already known to be a lower bound: the result is the least makespan at or
        above it that the rule allows (one test when the rule allows it, as is common).

    Returns 0 when no op demands the resource.
    """
    use = (durations > 0) & (demands > 0)
    if not use.any():
        return 0.0
    # every op lies on a path of its head, its duration and its tail
    path = float((np.asarray(heads) + durations + np.asarray(tails)).max())
    d = np.asarray(durations, float)[use]
    w = np.asarray(demands, float)[use]
    head = _Ramp(np.asarray(heads, float)[use], d, w, capacity)
    tail = _Ramp(np.asarray(tails, float)[use], d, w, capacity)
    work = float((d * w).sum())
    tol = 1e-9 * max(work, 1.0)

    def refuted(T: float) -> bool:
        return _forced_idle(head, tail, T) > capacity * T - work + tol

    lo = max(work / capacity, path, at_least)
    if integral:
        lo = float(math.ceil(lo - 1e-9))
    if not refuted(lo):
        return lo
    # the left side is at most max S + max E whatever T is, so this T is allowed
    hi = max((float(head.values.max() + tail.values.max()) + work) / capacity, lo)
    if integral:
        hi = float(math.ceil(hi))
        while hi - lo > 1:  # refuted(lo), not refuted(hi)
            mid = float((lo + hi) // 2)
            lo, hi = (mid, hi) if refuted(mid) else (lo, mid)
        return hi
    for _ in range(100):
        if hi - lo <= 1e-9 * hi:
            break
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if refuted(mid) else (lo, mid)
    return lo

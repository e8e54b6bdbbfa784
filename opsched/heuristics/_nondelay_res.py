"""The non-delay schedule under cumulative resources, compiled: :func:`opsched.heuristics.
greedy.greedy`'s event loop without a memory cap, for a priority given as numbers.

At each event time the ready ops are taken in priority order, and each that fits the free
capacities starts; one that does not fit leaves the others of its *signature* (the same
demands) waiting too, since capacities only shrink until the clock moves. Ready ops wait
in one heap per signature, and a pass visits the heads of those heaps in priority order, so
a pass costs the number of signatures, not of ready ops. Ops that take no time hold nothing:
they start (and end) when their turn in priority order comes, which may make more ops ready
at the same instant. Unit ids go to the ops that hold units as they start, lowest free
first (new ids past the pool where the units are unlimited); a one-unit op keeps its id,
a zero-time one names the lowest free id without taking it. All of this is the Python
loop's rule, and tests check that the two give the same schedules.
"""

from __future__ import annotations

import numpy as np

from opsched._jit import call, kernel
from opsched.heuristics._kernels import _heap_pop, _heap_push
from opsched.heuristics._resources import resource_arrays
from opsched.problem import Problem

__all__ = ["nondelay_arrays", "nondelay_resources"]

#: :func:`opsched._jit.kernels_digest` of :mod:`opsched.heuristics._kernels`, whose heap
#: kernels this module's kernel compiles into itself (``tests/test_jit_cache.py``).
LIST_KERNELS = "7f14de220da3c511"


@kernel
def _bucket_push(bk: np.ndarray, bv: np.ndarray, off: np.ndarray, bn: np.ndarray, s: int,
                 key: float, v: int) -> None:  # fmt: skip
    lo = off[s]
    bn[s] = _heap_push(bk[lo:], bv[lo:], bn[s], key, v)


@kernel
def nondelay_resources(
    d: np.ndarray,
    sig: np.ndarray,
    sdem: np.ndarray,
    cap: np.ndarray,
    key: np.ndarray,
    units_dem: np.ndarray,
    pool: int,
    pred_ptr: np.ndarray,
    succ_ptr: np.ndarray,
    succ_idx: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Starts, unit ids (-1: none) and the number of ops placed (all of them unless one
    cannot fit even an idle machine) of the non-delay schedule (module docstring).

    ``sig[v]``: the op's signature, a row of ``sdem`` (its demands of the ``cap``'s
    resources), or ``len(sdem)`` for an op that takes no time; ``key``: smaller first
    (ties by index); ``units_dem``: units each op holds (for unit ids); ``pool``: the unit
    ids there are (-1: unlimited).
    """
    n = len(d)
    ns = sdem.shape[0] + 1  # the last bucket: ops that take no time
    nr = cap.shape[0]
    counts = np.zeros(ns, dtype=np.int64)
    for v in range(n):
        counts[sig[v]] += 1
    off = np.zeros(ns + 1, dtype=np.int64)
    for s in range(ns):
        off[s + 1] = off[s] + counts[s]
    bk = np.empty(max(n, 1))
    bv = np.empty(max(n, 1), dtype=np.int64)
    bn = np.zeros(ns, dtype=np.int64)
    ak = np.empty(n + ns + 1)  # the pass's heap of bucket heads (stale entries skipped)
    av = np.empty(n + ns + 1, dtype=np.int64)
    na = 0
    blocked = np.zeros(ns, dtype=np.bool_)
    free = cap.copy()
    indeg = np.empty(n, dtype=np.int64)
    starts = np.zeros(n)
    unit_of = np.full(n, -1, dtype=np.int64)
    hoff = np.zeros(n + 1, dtype=np.int64)  # the unit ids each op holds
    for v in range(n):
        hoff[v + 1] = hoff[v] + (units_dem[v] if d[v] > 0 else 0)
    held = np.empty(max(hoff[n], 1), dtype=np.int64)
    npool = max(pool, 0)
    fk = np.empty(max(npool + hoff[n], 1))  # free unit ids (min-heap)
    fv = np.empty(max(npool + hoff[n], 1), dtype=np.int64)
    nf = 0
    for u in range(npool):
        nf = _heap_push(fk, fv, nf, float(u), u)
    next_unit = npool
    ek = np.empty(max(n, 1))  # running ops by end
    ev = np.empty(max(n, 1), dtype=np.int64)
    ne = 0
    for v in range(n):
        indeg[v] = pred_ptr[v + 1] - pred_ptr[v]
        if indeg[v] == 0:
            _bucket_push(bk, bv, off, bn, sig[v], key[v], v)
    t = 0.0
    done = 0
    while done < n:
        # one pass at time t: bucket heads in priority order
        blocked[:] = False
        na = 0
        for s in range(ns):
            if bn[s] > 0:
                na = _heap_push(ak, av, na, bk[off[s]], bv[off[s]])
        while na > 0:
            k0 = ak[0]
            v = av[0]
            na = _heap_pop(ak, av, na)
            s = sig[v]
            lo = off[s]
            if blocked[s] or bn[s] == 0 or bv[lo] != v or bk[lo] != k0:
                continue  # a stale head
            bn[s] = _heap_pop(bk[lo:], bv[lo:], bn[s])
            if bn[s] > 0:  # the next of its signature, in line with the others
                na = _heap_push(ak, av, na, bk[lo], bv[lo])
            if s < ns - 1:
                fits = True
                for r in range(nr):
                    if sdem[s, r] > free[r]:
                        fits = False
                        break
                if not fits:  # nor does any other of its signature before the clock moves
                    bn[s] = _heap_push(bk[lo:], bv[lo:], bn[s], k0, v)
                    blocked[s] = True
                    continue
            starts[v] = t
            if d[v] == 0:
                if units_dem[v] == 1:
                    unit_of[v] = fv[0] if nf > 0 else 0
                done += 1
                for k in range(succ_ptr[v], succ_ptr[v + 1]):
                    w = succ_idx[k]
                    indeg[w] -= 1
                    if indeg[w] == 0:
                        sw = sig[w]
                        _bucket_push(bk, bv, off, bn, sw, key[w], w)
                        if not blocked[sw] and bv[off[sw]] == w:
                            na = _heap_push(ak, av, na, key[w], w)
                continue
            for r in range(nr):
                free[r] -= sdem[s, r]
            for j in range(hoff[v], hoff[v + 1]):
                if nf > 0:
                    held[j] = fv[0]
                    nf = _heap_pop(fk, fv, nf)
                else:
                    held[j] = next_unit
                    next_unit += 1
            if units_dem[v] == 1:
                unit_of[v] = held[hoff[v]]
            ne = _heap_push(ek, ev, ne, t + d[v], v)
        if done >= n or ne == 0:
            break  # done < n here: no op fits an empty machine (the caller checks)
        # the clock moves to the next end; everything ending then finishes
        t = ek[0]
        while ne > 0 and ek[0] <= t:
            v = ev[0]
            ne = _heap_pop(ek, ev, ne)
            done += 1
            s = sig[v]
            for r in range(nr):
                free[r] += sdem[s, r]
            for j in range(hoff[v], hoff[v + 1]):
                nf = _heap_push(fk, fv, nf, float(held[j]), held[j])
            for k in range(succ_ptr[v], succ_ptr[v + 1]):
                w = succ_idx[k]
                indeg[w] -= 1
                if indeg[w] == 0:
                    _bucket_push(bk, bv, off, bn, sig[w], key[w], w)
    return starts, unit_of, done


def nondelay_arrays(problem: Problem, prio: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`nondelay_resources` on ``problem`` (no memory cap) with priority ``prio``
    (larger first): starts, unit ids (-1: none) and the number of ops placed."""
    g = problem.graph
    n = g.num_ops
    d = g.durations
    dem, cap = resource_arrays(problem)
    timed = d > 0
    if dem.shape[1]:
        rows, inverse = np.unique(dem[timed], axis=0, return_inverse=True)
    else:  # nothing limited: one signature, that always fits
        rows, inverse = np.zeros((1, 0), dtype=np.int64), np.zeros(int(timed.sum()), np.int64)
    sig = np.full(n, len(rows), dtype=np.int64)
    sig[timed] = inverse.reshape(-1)
    units_dem = g.demand_array("units").astype(np.int64)
    pool = problem.unit_pool
    return call(
        nondelay_resources, n + g.num_edges, d, sig, np.ascontiguousarray(rows, dtype=np.int64),
        cap, -np.asarray(prio, dtype=np.float64), units_dem, -1 if pool is None else pool,
        g.pred_ptr, g.succ_ptr, g.succ_idx,
    )  # fmt: skip

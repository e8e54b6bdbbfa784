"""Array loops of list scheduling (see :mod:`opsched._jit`).

Both kernels take the graph as CSR arrays, ``d`` (durations), ``wants_unit`` (1 where the op
demands one compute unit; it holds it only if its duration is positive, and a zero-duration
op is still given a unit index) and a priority key per op (smaller first; ties by op index).
They return the starts and the unit of every op (-1 for ops that demand no unit).

The heaps are binary heaps on preallocated arrays ordered by ``(key, index)``.
"""

from __future__ import annotations

import numpy as np

from opsched._jit import kernel


@kernel
def _heap_push(hk: np.ndarray, hv: np.ndarray, size: int, key: float, v: int) -> int:
    i = size
    while i > 0:
        p = (i - 1) >> 1
        if hk[p] < key or (hk[p] == key and hv[p] < v):
            break
        hk[i] = hk[p]
        hv[i] = hv[p]
        i = p
    hk[i] = key
    hv[i] = v
    return size + 1


@kernel
def _heap_pop(hk: np.ndarray, hv: np.ndarray, size: int) -> int:
    """Remove the root (read ``hk[0], hv[0]`` before calling); returns the new size."""
    size -= 1
    key = hk[size]
    v = hv[size]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and (hk[c + 1] < hk[c] or (hk[c + 1] == hk[c] and hv[c + 1] < hv[c])):
            c += 1
        if key < hk[c] or (key == hk[c] and v < hv[c]):
            break
        hk[i] = hk[c]
        hv[i] = hv[c]
        i = c
    if size > 0:
        hk[i] = key
        hv[i] = v
    return size


@kernel
def _ready(
    w: int,
    needs_unit: np.ndarray,
    key: np.ndarray,
    fifo: bool,
    rk: np.ndarray,
    rv: np.ndarray,
    nr: int,
    instant: np.ndarray,
    ni: int,
    seq: float,
) -> tuple[int, int, float]:
    """``w`` is ready: into the unit heap (``rk, rv``, keyed by priority or arrival) or onto
    the stack of ops that hold no unit."""
    if needs_unit[w]:
        nr = _heap_push(rk, rv, nr, seq if fifo else key[w], w)
        seq += 1.0
    else:
        instant[ni] = w
        ni += 1
    return nr, ni, seq


@kernel
def _release(
    v: int,
    succ_ptr: np.ndarray,
    succ_idx: np.ndarray,
    indeg: np.ndarray,
    needs_unit: np.ndarray,
    key: np.ndarray,
    fifo: bool,
    rk: np.ndarray,
    rv: np.ndarray,
    nr: int,
    instant: np.ndarray,
    ni: int,
    seq: float,
) -> tuple[int, int, float]:
    """``v`` has finished: each successor whose last dependency this was becomes ready,
    into the unit heap (``rk, rv``) or onto the stack of ops that hold no unit."""
    for k in range(succ_ptr[v], succ_ptr[v + 1]):
        w = succ_idx[k]
        indeg[w] -= 1
        if indeg[w] == 0:
            nr, ni, seq = _ready(w, needs_unit, key, fifo, rk, rv, nr, instant, ni, seq)
    return nr, ni, seq


@kernel
def _list_arrays(
    d: np.ndarray, wants_unit: np.ndarray, pred_ptr: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What a list-scheduling kernel starts from: starts (zero), units (-1), which ops hold a
    unit (those that want one and take time) and each op's count of predecessors."""
    n = len(d)
    indeg = np.empty(n, dtype=np.int64)
    for v in range(n):
        indeg[v] = pred_ptr[v + 1] - pred_ptr[v]
    return np.zeros(n), np.full(n, -1, dtype=np.int64), (wants_unit != 0) & (d > 0), indeg


@kernel
def nondelay(
    units: int,
    d: np.ndarray,
    wants_unit: np.ndarray,
    key: np.ndarray,
    fifo: bool,
    pred_ptr: np.ndarray,
    succ_ptr: np.ndarray,
    succ_idx: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Graham's list scheduling: at every moment, free units take the best ready ops.

    ``units <= 0`` means unlimited. With ``fifo`` the key is ignored and ready ops are taken
    in the order they became ready. Ops that hold no unit start as soon as they are ready.
    Unit ids are handed out smallest first.
    """
    n = len(d)
    starts, unit_of, needs_unit, indeg = _list_arrays(d, wants_unit, pred_ptr)
    rk = np.empty(n)  # ready heap (unit-holding ops waiting for a unit)
    rv = np.empty(n, dtype=np.int64)
    nr = 0
    ek = np.empty(n)  # running ops by end time
    ev = np.empty(n, dtype=np.int64)
    ne = 0
    pool = units if units > 0 else max(n, 1)  # unlimited: as many ids as ops at most
    free_k = np.empty(pool)  # free unit ids (min-heap)
    free_v = np.empty(pool, dtype=np.int64)
    nf = 0
    for u in range(max(units, 0)):
        nf = _heap_push(free_k, free_v, nf, float(u), u)
    next_unit = max(units, 0)
    instant = np.empty(n, dtype=np.int64)  # ready ops that hold no unit (a stack)
    ni = 0
    seq = 0.0
    for v in range(n):
        if indeg[v] == 0:
            nr, ni, seq = _ready(v, needs_unit, key, fifo, rk, rv, nr, instant, ni, seq)
    t = 0.0
    done = 0
    while done < n:
        # ops that hold no unit start at once; zero-duration ones also finish at once
        while ni > 0:
            ni -= 1
            v = instant[ni]
            starts[v] = t
            if d[v] > 0:
                ne = _heap_push(ek, ev, ne, t + d[v], v)
                continue
            if wants_unit[v]:  # a zero-duration op holds nothing; name a unit anyway
                unit_of[v] = free_v[0] if nf > 0 else 0
            done += 1
            nr, ni, seq = _release(v, succ_ptr, succ_idx, indeg, needs_unit, key, fifo, rk, rv,
                                   nr, instant, ni, seq)  # fmt: skip
        # free units take the best ready ops
        while nr > 0 and (nf > 0 or units <= 0):
            v = rv[0]
            nr = _heap_pop(rk, rv, nr)
            if units > 0 or nf > 0:
                u = free_v[0]
                nf = _heap_pop(free_k, free_v, nf)
            else:
                u = next_unit
                next_unit += 1
            unit_of[v] = u
            starts[v] = t
            ne = _heap_push(ek, ev, ne, t + d[v], v)
        if done >= n or ne == 0:
            break
        # advance the clock to the next completion and finish everything ending then
        t = ek[0]
        while ne > 0 and ek[0] <= t:
            v = ev[0]
            ne = _heap_pop(ek, ev, ne)
            done += 1
            if unit_of[v] >= 0:
                nf = _heap_push(free_k, free_v, nf, float(unit_of[v]), unit_of[v])
            nr, ni, seq = _release(v, succ_ptr, succ_idx, indeg, needs_unit, key, fifo, rk, rv,
                                   nr, instant, ni, seq)  # fmt: skip
    return starts, unit_of

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
    starts = np.zeros(n)
    unit_of = np.full(n, -1, dtype=np.int64)
    needs_unit = (wants_unit != 0) & (d > 0)
    indeg = np.empty(n, dtype=np.int64)
    for v in range(n):
        indeg[v] = pred_ptr[v + 1] - pred_ptr[v]
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


@kernel
def insertion(
    units: int,
    d: np.ndarray,
    wants_unit: np.ndarray,
    key: np.ndarray,
    pred_ptr: np.ndarray,
    pred_idx: np.ndarray,
    succ_ptr: np.ndarray,
    succ_idx: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """HEFT-style placement: ops in priority order among those whose preds are placed; each
    goes to the unit where it can start earliest, in an idle gap between placed ops or after
    the last one (ties: lowest unit). ``units`` must be >= 1.

    Each unit keeps its idle gaps as a singly linked list in arrays, sorted by time; the open
    end after the unit's last op is ``tail[u]``. Gaps no op can use any more are dropped from
    the front of each list: every op not yet placed is ready no earlier than the earliest
    ready time ``low`` among the ops waiting in the heap (it descends from one of them), so
    a gap ending before ``low`` plus the shortest duration is dead, and the dead gaps are a
    prefix of the list (gaps are disjoint). Without this, graphs that leave a trail of
    small gaps behind (a chain with side ops) walked every gap for every op: quadratic.
    """
    n = len(d)
    starts = np.zeros(n)
    unit_of = np.full(n, -1, dtype=np.int64)
    needs_unit = (wants_unit != 0) & (d > 0)
    indeg = np.empty(n, dtype=np.int64)
    for v in range(n):
        indeg[v] = pred_ptr[v + 1] - pred_ptr[v]
    rk = np.empty(n)
    rv = np.empty(n, dtype=np.int64)
    nr = 0
    # each op's ready time (the latest end of its producers), set as it enters the heap;
    # the ready times of the ops waiting, in a second heap (entries of placed ops are stale)
    ready_at = np.zeros(n)
    tk = np.empty(n)
    tv = np.empty(n, dtype=np.int64)
    nt = 0
    placed = np.zeros(n, dtype=np.bool_)
    dmin = np.inf  # the shortest op that takes a unit: no gap shorter than it is ever used
    for v in range(n):
        if needs_unit[v] and d[v] < dmin:
            dmin = d[v]
    for v in range(n):
        if indeg[v] == 0:
            nr = _heap_push(rk, rv, nr, key[v], v)
            nt = _heap_push(tk, tv, nt, 0.0, v)
    k_units = max(units, 1)
    tail = np.zeros(k_units)
    gtail = np.zeros(k_units, dtype=np.int64)  # last gap of each unit (0: none)
    gs = np.empty(n + 1)  # gap start / end / next, node 0 unused
    ge = np.empty(n + 1)
    gn = np.zeros(n + 1, dtype=np.int64)
    head = np.zeros(k_units, dtype=np.int64)
    nodes = 1
    free_nodes = np.empty(n + 1, dtype=np.int64)
    nfree = 0
    while nr > 0:
        v = rv[0]
        nr = _heap_pop(rk, rv, nr)
        ready = ready_at[v]
        while nt > 0 and placed[tv[0]] and tv[0] != v:
            nt = _heap_pop(tk, tv, nt)
        low = tk[0]  # no op placed from here on is ready earlier (v's entry is still there)
        placed[v] = True
        for u in range(units):
            while head[u] != 0 and ge[head[u]] < low + dmin:
                g = head[u]
                head[u] = gn[g]
                if gtail[u] == g:
                    gtail[u] = 0
                free_nodes[nfree] = g
                nfree += 1
        if not needs_unit[v]:
            starts[v] = ready
            if wants_unit[v]:
                unit_of[v] = 0
        else:
            best = np.inf
            best_u = 0
            best_gap = 0
            best_prev = 0
            for u in range(units):
                prev = 0
                g = head[u]
                found = False
                while g != 0:
                    s = max(gs[g], ready)
                    if s + d[v] <= ge[g]:
                        if s < best:
                            best, best_u, best_gap, best_prev = s, u, g, prev
                        found = True
                        break
                    if gs[g] >= best:
                        break
                    prev = g
                    g = gn[g]
                if not found:
                    s = max(tail[u], ready)
                    if s < best:
                        best, best_u, best_gap, best_prev = s, u, 0, 0
            starts[v] = best
            unit_of[v] = best_u
            end = best + d[v]
            u = best_u
            if best_gap == 0:  # after the last op: the skipped stretch becomes a gap
                if best > tail[u]:
                    if nfree > 0:
                        nfree -= 1
                        g = free_nodes[nfree]
                    else:
                        g = nodes
                        nodes += 1
                    gs[g] = tail[u]
                    ge[g] = best
                    gn[g] = 0
                    if head[u] == 0:
                        head[u] = g
                    else:
                        gn[gtail[u]] = g
                    gtail[u] = g
                tail[u] = end
            else:  # split the gap [gs, ge) around [best, end)
                g = best_gap
                left = best > gs[g]
                right = end < ge[g]
                if left and right:
                    if nfree > 0:
                        nfree -= 1
                        h = free_nodes[nfree]
                    else:
                        h = nodes
                        nodes += 1
                    gs[h] = end
                    ge[h] = ge[g]
                    gn[h] = gn[g]
                    ge[g] = best
                    gn[g] = h
                    if gtail[u] == g:
                        gtail[u] = h
                elif left:
                    ge[g] = best
                elif right:
                    gs[g] = end
                else:  # the gap is used up: unlink it
                    if best_prev == 0:
                        head[u] = gn[g]
                    else:
                        gn[best_prev] = gn[g]
                    if gtail[u] == g:
                        gtail[u] = best_prev
                    free_nodes[nfree] = g
                    nfree += 1
        for k in range(succ_ptr[v], succ_ptr[v + 1]):
            w = succ_idx[k]
            indeg[w] -= 1
            if indeg[w] == 0:
                nr = _heap_push(rk, rv, nr, key[w], w)
                for j in range(pred_ptr[w], pred_ptr[w + 1]):
                    ready_at[w] = max(ready_at[w], starts[pred_idx[j]] + d[pred_idx[j]])
                nt = _heap_push(tk, tv, nt, ready_at[w], w)
    return starts, unit_of

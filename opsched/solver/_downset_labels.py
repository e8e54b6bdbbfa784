"""The label sweep of the down-set search (:mod:`opsched.solver.downsets`).

Array loops (see :mod:`opsched._jit`). A label is a decision point: the row ``D`` of the
started ops (in the table of :mod:`opsched.solver._downset_table`), the ops ``R`` still
running (sorted by index) with the time ``c`` each has left, and the time ``t``; a unit is
free. Labels are made layer by layer (layer ``L``: ``|D| = L``); within a layer, those with
more running ops first, since waiting for an end only removes running ops.

Labels are stored in flat arrays, each with its parent and the op it started (-1 for a
wait), so the schedule of the best final label is read back by walking to the root.

These kernels compile ``lookup`` (with its hash) and the other kernels they import from
:mod:`opsched.solver._downset_table` into themselves, and numba's on-disk cache checks only
this file's time stamp: a change to those must come with a change here
(:data:`TABLE_KERNELS`), or machine code cached earlier would run the old ones (with an
old hash, it finds no row). The same holds for the per-label steps, which live in
:mod:`opsched.solver._downset_label_steps` (:data:`STEP_KERNELS`).

The step "row plus op ``j``, looked up" is written out inline here and in the table's two
passes rather than called: as a kernel of its own (with the one-unit step test) it made
the table 5x slower (two million rows of ``bench_downset_table.py``: 1.35 -> 6.99 s).
"""

from __future__ import annotations

import numpy as np

from opsched._jit import clock, kernel
from opsched.solver._downset_label_steps import (
    _bound,
    _grow,
    _memory,
    _select,
    _store,
    _to_next_end,
    _undominated,
)
from opsched.solver._downset_table import eligible, has, lookup

#: :func:`opsched._jit.kernels_digest` of the ``_downset_table`` kernels these are compiled
#: with (checked by ``tests/test_jit_cache.py``; it had been a version number, bumped by hand).
TABLE_KERNELS = "e4ce21f901735bdd"
#: The same digest of the ``_downset_label_steps`` kernels, compiled in here too.
STEP_KERNELS = "46cb9244185d5796"


@kernel
def label_search(
    n: int,
    nw: int,
    k: int,
    keys: np.ndarray,
    table: np.ndarray,
    live: np.ndarray,
    work: np.ndarray,
    good: np.ndarray,
    tmax: np.ndarray,
    pm: np.ndarray,
    rm: np.ndarray,
    pred_ptr: np.ndarray,
    pred_idx: np.ndarray,
    dur: np.ndarray,
    out: np.ndarray,
    ws: np.ndarray,
    kept: np.ndarray,
    held: np.ndarray,
    dem: np.ndarray,
    rcap: np.ndarray,
    succ_tail: np.ndarray,
    total: int,
    free: int,
    ub: int,
    max_labels: int,
    beam: int,
    deadline: float,
) -> tuple[int, int, int, int, np.ndarray, np.ndarray, np.ndarray]:
    """Best makespan below ``ub`` over the labels on ``k`` units (module docstring).

    Memory is checked when an op of positive duration starts (its output and workspace
    join) and before time moves on; an instant op may pass over the cap for a moment,
    since another instant op started at the same time may free what it read. ``beam > 0``
    keeps only that many labels per layer, those of least lower bound (a heuristic).

    Returns the best makespan (``ub`` if none below it), its final label (-1 if none), the
    labels made, a status (0 done, 1 the label budget ran out, 2 the clock passed
    ``deadline``, a ``time.perf_counter()`` value looked at once a layer and every 65,536
    labels), and per label its time, its parent label and the op it started (-1 for a
    wait).
    """
    s = max(k - 1, 1)
    # about 37 bytes a label on 2 units, 57 on 4 (op indices fit int16: at most 1,000 ops)
    lrow = np.empty(max_labels, dtype=np.int32)
    lt = np.empty(max_labels, dtype=np.int64)
    lnr = np.empty(max_labels, dtype=np.int8)
    lr = np.empty((max_labels, s), dtype=np.int16)
    lc = np.empty((max_labels, s), dtype=np.int64)
    lpar = np.empty(max_labels, dtype=np.int32)
    lop = np.empty(max_labels, dtype=np.int16)
    llb = np.zeros(max_labels if beam > 0 else 1, dtype=np.int64)
    nres = len(rcap)
    cur = np.empty(1024, dtype=np.int64)  # labels of this layer
    nxt = np.empty(1024, dtype=np.int64)  # labels of the next one
    words = np.zeros(nw, dtype=np.int64)
    done = np.zeros(nw, dtype=np.int64)
    rr = np.zeros(k + 1, dtype=np.int64)
    cc = np.zeros(k + 1, dtype=np.int64)
    use = np.zeros(max(nres, 1), dtype=np.int64)
    best = ub
    best_label = -1
    lrow[0] = 0  # the root: nothing started, nothing running, time 0
    lt[0] = 0
    lnr[0] = 0
    lpar[0] = -1
    lop[0] = -1
    nl = 1
    cur[0] = 0
    ncur = 1
    nnxt = 0
    for layer in range(n + 1):
        if clock() > deadline:
            return best, best_label, nl, 2, lt[:nl], lpar[:nl], lop[:nl]
        if beam > 0 and ncur > beam:
            here = cur[:ncur]
            order = np.argsort(lt[here], kind="mergesort")
            order = order[np.argsort(llb[here[order]], kind="mergesort")]
            cur[:beam] = here[order[:beam]].copy()
            ncur = beam
        for nr in range(min(s, k - 1), -1, -1):
            sel = _select(cur, ncur, lnr, nr)
            if len(sel) == 0:
                continue
            alive = _undominated(sel, nr, s, n, lrow, lt, lr, lc)
            for q in range(len(sel)):
                if not alive[q]:
                    continue
                i = sel[q]
                row = lrow[i]
                t = lt[i]
                mem = _memory(i, nr, row, keys, nw, live, lr, pred_ptr, pred_idx, rm, out, ws,
                              kept, held, dem, use, done)  # fmt: skip
                over = mem > free  # only an instant op that frees memory can help now
                if layer == n:  # every op started: the makespan is the last end
                    if nr > 0 and over:
                        continue
                    end = t
                    for a in range(nr):
                        end = max(end, t + lc[i, a])
                    if end < best:
                        best = end
                        best_label = i
                    continue
                for j in range(n):
                    if has(keys[row], j) or not eligible(pm, j, done, nw):
                        continue
                    if dur[j] > 0:
                        if over or mem + out[j] + ws[j] > free:
                            continue
                        fits = True
                        for a in range(nres):
                            if use[a] + dem[a, j] > rcap[a]:
                                fits = False
                                break
                        if not fits:
                            continue
                    for w in range(nw):
                        words[w] = keys[row, w]
                    words[j >> 6] |= np.int64(1) << np.int64(j & 63)
                    row2 = lookup(keys, table, words, nw)
                    if row2 < 0 or not good[row2]:
                        continue  # no one-unit order finishes from there
                    m = 0  # the running ops after the start, by index
                    placed = dur[j] == 0
                    for a in range(nr):
                        if not placed and j < lr[i, a]:
                            rr[m] = j
                            cc[m] = dur[j]
                            m += 1
                            placed = True
                        rr[m] = lr[i, a]
                        cc[m] = lc[i, a]
                        m += 1
                    if not placed:
                        rr[m] = j
                        cc[m] = dur[j]
                        m += 1
                    t2 = t
                    if m == k:  # every unit busy: on to the next end
                        delta, m = _to_next_end(m, rr, cc)
                        t2 = t + delta
                    lb = _bound(t2, m, rr, cc, work[row2], total, k, tmax[row2], succ_tail)
                    if lb >= best:
                        continue
                    if nl == max_labels:
                        return best, best_label, nl, 1, lt[:nl], lpar[:nl], lop[:nl]
                    if nl & 0xFFFF == 0 and clock() > deadline:
                        return best, best_label, nl, 2, lt[:nl], lpar[:nl], lop[:nl]
                    _store(nl, row2, t2, m, rr, cc, i, j, lb, lrow, lt, lnr, lr, lc, lpar,
                           lop, llb)  # fmt: skip
                    nxt = _grow(nxt, nnxt + 1)
                    nxt[nnxt] = nl
                    nnxt += 1
                    nl += 1
                if nr > 0 and not over:  # wait for the next end
                    for a in range(nr):
                        rr[a] = lr[i, a]
                        cc[a] = lc[i, a]
                    delta, m = _to_next_end(nr, rr, cc)
                    lb = _bound(t + delta, m, rr, cc, work[row], total, k, tmax[row], succ_tail)
                    if lb >= best:
                        continue
                    if nl == max_labels:
                        return best, best_label, nl, 1, lt[:nl], lpar[:nl], lop[:nl]
                    if nl & 0xFFFF == 0 and clock() > deadline:
                        return best, best_label, nl, 2, lt[:nl], lpar[:nl], lop[:nl]
                    _store(nl, row, t + delta, m, rr, cc, i, -1, lb, lrow, lt, lnr, lr, lc,
                           lpar, lop, llb)  # fmt: skip
                    cur = _grow(cur, ncur + 1)
                    cur[ncur] = nl
                    ncur += 1
                    nl += 1
        cur, nxt = nxt, cur
        ncur = nnxt
        nnxt = 0
    return best, best_label, nl, 0, lt[:nl], lpar[:nl], lop[:nl]

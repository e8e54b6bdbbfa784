"""The per-label steps of the down-set label sweep, array kernels (see :mod:`opsched._jit`)
that :func:`opsched.solver._downset_labels.label_search` calls on its flat label arrays:
picking a layer's labels by how many ops they run and dropping the dominated ones, the
bytes live at a label, moving time on to the next end, the lower bound that prunes a
label, growing a work list, and writing a new label. The sweep compiles them into itself,
so a change here must come with a new ``STEP_KERNELS`` digest there.
"""

from __future__ import annotations

import numpy as np

from opsched._jit import kernel


@kernel
def _grow(a: np.ndarray, need: int) -> np.ndarray:
    if need <= len(a):
        return a
    b = np.empty(max(need, 2 * len(a)), dtype=a.dtype)
    b[: len(a)] = a
    return b


@kernel
def _select(cur: np.ndarray, ncur: int, lnr: np.ndarray, nr: int) -> np.ndarray:
    """The labels of ``cur[:ncur]`` with ``nr`` running ops."""
    cnt = 0
    for q in range(ncur):
        if lnr[cur[q]] == nr:
            cnt += 1
    sel = np.empty(cnt, dtype=np.int64)
    cnt = 0
    for q in range(ncur):
        if lnr[cur[q]] == nr:
            sel[cnt] = cur[q]
            cnt += 1
    return sel


@kernel
def _undominated(
    sel: np.ndarray,
    nr: int,
    s: int,
    n: int,
    lrow: np.ndarray,
    lt: np.ndarray,
    lr: np.ndarray,
    lc: np.ndarray,
) -> np.ndarray:
    """1 for each label of ``sel`` that no other of the same row and running ops dominates
    (frees its unit no later and ends each running op no later; ties keep the first)."""
    cnt = len(sel)
    key = np.empty(cnt, dtype=np.int64)
    sumc = np.empty(cnt, dtype=np.int64)
    base = n + 1
    for q in range(cnt):
        i = sel[q]
        kv = np.int64(lrow[i])
        sc = 0
        for a in range(s):
            kv = kv * base + (lr[i, a] if a < nr else n)
            if a < nr:
                sc += lc[i, a]
        key[q] = kv
        sumc[q] = sc
    # by group, then time, then the summed remaining times
    o = np.argsort(sumc, kind="mergesort")
    o = o[np.argsort(lt[sel[o]], kind="mergesort")]
    o = o[np.argsort(key[o], kind="mergesort")]
    alive = np.zeros(cnt, dtype=np.int8)
    g0 = 0
    while g0 < cnt:
        g1 = g0
        while g1 < cnt and key[o[g1]] == key[o[g0]]:
            g1 += 1
        if nr <= 1:
            low = -1  # least t + c among those kept (t ascends within the group)
            for q in range(g0, g1):
                i = sel[o[q]]
                end = lt[i] + (lc[i, 0] if nr == 1 else 0)
                if low < 0 or end < low:
                    alive[o[q]] = 1
                    low = end
        else:
            for q in range(g0, g1):
                i = sel[o[q]]
                dominated = False
                for p in range(g0, q):
                    j = sel[o[p]]
                    if not alive[o[p]] or lt[j] > lt[i]:
                        continue
                    worse = True
                    for a in range(nr):
                        if lt[j] + lc[j, a] > lt[i] + lc[i, a]:
                            worse = False
                            break
                    if worse:
                        dominated = True
                        break
                if not dominated:
                    alive[o[q]] = 1
        g0 = g1
    return alive


@kernel
def _memory(
    i: int,
    nr: int,
    row: int,
    keys: np.ndarray,
    nw: int,
    live: np.ndarray,
    lr: np.ndarray,
    pred_ptr: np.ndarray,
    pred_idx: np.ndarray,
    rm: np.ndarray,
    out: np.ndarray,
    ws: np.ndarray,
    kept: np.ndarray,
    held: np.ndarray,
    dem: np.ndarray,
    use: np.ndarray,
    done: np.ndarray,
) -> int:
    """Bytes live at label ``i`` (row ``row``), with ``done`` set to its ended ops and
    ``use`` to the named resources its running ops hold.

    The one-unit live bytes of ``D`` (its ops all ended), less what the running ops keep,
    plus their outputs and workspaces, plus the inputs only they still read.
    """
    for w in range(nw):
        done[w] = keys[row, w]
    mem = live[row]
    use[:] = 0
    for a in range(nr):
        r = lr[i, a]
        done[r >> 6] &= ~(np.int64(1) << np.int64(r & 63))
        mem += out[r] + ws[r] - kept[r]
        for b in range(dem.shape[0]):
            use[b] += dem[b, r]
    for a in range(nr):
        r = lr[i, a]
        for p in range(pred_ptr[r], pred_ptr[r + 1]):
            u = pred_idx[p]
            if held[u]:
                continue
            seen = False  # an input shared with an earlier running op, counted there
            for a2 in range(a):
                r2 = lr[i, a2]
                for p2 in range(pred_ptr[r2], pred_ptr[r2 + 1]):
                    if pred_idx[p2] == u:
                        seen = True
            if seen:
                continue
            inside = True
            for w in range(nw):
                if rm[u, w] & ~keys[row, w]:
                    inside = False
                    break
            if inside:
                mem += out[u]
    return mem


@kernel
def _to_next_end(m: int, rr: np.ndarray, cc: np.ndarray) -> tuple[int, int]:
    """Move time on to the next end of the ``m`` running ops ``rr`` (remaining ``cc``):
    returns the step and how many still run (compacted in place)."""
    delta = cc[0]
    for a in range(1, m):
        delta = min(delta, cc[a])
    m2 = 0
    for a in range(m):
        if cc[a] > delta:
            rr[m2] = rr[a]
            cc[m2] = cc[a] - delta
            m2 += 1
    return delta, m2


@kernel
def _bound(
    t: int,
    m: int,
    rr: np.ndarray,
    cc: np.ndarray,
    done_work: int,
    total: int,
    k: int,
    tail: int,
    succ_tail: np.ndarray,
) -> int:
    """A lower bound on the makespan of any schedule that completes a label: the work left
    over the units, the longest tail of an op not started, each running op's end plus the
    longest tail after it."""
    left = total - done_work
    lb = t + tail
    for a in range(m):
        left += cc[a]
        lb = max(lb, t + cc[a] + succ_tail[rr[a]])
    return max(lb, t + (left + k - 1) // k)


@kernel
def _store(
    nl: int,
    row: int,
    t: int,
    m: int,
    rr: np.ndarray,
    cc: np.ndarray,
    parent: int,
    op: int,
    lb: int,
    lrow: np.ndarray,
    lt: np.ndarray,
    lnr: np.ndarray,
    lr: np.ndarray,
    lc: np.ndarray,
    lpar: np.ndarray,
    lop: np.ndarray,
    llb: np.ndarray,
) -> None:
    """Write label ``nl``."""
    lrow[nl] = row
    lt[nl] = t
    lnr[nl] = m
    for a in range(m):
        lr[nl, a] = rr[a]
        lc[nl, a] = cc[a]
    lpar[nl] = parent
    lop[nl] = op
    if len(llb) > 1:
        llb[nl] = lb

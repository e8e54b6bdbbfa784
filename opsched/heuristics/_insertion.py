"""The insertion kernel (HEFT's placement, :func:`insertion`) and an index over its idle
gaps, so that an op ready late does not walk every earlier gap of a unit. They share one
file so that numba's on-disk cache, which checks only the file of the function it caches,
sees a change to either.

Each unit keeps its gaps as a linked list sorted by time; they are disjoint, so their ends
rise along the list. The index holds every :data:`STRIDE`-th gap of each unit with its end
and its node's *version* (bumped whenever the kernel frees the node). A gap of the index
whose version still matches is still in its unit's list, and its end can only have shrunk
since (a placement splits a gap or cuts it short, never lengthens it), so every gap before
it in the list ends before that end. An op that cannot end before ``target`` (its ready time
plus its duration) can therefore start its walk at the last such gap that ends before
``target``: none of the gaps it skips could hold it (nor that gap itself, so the walk goes
on from the gap after it), and the walk finds the same gap it would have found from the
head.

Past that point every gap ends at or after ``target`` when indexed, and one that starts
after the op's ready time holds it only if it is at least as long as the op. So each entry
also keeps the longest gap of its *block* (its gap and those after it up to the next
entry), in a max tree over the entries (:func:`first_block`). Gaps only shrink or split
within their block, and new ones are appended after a unit's last entry, whose block is
taken as unbounded, so a block's stored length stays an upper bound. A walk that reaches an
entry jumps to the first block from there that is long enough, past blocks of gaps too
short for the op (which ``perturbed`` priorities leave by the thousand: a walk of gaps
after the ready time, still quadratic with the ends alone).

The kernel rebuilds the index when the gaps walked past without holding their op add up to
more than twice the gaps there are, so rebuilding costs no more than the walking it saves.
Before the index, priorities far from topological order (``random``, ``perturbed``) left
long lists of usable gaps behind the ops being placed, and every op ready late walked them
all: 19-44 s at 300,000 ops (docs/heuristics.md).
"""

from __future__ import annotations

import numpy as np

from opsched._jit import kernel
from opsched.heuristics._kernels import _heap_pop, _heap_push, _list_arrays

__all__ = ["STRIDE", "first_block", "gap_index", "gap_start", "insertion"]

#: :func:`opsched._jit.kernels_digest` of :mod:`opsched.heuristics._kernels`, whose heap and
#: set-up kernels the insertion kernel compiles into itself: a change there fails
#: ``tests/test_jit_cache.py`` until this is updated, which makes numba compile these afresh.
LIST_KERNELS = "7f14de220da3c511"

#: One index entry per this many gaps of a unit.
STRIDE = 8


@kernel
def gap_index(
    units: int,
    head: np.ndarray,
    gn: np.ndarray,
    gs: np.ndarray,
    ge: np.ndarray,
    ver: np.ndarray,
    cp_node: np.ndarray,
    cp_ver: np.ndarray,
    cp_ge: np.ndarray,
    cp_off: np.ndarray,
    cp_len: np.ndarray,
    idx_of: np.ndarray,
    st: np.ndarray,
) -> tuple[int, int]:
    """Rebuild the index: every :data:`STRIDE`-th gap of each unit, from its head, with its
    version and end; in ``st`` (a max tree over the entries, leaves from ``size``) the
    longest gap of each entry's block (the entry's gap and those after it up to the next
    entry; infinite for a unit's last block, which also gets the gaps appended later).
    Returns the number of gaps in all the lists and ``size``."""
    pos = 0
    total = 0
    for u in range(units):
        cp_off[u] = pos
        g = head[u]
        k = 0
        while g != 0:
            if k % STRIDE == 0:
                cp_node[pos] = g
                cp_ver[pos] = ver[g]
                cp_ge[pos] = ge[g]
                idx_of[g] = pos
                st[pos] = 0.0  # the block's longest gap, in the leaves' places for now
                pos += 1
            if ge[g] - gs[g] > st[pos - 1]:
                st[pos - 1] = ge[g] - gs[g]
            k += 1
            g = gn[g]
        cp_len[u] = pos - cp_off[u]
        if cp_len[u] > 0:
            st[pos - 1] = np.inf
        total += k
    size = 1
    while size < pos:
        size *= 2
    for i in range(pos - 1, -1, -1):  # move the blocks' lengths to the leaves
        st[size + i] = st[i]
    for i in range(size + pos, 2 * size):
        st[i] = -np.inf
    for i in range(size - 1, 0, -1):
        st[i] = max(st[2 * i], st[2 * i + 1])
    return total, size


@kernel
def gap_start(
    u: int,
    target: float,
    head: np.ndarray,
    ver: np.ndarray,
    cp_node: np.ndarray,
    cp_ver: np.ndarray,
    cp_ge: np.ndarray,
    cp_off: np.ndarray,
    cp_len: np.ndarray,
) -> int:
    """The gap of unit ``u`` to start a walk at: the last indexed gap, still in the list,
    that ended before ``target`` when indexed (every gap before it ends before ``target``
    too); the list's head when there is none."""
    lo = cp_off[u]
    a = lo
    b = lo + cp_len[u]
    while a < b:  # the first entry whose end is not before target
        m = (a + b) >> 1
        if cp_ge[m] < target:
            a = m + 1
        else:
            b = m
    i = a - 1
    while i >= lo:
        g = cp_node[i]
        if ver[g] == cp_ver[i]:
            return g
        i -= 1
    return head[u]


@kernel
def first_block(st: np.ndarray, size: int, a: int, b: int, x: float, stack: np.ndarray) -> int:
    """The first entry in ``[a, b)`` whose block holds a gap at least ``x`` long (the max
    tree ``st`` of :func:`gap_index`), or -1: the usual walk down a segment tree, the left
    end's nodes in order, then the right end's in reverse."""
    lo = a + size
    hi = b + size
    ns = 0
    node = -1
    while lo < hi:
        if lo & 1:
            if st[lo] >= x:
                node = lo
                break
            lo += 1
        if hi & 1:
            hi -= 1
            stack[ns] = hi
            ns += 1
        lo >>= 1
        hi >>= 1
    if node < 0:
        for i in range(ns - 1, -1, -1):
            if st[stack[i]] >= x:
                node = stack[i]
                break
    if node < 0:
        return -1
    while node < size:
        node = 2 * node if st[2 * node] >= x else 2 * node + 1
    return node - size


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

    Each unit keeps its idle gaps as a doubly linked list in arrays, sorted by time; the open
    end after the unit's last op is ``tail[u]``. Gaps no op can use any more are dropped from
    the front of each list: every op not yet placed is ready no earlier than the earliest
    ready time ``low`` among the ops waiting in the heap (it descends from one of them), so
    a gap ending before ``low`` plus the shortest duration is dead, and the dead gaps are a
    prefix of the list (gaps are disjoint). Without this, graphs that leave a trail of
    small gaps behind (a chain with side ops) walked every gap for every op: quadratic.
    """
    n = len(d)
    starts, unit_of, needs_unit, indeg = _list_arrays(d, wants_unit, pred_ptr)
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
    gs = np.empty(n + 1)  # gap start / end / next / previous, node 0 unused
    ge = np.empty(n + 1)
    gn = np.zeros(n + 1, dtype=np.int64)
    gp = np.zeros(n + 1, dtype=np.int64)
    head = np.zeros(k_units, dtype=np.int64)
    nodes = 1
    free_nodes = np.empty(n + 1, dtype=np.int64)
    nfree = 0
    # the gap index (module docstring): a node's version changes when it is freed
    ver = np.zeros(n + 1, dtype=np.int64)
    cap = n + k_units + 1
    cp_node = np.zeros(cap, dtype=np.int64)
    cp_ver = np.zeros(cap, dtype=np.int64)
    cp_ge = np.zeros(cap)
    cp_off = np.zeros(k_units, dtype=np.int64)
    cp_len = np.zeros(k_units, dtype=np.int64)
    idx_of = np.zeros(n + 1, dtype=np.int64)  # a node's entry, if cp_node there is the node
    tree = 1
    while tree < cap:
        tree *= 2
    st = np.zeros(2 * tree)
    size = 1
    stack = np.empty(64, dtype=np.int64)
    wasted = 0  # gaps walked past without holding their op, and stale entries looked at
    indexed = 0  # gaps in all lists when the index was last built
    horizon = 0.0  # the latest end so far (bounds every time the kernel compares)
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
                if head[u] != 0:
                    gp[head[u]] = 0
                if gtail[u] == g:
                    gtail[u] = 0
                ver[g] += 1
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
            target = ready + d[v]  # a gap ending before this cannot hold v
            # a block whose longest gap is shorter than this cannot hold v (the margin
            # covers the rounding of gs + d <= ge against ge - gs)
            need = d[v] - 1e-12 * (horizon + d[v])
            for u in range(units):
                g = head[u]
                hi = cp_off[u] + cp_len[u]
                if cp_len[u] > 0:
                    c = gap_start(u, target, head, ver, cp_node, cp_ver, cp_ge, cp_off, cp_len)
                    if c != g:  # c ends before target, so v fits neither c nor any gap before
                        g = gn[c]
                found = False
                while g != 0:
                    s = max(gs[g], ready)
                    if s + d[v] <= ge[g]:
                        if s < best:
                            best, best_u, best_gap = s, u, g
                        found = True
                        break
                    if gs[g] >= best:
                        break
                    wasted += 1
                    i = idx_of[g]
                    nxt = gn[g]
                    # an entry of the index (past hi: other units' or left from an older index)
                    if i < hi and cp_node[i] == g and cp_ver[i] == ver[g]:
                        # an entry: skip to the first block, from its own, long enough for v
                        j = first_block(st, size, i, hi, need, stack)
                        while j > i:  # that block's entry, or the last live one before it
                            if ver[cp_node[j]] == cp_ver[j]:
                                nxt = cp_node[j]
                                break
                            wasted += 1
                            j -= 1
                    g = nxt
                if not found:
                    s = max(tail[u], ready)
                    if s < best:
                        best, best_u, best_gap = s, u, 0
            starts[v] = best
            unit_of[v] = best_u
            end = best + d[v]
            if end > horizon:
                horizon = end
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
                    gp[g] = gtail[u]
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
                    gp[h] = g
                    if gn[h] != 0:
                        gp[gn[h]] = h
                    ge[g] = best
                    gn[g] = h
                    if gtail[u] == g:
                        gtail[u] = h
                elif left:
                    ge[g] = best
                elif right:
                    gs[g] = end
                else:  # the gap is used up: unlink it
                    prev = gp[g]
                    if prev == 0:
                        head[u] = gn[g]
                    else:
                        gn[prev] = gn[g]
                    if gn[g] != 0:
                        gp[gn[g]] = prev
                    if gtail[u] == g:
                        gtail[u] = prev
                    ver[g] += 1
                    free_nodes[nfree] = g
                    nfree += 1
            if wasted > 2 * indexed + 64:  # the fruitless walking outgrew a rebuild
                indexed, size = gap_index(units, head, gn, gs, ge, ver, cp_node, cp_ver, cp_ge,
                                          cp_off, cp_len, idx_of, st)  # fmt: skip
                wasted = 0
        for k in range(succ_ptr[v], succ_ptr[v + 1]):
            w = succ_idx[k]
            indeg[w] -= 1
            if indeg[w] == 0:
                nr = _heap_push(rk, rv, nr, key[w], w)
                for j in range(pred_ptr[w], pred_ptr[w + 1]):
                    ready_at[w] = max(ready_at[w], starts[pred_idx[j]] + d[pred_idx[j]])
                nt = _heap_push(tk, tv, nt, ready_at[w], w)
    return starts, unit_of

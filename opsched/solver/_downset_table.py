"""The down-set table of the down-set search (:mod:`opsched.solver.downsets`).

Array loops (see :mod:`opsched._jit`). A set of ops is a row of ``nw`` int64 words (bit
``v % 64`` of word ``v // 64``). Rows live in one table, found again through an
open-addressing hash on their words. Every number the hash touches stays below 2**56, so
the interpreted kernels (NumPy scalars) never overflow.

:func:`downset_table` enumerates the down-sets a one-unit order can reach within the memory
cap, layer by layer (layer ``L`` holds the sets of ``L`` ops), and marks the ones from which
such an order can still finish; :mod:`opsched.solver._downset_labels` walks them again with
the ops running at each decision point.
"""

from __future__ import annotations

import numpy as np

from opsched._jit import clock, kernel

_M1 = 0xCC9E2D  # odd multipliers below 2**24: a product with a 32-bit value stays < 2**56
_M2 = 0x85EBCB
_M3 = 0xC2B2AF
_LOW32 = 0xFFFFFFFF


@kernel
def _row_hash(words: np.ndarray, nw: int, mask: int) -> int:
    """A 32-bit hash of a row, mixed so that similar sets land far apart: multiply and
    xor-shift rounds, as in MurmurHash's finaliser. (A plain polynomial hash modulo a prime
    maps families of sets that differ in a few bits onto runs of nearby slots, and linear
    probing then walks those runs: on a 50-op layered graph, 400,000 rows took 1.5 s and
    two million did not finish in 30 s.) A change here, or in any kernel of this module
    that :mod:`opsched.solver._downset_labels` imports, must update its ``TABLE_KERNELS``
    (``tests/test_jit_cache.py`` says to): its kernels compile these into theirs."""
    h = 0
    for w in range(nw):
        x = words[w]
        for half in (x & _LOW32, (x >> 32) & _LOW32):
            h = ((h ^ half) * _M1) & _LOW32
            h ^= h >> 15
    h ^= h >> 16
    h = (h * _M2) & _LOW32
    h ^= h >> 13
    h = (h * _M3) & _LOW32
    h ^= h >> 16
    return h & mask


@kernel
def lookup(keys: np.ndarray, table: np.ndarray, words: np.ndarray, nw: int) -> int:
    """Row of the set ``words``, or -1."""
    mask = len(table) - 1
    s = _row_hash(words, nw, mask)
    while True:
        r = table[s]
        if r < 0:
            return -1
        same = True
        for w in range(nw):
            if keys[r, w] != words[w]:
                same = False
                break
        if same:
            return r
        s = (s + 1) & mask


@kernel
def _insert(keys: np.ndarray, table: np.ndarray, words: np.ndarray, nw: int, row: int) -> None:
    mask = len(table) - 1
    s = _row_hash(words, nw, mask)
    while table[s] >= 0:
        s = (s + 1) & mask
    table[s] = row
    for w in range(nw):
        keys[row, w] = words[w]


@kernel
def eligible(pm: np.ndarray, j: int, done: np.ndarray, nw: int) -> bool:
    """Every predecessor of ``j`` (mask ``pm[j]``) is in ``done``."""
    for w in range(nw):  # noqa: SIM110 (a loop numba compiles)
        if pm[j, w] & ~done[w]:
            return False
    return True


@kernel
def has(words: np.ndarray, v: int) -> bool:
    return ((words[v >> 6] >> (v & 63)) & 1) == 1


@kernel
def freed(
    j: int,
    words: np.ndarray,
    nw: int,
    pred_ptr: np.ndarray,
    pred_idx: np.ndarray,
    rm: np.ndarray,
    out: np.ndarray,
    held: np.ndarray,
) -> int:
    """Bytes of ``j``'s inputs whose readers all lie in ``words`` (freed once they ran)."""
    f = 0
    for p in range(pred_ptr[j], pred_ptr[j + 1]):
        u = pred_idx[p]
        if held[u]:
            continue
        inside = True
        for w in range(nw):
            if rm[u, w] & ~words[w]:
                inside = False
                break
        if inside:
            f += out[u]
    return f


@kernel
def downset_table(
    n: int,
    nw: int,
    pm: np.ndarray,
    rm: np.ndarray,
    pred_ptr: np.ndarray,
    pred_idx: np.ndarray,
    dur: np.ndarray,
    out: np.ndarray,
    need: np.ndarray,
    kept: np.ndarray,
    held: np.ndarray,
    free: int,
    max_rows: int,
    deadline: float,
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """The down-sets one-unit orders reach within ``free`` bytes, and which can finish.

    Returns ``keys`` (row words), ``table`` (hash slots), the row count, ``start`` (first row
    of each layer, ``n + 2`` entries), ``live`` (bytes held once a row's ops have run),
    ``work`` (their summed duration), ``good`` (1 where a one-unit order within ``free`` can
    still run every other op) and a status: 0 done, 1 the row budget ran out, or the rows
    made grew past twice their even share of it (``max_rows`` times the layers done over
    ``n``) once past an eighth of it, 2 the clock passed ``deadline`` (a
    ``time.perf_counter()`` value, looked at once a layer of either pass and every 65,536
    rows).
    """
    size = 1
    while size < 2 * max_rows:
        size *= 2
    keys = np.zeros((max_rows, nw), dtype=np.int64)
    table = np.full(size, -1, dtype=np.int64)
    live = np.zeros(max_rows, dtype=np.int64)
    work = np.zeros(max_rows, dtype=np.int64)
    start = np.zeros(n + 2, dtype=np.int64)
    words = np.zeros(nw, dtype=np.int64)
    _insert(keys, table, words, nw, 0)
    rows = 1
    start[1] = 1
    for layer in range(n):
        if clock() > deadline:
            return keys, table, rows, start, live, work, np.zeros(0, np.int8), 2
        for row in range(start[layer], start[layer + 1]):
            for j in range(n):
                if has(keys[row], j) or not eligible(pm, j, keys[row], nw):
                    continue
                if dur[j] > 0 and live[row] + need[j] > free:
                    continue
                for w in range(nw):
                    words[w] = keys[row, w]
                words[j >> 6] |= np.int64(1) << np.int64(j & 63)
                if lookup(keys, table, words, nw) >= 0:
                    continue
                if rows == max_rows:
                    return keys, table, rows, start, live, work, np.zeros(0, np.int8), 1
                if rows & 0xFFFF == 0 and clock() > deadline:
                    return keys, table, rows, start, live, work, np.zeros(0, np.int8), 2
                _insert(keys, table, words, nw, rows)
                live[rows] = (
                    live[row] + kept[j] - freed(j, words, nw, pred_ptr, pred_idx, rm, out, held)
                )
                work[rows] = work[row] + dur[j]
                rows += 1
        start[layer + 2] = rows
        if 8 * rows > max_rows and rows * n > 2 * max_rows * (layer + 2):
            # twice its even share of the budget after these layers: the budget would run
            # out (the counts of a wide graph grow layer on layer), so stop now
            return keys, table, rows, start, live, work, np.zeros(0, np.int8), 1
    good = np.zeros(rows, dtype=np.int8)
    if start[n + 1] > start[n]:  # the set of every op was reached
        good[start[n]] = 1
    for layer in range(n - 1, -1, -1):
        if clock() > deadline:
            return keys, table, rows, start, live, work, np.zeros(0, np.int8), 2
        for row in range(start[layer], start[layer + 1]):
            for j in range(n):
                if has(keys[row], j) or not eligible(pm, j, keys[row], nw):
                    continue
                if dur[j] > 0 and live[row] + need[j] > free:
                    continue
                for w in range(nw):
                    words[w] = keys[row, w]
                words[j >> 6] |= np.int64(1) << np.int64(j & 63)
                nxt = lookup(keys, table, words, nw)
                if nxt >= 0 and good[nxt]:
                    good[row] = 1
                    break
    return keys, table, rows, start, live, work, good, 0


@kernel
def tail_max(
    keys: np.ndarray, rows: int, nw: int, by_tail: np.ndarray, tail: np.ndarray
) -> np.ndarray:
    """For each row, the longest tail (b-level) among the ops not in it (0 if none)."""
    res = np.zeros(rows, dtype=np.int64)
    for row in range(rows):
        for v in by_tail:  # ops by decreasing tail: the first one missing is the longest
            if not has(keys[row], v):
                res[row] = tail[v]
                break
    return res

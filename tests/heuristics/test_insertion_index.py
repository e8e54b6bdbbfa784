"""The insertion kernel with its gap index (opsched.heuristics._gaps) against a plain
reference: each op, in priority order among the ready ones, at the earliest start any unit's
idle time allows (ties: the lowest unit). Priorities far from topological order are the
case the index serves: they leave long lists of usable gaps behind."""

from __future__ import annotations

import heapq

import numpy as np
import pytest

from opsched.heuristics._insertion import insertion
from opsched.ir import OpGraph
from opsched.zoo.generators import gnp, layered


def reference(units: int, d: np.ndarray, wants: np.ndarray, key: np.ndarray,
              g: OpGraph) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    n = len(d)
    preds = [g.pred_idx[g.pred_ptr[v] : g.pred_ptr[v + 1]].tolist() for v in range(n)]
    left = [len(p) for p in preds]
    heap = [(float(key[v]), v) for v in range(n) if not left[v]]
    heapq.heapify(heap)
    busy: list[list[tuple[float, float]]] = [[] for _ in range(units)]
    starts, unit = np.zeros(n), np.full(n, -1)
    while heap:
        _, v = heapq.heappop(heap)
        ready = max((starts[u] + d[u] for u in preds[v]), default=0.0)
        if not (wants[v] and d[v] > 0):
            starts[v], unit[v] = ready, (0 if wants[v] else -1)
        else:
            best, best_u = np.inf, 0
            for u in range(units):
                t = ready
                for bs, be in busy[u]:  # sorted, disjoint
                    if t + d[v] <= bs:
                        break
                    t = max(t, be)
                if t < best:
                    best, best_u = t, u
            starts[v], unit[v] = best, best_u
            busy[best_u].append((best, best + d[v]))
            busy[best_u].sort()
        for w in g.succ_idx[g.succ_ptr[v] : g.succ_ptr[v + 1]].tolist():
            left[w] -= 1
            if not left[w]:
                heapq.heappush(heap, (float(key[w]), w))
    return starts, unit


@pytest.mark.parametrize("seed", range(6))
def test_indexed_insertion_equals_the_plain_placement(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 1500 if seed < 3 else 600  # enough gaps for the index to be built and used
    g = layered(n, seed=seed) if seed % 2 == 0 else gnp(n, 0.01, seed=seed)
    d = g.durations.copy()
    if seed % 3 == 1:  # fractional durations, some zero
        d = np.where(rng.random(n) < 0.1, 0.0, rng.random(n) * 5)
    wants = (rng.random(n) < 0.95).astype(np.int64)
    key = rng.random(n)  # random priorities: far from topological order
    units = [1, 2, 3, 8][seed % 4]
    got = insertion(units, d, wants, key, g.pred_ptr, g.pred_idx, g.succ_ptr, g.succ_idx)
    want = reference(units, d, wants, key, g)
    assert np.array_equal(got[1], want[1])
    assert np.array_equal(got[0], want[0])


@pytest.mark.parametrize("seed", range(4))
def test_skipping_blocks_of_short_gaps_equals_the_plain_placement(seed: int) -> None:
    # b-level priorities made a little noisy ("perturbed") and durations spread over two
    # orders of magnitude leave long runs of gaps too short for the op being placed, which
    # the walk jumps over by the blocks' longest gaps
    from opsched.analysis.ranks import priority

    rng = np.random.default_rng(100 + seed)
    n = 2000
    g = layered(n, seed=seed)
    d = np.round(np.exp(rng.uniform(0, np.log(100), n)), 1 if seed % 2 else 0)
    if seed == 3:
        d[rng.random(n) < 0.05] = 0.0
    key = -np.asarray(priority(g, "perturbed", seed=seed), dtype=float)
    wants = np.ones(n, dtype=np.int64)
    units = [2, 4, 8, 3][seed]
    got = insertion(units, d, wants, key, g.pred_ptr, g.pred_idx, g.succ_ptr, g.succ_idx)
    want = reference(units, d, wants, key, g)
    assert np.array_equal(got[1], want[1])
    assert np.array_equal(got[0], want[0])


def test_first_block_finds_the_first_long_enough_entry() -> None:
    from opsched.heuristics._insertion import first_block

    lengths = np.array([3.0, 1.0, 7.0, 2.0, 5.0, 1.0])
    size = 8
    st = np.full(2 * size, -np.inf)
    st[size : size + len(lengths)] = lengths
    for i in range(size - 1, 0, -1):
        st[i] = max(st[2 * i], st[2 * i + 1])
    stack = np.empty(64, dtype=np.int64)
    for a in range(6):
        for b in range(a, 7):
            for x in (0.5, 2.0, 4.0, 6.0, 8.0):
                want = next((j for j in range(a, b) if lengths[j] >= x), -1)
                assert first_block(st, size, a, b, x, stack) == want, (a, b, x)

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

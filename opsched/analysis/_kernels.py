"""Array loops behind the analysis functions (see :mod:`opsched._jit`)."""

from __future__ import annotations

import numpy as np

from opsched._jit import kernel


@kernel
def kahn_order(
    n: int, pred_ptr: np.ndarray, succ_ptr: np.ndarray, succ_idx: np.ndarray
) -> np.ndarray:
    """Stable Kahn order (FIFO queue); shorter than ``n`` if the graph has a cycle."""
    indeg = np.empty(n, dtype=np.int64)
    for v in range(n):
        indeg[v] = pred_ptr[v + 1] - pred_ptr[v]
    queue = np.empty(n, dtype=np.int64)
    tail = 0
    for v in range(n):
        if indeg[v] == 0:
            queue[tail] = v
            tail += 1
    head = 0
    while head < tail:
        u = queue[head]
        head += 1
        for k in range(succ_ptr[u], succ_ptr[u + 1]):
            w = succ_idx[k]
            indeg[w] -= 1
            if indeg[w] == 0:
                queue[tail] = w
                tail += 1
    return queue[:tail]


@kernel
def forward_longest(
    order: np.ndarray, d: np.ndarray, pred_ptr: np.ndarray, pred_idx: np.ndarray
) -> np.ndarray:
    """t-level: the longest path ending just before each op (ASAP start)."""
    est = np.zeros(len(d))
    for v in order:
        best = 0.0
        for k in range(pred_ptr[v], pred_ptr[v + 1]):
            u = pred_idx[k]
            f = est[u] + d[u]
            if f > best:
                best = f
        est[v] = best
    return est


@kernel
def backward_longest(
    order: np.ndarray,
    d: np.ndarray,
    succ_ptr: np.ndarray,
    succ_idx: np.ndarray,
    edge_cost: np.ndarray,
) -> np.ndarray:
    """b-level: longest path from each op's start to the end, its duration included.

    ``edge_cost[v]`` (may be all zero) is added on every edge leaving ``v``: the upward rank
    of HEFT with a communication cost per produced tensor.
    """
    bl = np.zeros(len(d))
    for i in range(len(order) - 1, -1, -1):
        v = order[i]
        best = 0.0
        for k in range(succ_ptr[v], succ_ptr[v + 1]):
            b = bl[succ_idx[k]] + edge_cost[v]
            if b > best:
                best = b
        bl[v] = best + d[v]
    return bl

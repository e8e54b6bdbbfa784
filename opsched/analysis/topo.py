"""Topological order (Kahn's algorithm, stable)."""

from __future__ import annotations

from collections import deque

import numpy as np

from opsched.ir.graph import OpGraph

__all__ = ["topo_indices", "topological_order"]


def topo_indices(graph: OpGraph) -> np.ndarray:
    """Kahn's topological order as op indices.

    Stable: ops without dependencies enter the queue in file order, and an op's successors are
    released in file order, first in first out (the seed demo's queue discipline).
    """
    n = graph.num_ops
    indeg = np.diff(graph.pred_ptr).tolist()
    succ_ptr = graph.succ_ptr.tolist()
    succ_idx = graph.succ_idx.tolist()
    queue = deque(i for i in range(n) if indeg[i] == 0)
    order: list[int] = []
    while queue:
        u = queue.popleft()
        order.append(u)
        for k in range(succ_ptr[u], succ_ptr[u + 1]):
            v = succ_idx[k]
            indeg[v] -= 1
            if indeg[v] == 0:
                queue.append(v)
    return np.asarray(order, dtype=np.int64)


def topological_order(graph: OpGraph) -> list[str]:
    """Op names in Kahn's topological order (stable, see :func:`topo_indices`).

    Examples
    --------
    The seed demo's graph:

    >>> from opsched.demo import seed_graph
    >>> " -> ".join(topological_order(seed_graph()))
    'Input -> Conv1 -> BN -> Conv2 -> ReLU -> Add -> Output'
    """
    names = graph.names
    return [names[i] for i in topo_indices(graph)]

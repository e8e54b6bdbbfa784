"""Topological order (Kahn's algorithm, stable)."""

from __future__ import annotations

import numpy as np

from opsched._jit import call
from opsched.analysis._kernels import kahn_order
from opsched.ir.graph import OpGraph, require_graph

__all__ = ["topo_indices", "topological_order"]


def topo_indices(graph: OpGraph) -> np.ndarray:
    """Kahn's topological order as op indices.

    Stable: ops without dependencies enter the queue in file order, and an op's successors are
    released in file order, first in first out (the seed demo's queue discipline).
    """
    n = graph.num_ops
    return call(kahn_order, n + graph.num_edges, n, graph.pred_ptr, graph.succ_ptr, graph.succ_idx)


def topological_order(graph: OpGraph) -> list[str]:
    """Op names in Kahn's topological order (stable, see :func:`topo_indices`).

    Examples
    --------
    The seed demo's graph:

    >>> from opsched.demo import seed_graph
    >>> " -> ".join(topological_order(seed_graph()))
    'Input -> Conv1 -> BN -> Conv2 -> ReLU -> Add -> Output'
    """
    require_graph(graph, "topological_order")
    names = graph.names
    return [names[i] for i in topo_indices(graph)]

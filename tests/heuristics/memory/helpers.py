"""Shared helpers of the memory-order tests: random graphs and an independent brute force."""

from __future__ import annotations

import random

import numpy as np

from opsched.ir import Op, OpGraph
from opsched.liveness import peak_memory


def random_graph(rng: random.Random, n: int, *, zero_dur: bool = True) -> OpGraph:
    """A random DAG with memory: deps to earlier ops, some zero durations, workspaces,
    graph outputs and persistent bytes."""
    ops = []
    for i in range(n):
        deps = rng.sample(range(i), rng.randint(0, min(i, 3))) if i else []
        ops.append(
            Op(
                f"o{i}",
                rng.choice([0, 1, 1, 2, 3] if zero_dur else [1, 1, 2, 3]),
                deps=tuple(f"o{j}" for j in deps),
                output_bytes=rng.randint(0, 20),
                workspace_bytes=rng.choice([0, 0, 3, 9]),
                output=rng.random() < 0.3,
            )
        )
    return OpGraph(tuple(ops), persistent_bytes=rng.randint(0, 5))


def serial_starts(graph: OpGraph, order: list[int] | np.ndarray) -> np.ndarray:
    """Start times of ``order`` run back to back."""
    order = np.asarray(order, dtype=np.int64)
    starts = np.empty(graph.num_ops)
    starts[order] = np.concatenate([[0.0], np.cumsum(graph.durations[order])[:-1]])
    return starts


def topological_orders(graph: OpGraph) -> list[list[int]]:
    """Every topological order (tiny graphs only)."""
    preds = [set(graph.index(d) for d in op.deps) for op in graph.ops]
    n = graph.num_ops
    out: list[list[int]] = []

    def rec(done: set[int], order: list[int]) -> None:
        if len(order) == n:
            out.append(list(order))
            return
        for v in range(n):
            if v not in done and preds[v] <= done:
                done.add(v)
                order.append(v)
                rec(done, order)
                order.pop()
                done.remove(v)

    rec(set(), [])
    return out


def brute_force_peak(graph: OpGraph) -> int:
    """Least peak over all topological orders, each measured by :mod:`opsched.liveness`."""
    return min(peak_memory(graph, serial_starts(graph, o)) for o in topological_orders(graph))

"""A problem's limited resources as arrays, and unit ids from start times: what the
schedule builders share (the compiled list schedules of :mod:`opsched.heuristics`, and the
exact solvers, which give unit ids to the starts they find).
"""

from __future__ import annotations

import heapq

import numpy as np

from opsched.problem import Problem

__all__ = ["assign_units", "limit_capacity", "resource_arrays"]


def limit_capacity(capacity: int, demands: np.ndarray) -> int:
    """``capacity``, or all ``demands`` together where that is less (the same limit, and
    it fits an int64 where the capacity may not); summed in floating point first, since
    demands of up to 2^62 each can overflow an int64 sum."""
    if float(demands.sum(dtype=np.float64)) >= capacity:
        return int(capacity)
    return int(demands.sum())


def resource_arrays(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """The demand matrix (ops x limited resources, int64) and the capacities (int64): the
    unit pool where the units are counted, then every named resource with a capacity that
    some op demands; each capacity clipped to the ops' total demand (:func:`limit_capacity`)."""
    g = problem.graph
    cols: list[np.ndarray] = []
    caps: list[int] = []
    for r, c in problem.capacities.items():
        if c is None:
            continue
        dem = g.demand_array(r)
        if r != "units" and not dem.any():
            continue
        cols.append(np.asarray(dem, dtype=np.int64))
        caps.append(limit_capacity(int(c), dem))
    dem = np.stack(cols, axis=1) if cols else np.zeros((g.num_ops, 0), dtype=np.int64)
    return np.ascontiguousarray(dem), np.asarray(caps, dtype=np.int64)


def assign_units(starts: list[float], ends: list[float], demand: list[int]) -> list[int | None]:
    """Lowest-free-unit colouring of the ops that demand one unit, in start order."""
    order = sorted((s, i) for i, s in enumerate(starts) if demand[i] == 1 and ends[i] > s)
    free: list[int] = []
    busy: list[tuple[float, int]] = []
    next_id = 0
    out: list[int | None] = [None] * len(starts)
    for s, i in order:
        while busy and busy[0][0] <= s:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            u = heapq.heappop(free)
        else:
            u, next_id = next_id, next_id + 1
        out[i] = u
        heapq.heappush(busy, (ends[i], u))
    for i in range(len(starts)):  # zero-duration ops: any unit, they hold none
        if demand[i] == 1 and out[i] is None:
            out[i] = 0
    return out

"""Memory liveness: the memory-over-time curve of a schedule, by the problem model's rule.

Output of op ``v`` is live over ``[start(v), release(v))`` where ``release(v)`` is the latest
end of its consumers (ops that list ``v`` in ``deps``); with no consumer, the makespan for a
graph output and ``end(v)`` otherwise. Workspace is live over ``[start(v), end(v))``.
Intervals are half-open, so a tensor freed at ``t`` and one allocated at ``t`` never coexist.
An empty interval holds nothing: a tensor written and read at the same instant by ops that
take no time, and a graph output written by a zero-duration op at the makespan itself (the
model's memory is what is live during the schedule; such an output lives after it).

This module is vectorised (O((V + E) log V)). The validator does not use it: it recomputes
memory its own, simpler way, and the tests check that both agree.
"""

from __future__ import annotations

import numpy as np

from opsched.ir.graph import OpGraph

__all__ = ["memory_curve", "peak_demand", "peak_memory", "release_times"]


def release_times(graph: OpGraph, starts: np.ndarray, makespan: float | None = None) -> np.ndarray:
    """Time at which each op's output tensor is freed, by the liveness rule above."""
    ends = starts + graph.durations
    if makespan is None:
        makespan = float(ends.max()) if len(ends) else 0.0
    release = np.full(graph.num_ops, -np.inf)
    n_preds = np.diff(graph.pred_ptr)
    consumer = np.repeat(np.arange(graph.num_ops), n_preds)
    if len(consumer):
        np.maximum.at(release, graph.pred_idx, ends[consumer])
    no_consumer = ~np.isfinite(release)
    is_output = np.fromiter((op.output for op in graph.ops), dtype=bool, count=graph.num_ops)
    release[no_consumer] = np.where(is_output[no_consumer], makespan, ends[no_consumer])
    return release


def memory_curve(
    graph: OpGraph, starts: np.ndarray, makespan: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Memory in use as a step function of time.

    Parameters
    ----------
    graph
        The op graph.
    starts
        Start time of each op, in graph order.
    makespan
        End of the schedule (defaults to the latest end); graph outputs stay live until then.

    Returns
    -------
    times, bytes : ndarray
        ``bytes[i]`` is the memory in use over ``[times[i], times[i+1])`` (persistent bytes
        included); the first entry is at time 0 (or the earliest start, if negative).

    Examples
    --------
    ``a`` (4 B) feeds ``b``; ``b`` uses 2 B of workspace and writes a 1 B graph output:

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 1, output_bytes=4),
    ...              Op("b", 2, deps=("a",), output_bytes=1, workspace_bytes=2, output=True)))
    >>> t, m = memory_curve(g, np.array([0.0, 1.0]))
    >>> t.tolist(), m.tolist()
    ([0.0, 1.0, 3.0], [4, 7, 0])
    """
    starts = np.asarray(starts, dtype=np.float64)
    ends = starts + graph.durations
    release = release_times(graph, starts, makespan)
    out = graph.output_sizes
    ws = graph.workspace_sizes
    live_out = (release > starts) & (out > 0)
    live_ws = (ends > starts) & (ws > 0)
    times = np.concatenate([starts[live_out], release[live_out], starts[live_ws], ends[live_ws]])
    deltas = np.concatenate([out[live_out], -out[live_out], ws[live_ws], -ws[live_ws]])
    t0 = min(0.0, float(starts.min())) if len(starts) else 0.0
    if len(times) == 0:
        return np.array([t0]), np.array([graph.persistent_bytes], dtype=np.int64)
    order = np.lexsort((deltas, times))
    times, deltas = times[order], deltas[order]
    level = np.cumsum(deltas) + graph.persistent_bytes
    last_of_group = np.r_[times[1:] != times[:-1], True]
    t, m = times[last_of_group], level[last_of_group]
    if t[0] > t0:
        t = np.r_[t0, t]
        m = np.r_[graph.persistent_bytes, m]
    return t, m.astype(np.int64)


def peak_demand(starts: np.ndarray, ends: np.ndarray, demand: np.ndarray) -> int:
    """The most of ``demand`` the ops hold at once: each over ``[start, end)``, so an op
    ending as another starts does not overlap it and a zero-duration op holds nothing.

    >>> peak_demand(np.array([0, 1, 1]), np.array([1, 3, 2]), np.array([2, 1, 1]))
    2
    """
    held = (ends > starts) & (demand > 0)
    if not held.any():
        return 0
    times = np.concatenate([starts[held], ends[held]])
    delta = np.concatenate([demand[held], -demand[held]])
    order = np.lexsort((delta, times))  # by time, ends before starts at one instant
    return int(np.cumsum(delta[order]).max())


def peak_memory(graph: OpGraph, starts: np.ndarray, makespan: float | None = None) -> int:
    """Largest memory in use at any time (persistent bytes included)."""
    _, m = memory_curve(graph, starts, makespan)
    return int(m.max())

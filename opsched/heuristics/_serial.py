"""Serial schedule generation under cumulative resources: list scheduling with insertion and
forward-backward improvement where ops demand more than one unit or named resources.

The serial scheme takes the ops one at a time in a precedence-feasible order (an *activity
list*) and starts each at the earliest time at or after its predecessors' ends where every
resource it holds has room for its whole run, given the ops placed before it. That time may
fall into an idle gap left earlier (insertion). The load of every resource is kept as a
step function: breakpoints ``pt`` in increasing order, and ``pu[i]`` the load over
``[pt[i], pt[i+1])`` (the last segment runs to infinity and is always empty). Each op adds
at most two breakpoints, so placing ``n`` ops costs O(n) per op in the worst case: O(n^2)
in all. That is why :data:`SERIAL_MAX_OPS` bounds where it is used.

Resources are the problem's limited ones: ``units`` as a pool (its capacity the unit
count) and each named resource with a capacity. An op that takes no time holds nothing and
starts at its predecessors' end. Unit indices are given afterwards, by colouring the
one-unit ops in start order (:func:`colour_units`): at most ``units`` of them ever run at
once, since the pool's load never exceeds it, so ``units`` colours suffice.

Serial generation reaches every *active* schedule for some activity list, so it can reach an
optimal one, where the non-delay (parallel) scheme of :func:`~opsched.heuristics.greedy.greedy`
cannot always (Kolisch, "Serial and parallel resource-constrained project scheduling
methods revisited", EJOR 90, 1996). Placed in order of a feasible schedule's starts, no op
starts later than it did there: the ops placed before it started no later, and so ended no
later, than in that schedule, so they load its old interval no more than they did. That is
what makes the forward-backward passes (:func:`justify_serial`) never lengthen a schedule.
"""

from __future__ import annotations

import numpy as np

from opsched._jit import call, kernel
from opsched.heuristics._kernels import _heap_pop, _heap_push
from opsched.heuristics._resources import assign_units, resource_arrays
from opsched.problem import Problem

__all__ = [
    "SERIAL_MAX_OPS",
    "colour_units",
    "justify_serial",
    "priority_list",
    "serial_place",
    "serial_schedule",
]

#: :func:`opsched._jit.kernels_digest` of :mod:`opsched.heuristics._kernels`, whose heap
#: kernels :func:`priority_list` compiles into itself (``tests/test_jit_cache.py``).
LIST_KERNELS = "7f14de220da3c511"

#: Most ops the serial scheme takes (O(n^2) at worst: about a second at this size).
#: Larger problems keep the non-delay scheme and go without forward-backward passes.
SERIAL_MAX_OPS = 20_000


@kernel
def _segment(pt: np.ndarray, npts: int, t: float) -> int:
    """Index of the segment holding ``t`` (the last breakpoint at or before it)."""
    lo, hi = 0, npts - 1
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if pt[mid] <= t:
            lo = mid
        else:
            hi = mid - 1
    return lo


@kernel
def _split(pt: np.ndarray, pu: np.ndarray, npts: int, t: float) -> tuple[int, int]:
    """Make ``t`` a breakpoint (the new segment copies its load); returns its index and the
    new breakpoint count."""
    i = _segment(pt, npts, t)
    if pt[i] == t:
        return i, npts
    for j in range(npts, i + 1, -1):
        pt[j] = pt[j - 1]
        pu[j, :] = pu[j - 1, :]
    pt[i + 1] = t
    pu[i + 1, :] = pu[i, :]
    return i + 1, npts + 1


@kernel
def serial_place(
    d: np.ndarray,
    dem: np.ndarray,
    cap: np.ndarray,
    order: np.ndarray,
    pred_ptr: np.ndarray,
    pred_idx: np.ndarray,
) -> np.ndarray:
    """Starts of the serial schedule of the activity list ``order`` (see the module
    docstring); ``order`` must list every op after its predecessors."""
    n = len(d)
    nr = cap.shape[0]
    starts = np.zeros(n)
    ends = np.zeros(n)
    pt = np.zeros(2 * n + 1)
    pu = np.zeros((2 * n + 1, nr), dtype=np.int64)
    npts = 1
    for idx in range(n):
        v = order[idx]
        est = 0.0
        for k in range(pred_ptr[v], pred_ptr[v + 1]):
            e = ends[pred_idx[k]]
            if e > est:
                est = e
        dv = d[v]
        holds = False
        if dv > 0:
            for r in range(nr):
                if dem[v, r] > 0:
                    holds = True
        if not holds:
            starts[v] = est
            ends[v] = est + dv
            continue
        s = est
        j = _segment(pt, npts, s)
        while True:
            bad = -1
            jj = j
            while jj < npts and pt[jj] < s + dv:
                for r in range(nr):
                    if pu[jj, r] + dem[v, r] > cap[r]:
                        bad = jj
                        break
                if bad >= 0:
                    break
                jj += 1
            if bad < 0:
                break
            # the last segment is empty and every demand fits its capacity, so bad < npts - 1
            j = bad + 1
            s = pt[j]
        e = s + dv
        a, npts = _split(pt, pu, npts, s)
        b, npts = _split(pt, pu, npts, e)
        for i in range(a, b):
            for r in range(nr):
                pu[i, r] += dem[v, r]
        starts[v] = s
        ends[v] = e
    return starts


@kernel
def priority_list(
    key: np.ndarray, pred_ptr: np.ndarray, succ_ptr: np.ndarray, succ_idx: np.ndarray
) -> np.ndarray:
    """The activity list of a priority rule: of the ops whose predecessors are all listed,
    the one of least ``key`` next (ties by index)."""
    n = len(key)
    indeg = np.empty(n, dtype=np.int64)
    hk = np.empty(n)
    hv = np.empty(n, dtype=np.int64)
    size = 0
    for v in range(n):
        indeg[v] = pred_ptr[v + 1] - pred_ptr[v]
        if indeg[v] == 0:
            size = _heap_push(hk, hv, size, key[v], v)
    out = np.empty(n, dtype=np.int64)
    m = 0
    while size > 0:
        v = hv[0]
        size = _heap_pop(hk, hv, size)
        out[m] = v
        m += 1
        for k in range(succ_ptr[v], succ_ptr[v + 1]):
            w = succ_idx[k]
            indeg[w] -= 1
            if indeg[w] == 0:
                size = _heap_push(hk, hv, size, key[w], w)
    return out


def colour_units(problem: Problem, starts: np.ndarray) -> np.ndarray:
    """Unit index of every op that demands exactly one unit (-1 for the others): lowest free
    unit first, in start order (:func:`~opsched.heuristics._resources.assign_units`). Ops
    that take no time hold none and get unit 0."""
    g = problem.graph
    ids = assign_units(starts.tolist(), (starts + g.durations).tolist(),
                       g.demand_array("units").tolist())  # fmt: skip
    return np.array([-1 if u is None else u for u in ids], dtype=np.int64)


def _place(
    problem: Problem, dem: np.ndarray, cap: np.ndarray, key: np.ndarray, reverse: bool = False
) -> np.ndarray:
    """The serial schedule of the activity list of least ``key`` first (on the reversed
    graph with ``reverse``), under demands ``dem`` and capacities ``cap``
    (:func:`~opsched.heuristics._resources.resource_arrays`): every op is listed after its
    predecessors whatever the keys, so a schedule whose times overlap a dependency by a
    rounding error still gives a feasible list."""
    g = problem.graph
    if reverse:
        ptr, idx, out_ptr, out_idx = g.succ_ptr, g.succ_idx, g.pred_ptr, g.pred_idx
    else:
        ptr, idx, out_ptr, out_idx = g.pred_ptr, g.pred_idx, g.succ_ptr, g.succ_idx
    # the work, not the input, decides whether to compile: a placement scans and shifts the
    # load profile, O(n) an op, so J30's 32 ops cost as much interpreted as thousands of
    # ops of a linear kernel (the list comes with it)
    size = g.num_ops * (g.num_ops + g.num_edges) * max(1, cap.shape[0])
    order = call(priority_list, size, np.asarray(key, dtype=np.float64), ptr, out_ptr, out_idx)
    return call(serial_place, size, g.durations, dem, cap, order, ptr, idx)


def serial_schedule(problem: Problem, prio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and unit indices (-1: none) of the serial schedule by ``prio`` (larger first)."""
    dem, cap = resource_arrays(problem)
    starts = _place(problem, dem, cap, -np.asarray(prio, dtype=np.float64))
    return starts, colour_units(problem, starts)


def justify_serial(
    problem: Problem, starts: np.ndarray, max_rounds: int = 10
) -> tuple[np.ndarray, np.ndarray, int]:
    """Forward-backward passes by the serial scheme: returns ``(starts, units, rounds)``.

    The forward pass lists the ops by earliest start, the backward pass by latest end on
    the reversed graph; kept while the makespan falls. Listed so, the starts of a feasible
    schedule never decrease along the list (an op with the least start of those unlisted
    is always free to go next), so the result is never longer than ``starts``.
    """
    d = problem.graph.durations
    dem, cap = resource_arrays(problem)
    best = _place(problem, dem, cap, starts)
    span = float((best + d).max()) if len(d) else 0.0
    rounds = 0
    for rounds in range(1, max_rounds + 1):  # noqa: B007
        rs = _place(problem, dem, cap, -(best + d), reverse=True)
        back = span - (rs + d)
        fs = _place(problem, dem, cap, back - back.min())
        new_span = float((fs + d).max())
        if new_span >= span - 1e-9:
            break
        best, span = fs, new_span
    return best, colour_units(problem, best), rounds

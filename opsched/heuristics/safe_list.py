"""List scheduling under a memory cap that never reaches a dead end.

Non-delay schedulers under a cap start whatever fits now; on wide graphs they fill memory with
tensors whose readers can no longer start, and end in a dead end (status UNKNOWN), even at caps
above the peak they reach without one. :func:`opsched.heuristics.memory_list.in_order` cannot
get stuck when its one-unit order ``sigma`` fits the cap, but it starts ops strictly in that
order and so runs little in parallel. :func:`safe_list` keeps ``in_order``'s guarantee and runs
other ops early when that is provably safe, as the banker's algorithm grants a request only
if every process can still finish.

The check. Let ``M(j)`` be the memory while step ``j`` of ``sigma`` runs on one unit
(:func:`~opsched.heuristics.memory.common.step_memory`), ``i`` the first op of ``sigma`` not yet
started (the *pointer*). An op ``v`` started ahead of its turn keeps its output alive at
steps ``i .. pos(v) - 1``, where ``sigma`` would not yet hold it. With ``extra(j)`` the
outputs of the ops started early whose turn comes after ``j``, the schedule keeps

    max over j >= i of M(j) + extra(j) <= cap.

If every running op ended now, the live tensors would be a subset of those of ``sigma`` at step
``i`` plus the early outputs, so ``sigma[i]`` fits, and after it the rest of ``sigma`` in turn:
whenever nothing runs, the pointer op can start. An op starts early only if the memory fits
now and ``max(M(j) + extra(j) for i <= j < pos(v)) + out(v) <= cap``; a segment tree with range
add and range maximum makes this O(log n); only the steps of ops that take time enter it (a
zero-duration step counts a tensor written and read at one instant, which holds nothing).
Ops demanding units or other resources take them as ``in_order`` does. The pointer op goes
first at every moment, and while it waits only for units or resources, no other op that takes
time starts (else ops one unit wide could keep taking each unit as it frees from a pointer op
two units wide). Once every op that takes time has run, the zero-duration ops left start
together at the end, where the tensors they write live over an empty interval.

Early ops are tried in priority order (b-level by default), at most :data:`SCAN_LIMIT` ops
that do not fit per moment, so a moment costs O(SCAN_LIMIT log n) whatever the ready set. A
run of zero-duration pointer ops that did not fit is tried again once memory has fallen to
where its best prefix would fit, when nothing runs, or after 1, 2, 4, ... more completions.

Examples
--------
>>> from opsched.demo import branches_graph
>>> from opsched.problem import Machine, Problem
>>> from opsched.heuristics import greedy
>>> from opsched.heuristics.memory import min_memory_order
>>> p = Problem(branches_graph(), Machine(units=2, memory_cap=20))
>>> greedy(p).status.value
'UNKNOWN'
>>> s = safe_list(p, min_memory_order(p))
>>> s.status.value, s.peak_memory <= 20
('FEASIBLE', True)
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from opsched.analysis.paths import b_level
from opsched.heuristics._forward import Forward
from opsched.heuristics.memory.common import check_order, step_memory
from opsched.problem import Problem, require_problem
from opsched.schedule import Schedule, Status

__all__ = ["SCAN_LIMIT", "safe_list"]

#: Ready ops that may be tried and found not to fit at one moment before the moment ends (the
#: rest wait for the next event): keeps a moment's cost bounded on very wide graphs.
SCAN_LIMIT = 32

_LOW = -(1 << 62)  # below any memory level: an entry of the tree no check looks at


class _MaxTree:
    """Range add and range maximum over a fixed array, iterative, O(log n) per call."""

    def __init__(self, values: list[int]) -> None:
        n = max(1, len(values))
        self.h = n.bit_length()
        self.n = n
        t = [_LOW] * (2 * n)
        t[n : n + len(values)] = values
        for x in range(n - 1, 0, -1):
            t[x] = max(t[2 * x], t[2 * x + 1])
        self.t = t
        self.d = [0] * n

    def _apply(self, p: int, value: int) -> None:
        self.t[p] += value
        if p < self.n:
            self.d[p] += value

    def _build(self, p: int) -> None:
        t, d = self.t, self.d
        while p > 1:
            p >>= 1
            t[p] = max(t[2 * p], t[2 * p + 1]) + d[p]

    def _push(self, p: int) -> None:
        d = self.d
        for s in range(self.h, 0, -1):
            x = p >> s
            if x and d[x]:
                self._apply(2 * x, d[x])
                self._apply(2 * x + 1, d[x])
                d[x] = 0

    def add(self, lo: int, hi: int, value: int) -> None:
        """Add ``value`` to entries ``lo .. hi - 1``."""
        if lo >= hi or not value:
            return
        lo += self.n
        hi += self.n
        l0, r0 = lo, hi
        while lo < hi:
            if lo & 1:
                self._apply(lo, value)
                lo += 1
            if hi & 1:
                hi -= 1
                self._apply(hi, value)
            lo >>= 1
            hi >>= 1
        self._build(l0)
        self._build(r0 - 1)

    def max(self, lo: int, hi: int) -> int:
        """Maximum of entries ``lo .. hi - 1`` (very negative when the range is empty)."""
        if lo >= hi:
            return _LOW
        lo += self.n
        hi += self.n
        self._push(lo)
        self._push(hi - 1)
        t = self.t
        best = _LOW
        while lo < hi:
            if lo & 1:
                best = max(best, t[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                best = max(best, t[hi])
            lo >>= 1
            hi >>= 1
        return best


def safe_list(
    problem: Problem, order: np.ndarray | list[int], priority: str = "b-level"
) -> Schedule:
    """Schedule ``problem`` along the one-unit ``order``, starting other ops early where the
    memory cap provably still lets the rest of ``order`` run (module docstring).

    Parameters
    ----------
    problem
        Graph, units, resources and memory cap.
    order
        A topological one-unit order whose peak (:func:`~opsched.heuristics.memory.common.
        order_peak`) fits the cap, e.g. :func:`~opsched.heuristics.memory.min_memory_order`.
    priority
        Which ops to try early first: ``"b-level"`` (longest path to the end) or ``"order"``
        (their place in ``order``).

    Returns
    -------
    Schedule
        FEASIBLE (never a dead end when ``order`` fits the cap), or UNKNOWN with a reason when
        ``order`` itself breaks the cap or an op can never fit its units or resources.
    """
    require_problem(problem, "safe_list")
    t0 = time.perf_counter()
    name = "memory-safe"
    none = Schedule.if_impossible(problem, solver=name)
    if none is not None:
        return none
    if priority not in ("b-level", "order"):
        raise ValueError(f"unknown priority {priority!r}; use 'b-level' or 'order'")
    g = problem.graph
    n = g.num_ops
    seq = check_order(g, order).tolist()
    cap = problem.memory_cap
    steps = step_memory(g, seq).tolist() if n else []
    timed = [s for s, v in zip(steps, seq, strict=True) if g.durations[v] > 0]
    if cap is not None and timed and max(timed) > cap:
        return Schedule.empty(problem, solver=name, status=Status.UNKNOWN,
                              info={"reason": f"the order peaks at {max(timed)} B, over the "
                                    f"memory cap of {cap} B"})  # fmt: skip
    pos = [0] * n
    for j, v in enumerate(seq):
        pos[v] = j
    st = Forward(problem)
    dur = st.dur
    kept = [st.out_b[v] if (st.left[v] > 0 or st.is_out[v]) else 0 for v in range(n)]
    sp, si = g.succ_ptr.tolist(), g.succ_idx.tolist()
    indeg = np.diff(g.pred_ptr).tolist()
    key = (-b_level(g)).tolist() if priority == "b-level" else [float(p) for p in pos]
    # only steps that take time bound the order (a zero-duration step holds nothing of its own)
    tree = (
        _MaxTree([m if dur[v] > 0 else _LOW for m, v in zip(steps, seq, strict=True)])
        if cap is not None
        else None
    )
    ready: list[tuple[float, int]] = [(key[v], v) for v in range(n) if indeg[v] == 0]
    heapq.heapify(ready)

    def made_ready(v: int) -> None:
        for w in si[sp[v] : sp[v + 1]]:
            indeg[w] -= 1
            if indeg[w] == 0:
                heapq.heappush(ready, (key[w], w))

    st.on_finish = made_ready
    started = st.started
    ptr = 0
    early = 0
    while st.n_done < n:
        progress = True
        while progress:
            progress = False
            # the pointer op first: it is what keeps the schedule out of dead ends
            while ptr < n:
                v = seq[ptr]
                if started[v]:
                    ptr += 1
                    continue
                if indeg[v] or not st.has_room(v):
                    break
                if st.fits(v):
                    st.start(v, st.t)
                    progress = True
                    continue
                run = st.try_zero_run(seq, ptr) if dur[v] == 0 else []
                if not run:
                    break
                for x in run:
                    st.start(x, st.t)
                progress = True
            # then other ready ops, where it is safe; none that takes time while the pointer
            # op waits only for units or resources
            misses = 0
            skipped: list[tuple[float, int]] = []
            v = seq[ptr] if ptr < n else -1
            hold = v >= 0 and not indeg[v] and dur[v] > 0 and not st.has_room(v)
            while ready and misses < SCAN_LIMIT and not hold:
                kv, v = heapq.heappop(ready)
                if started[v]:
                    continue
                if ptr < n and v == seq[ptr]:
                    skipped.append((kv, v))  # waits for memory or units as the pointer op
                    continue
                ok = st.has_room(v)
                if ok and tree is not None:
                    assert cap is not None
                    ok = st.fits(v) and tree.max(ptr, pos[v]) + kept[v] <= cap
                if not ok:
                    skipped.append((kv, v))
                    misses += 1
                    if not st.free_units and dur[v] > 0 and st.units[v] > 0:
                        break  # nothing that takes a unit can start before the next event
                    continue
                if tree is not None:
                    tree.add(ptr, pos[v], kept[v])
                st.start(v, st.t)
                early += 1
                progress = True
            for e in skipped:
                heapq.heappush(ready, e)
        if st.n_done >= n:
            break
        rest = st.rest_at_end(seq, ptr)
        if rest:  # only zero-duration ops are left: together at the end
            for v in rest:
                st.start(v, st.t)
            continue
        if not st.running:
            v = seq[ptr]
            return Schedule.empty(problem, solver=name, status=Status.UNKNOWN,
                                  info={"reason": f"op {g.names[v]!r} does not fit the memory "
                                        "cap even with nothing running"})  # fmt: skip
        st.advance()
    s = Schedule.build(problem, st.starts, st.unit_of, solver=name,
                       wall_time_s=time.perf_counter() - t0)  # fmt: skip
    s.info = {**s.info, "early": early, "priority": priority}
    return s

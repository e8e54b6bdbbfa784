"""Event-driven greedy (ready-set) scheduling and the serial reference.

:func:`greedy` is the seed's scheduling loop made exact for any durations: keep the set of
ready ops (all dependencies finished), and at every moment start each ready op, in priority
order, that the free units, resources and memory allow; then advance to the next completion.
It never leaves a unit idle while a ready op fits (a *non-delay* schedule).

Memory is tracked exactly as the problem model defines it: an op's start allocates its output
and workspace, the workspace is freed at its end and the output when its last consumer ends.
Memory only grows at starts, so refusing a start that would pass the cap keeps the whole
schedule under it; if nothing runs and no ready op fits, the greedy reports the dead end
(status UNKNOWN, no schedule) rather than return an invalid schedule.

Without a memory cap and with a numeric priority, the loop runs compiled
(:mod:`opsched.heuristics._nondelay_res`), with the same schedule.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Sequence

import numpy as np

from opsched._jit import compiled as jit_ready
from opsched.analysis.bounds import lower_bounds
from opsched.analysis.paths import b_level
from opsched.analysis.topo import topo_indices
from opsched.heuristics._nondelay_res import nondelay_arrays
from opsched.problem import Problem, require_problem
from opsched.schedule import Schedule, Status

__all__ = ["ZERO_RUN_LOOKAHEAD", "greedy", "serial", "take_units"]

#: Most ops a zero-duration run that does not fit one op at a time looks through (its head
#: is tried again at each event while it waits, so an unbounded walk of a long chain made
#: the loop quadratic: 17 s for a 4,000-op chain).
ZERO_RUN_LOOKAHEAD = 1024


def take_units(pool: list[int], next_unit: int, count: int) -> tuple[list[int], int]:
    """``count`` unit ids for an op that starts: the lowest free ones of the heap ``pool``,
    then new ids from ``next_unit`` on (a machine of unlimited units); returns them and the
    next new id.

    >>> pool = [1, 3]
    >>> take_units(pool, 4, 3), pool
    (([1, 3, 4], 5), [])
    """
    got = []
    for _ in range(count):
        if pool:
            got.append(heapq.heappop(pool))
        else:
            got.append(next_unit)
            next_unit += 1
    return got, next_unit


def serial(problem: Problem) -> Schedule:
    """Every op one after another on unit 0, in Kahn's topological order ("one cook").

    Examples
    --------
    >>> from opsched.demo import seed_problem
    >>> serial(seed_problem()).makespan
    7.0
    """
    require_problem(problem, "serial")
    t0 = time.perf_counter()
    none = Schedule.if_impossible(problem, solver="serial")
    if none is not None:
        return none
    g = problem.graph
    order = topo_indices(g)
    d = g.durations[order]
    starts = np.empty(g.num_ops)
    starts[order] = np.concatenate([[0.0], np.cumsum(d)[:-1]]) if g.num_ops else []
    units = [0 if op.demands.get("units", 0) == 1 else None for op in g.ops]
    result = Schedule.build(
        problem,
        starts,
        units,
        solver="serial",
        status=Status.FEASIBLE,
        lower_bound=lower_bounds(g, problem.machine.units, problem.capacities).value,
        wall_time_s=time.perf_counter() - t0,
    )
    cap = problem.memory_cap
    if cap is not None and result.peak_memory is not None and result.peak_memory > cap:
        return Schedule.empty(
            problem,
            solver="serial",
            status=Status.UNKNOWN,
            info={
                "reason": f"serial order peaks at {result.peak_memory} B, over the cap of {cap} B"
            },
        )
    return result


def greedy(
    problem: Problem,
    priority: str | Sequence[float] | np.ndarray = "fifo",
    *,
    compiled: bool = True,
) -> Schedule:
    """Non-delay ready-set scheduling under units, resources and the memory cap.

    Parameters
    ----------
    problem
        Graph and machine. ``units=None`` means unlimited units: every op then starts at its
        earliest time and the makespan equals the critical path.
    priority
        ``"fifo"``: ready ops in the order they became ready (the seed's queue; ties in file
        order). ``"b-level"``: longest path to the end first (critical-path list scheduling).
        Or one number per op (graph order), larger first.
    compiled
        Without a memory cap and with a priority other than ``"fifo"``, the loop runs
        compiled (:mod:`opsched.heuristics._nondelay_res`, the same schedule) on graphs
        large enough to compile kernels for (:func:`opsched._jit.compiled`); ``False``
        keeps the Python loop (for comparisons).

    Returns
    -------
    Schedule
        Status FEASIBLE with unit indices (where an op demands exactly one unit), or UNKNOWN
        without a schedule if an op can never fit (demand above capacity) or the memory cap
        leaves no op able to start.

    Examples
    --------
    >>> from opsched.demo import seed_problem
    >>> greedy(seed_problem()).makespan
    6.0
    """
    require_problem(problem, "greedy")
    # a name, or any one-dimensional sequence of numbers (a list, an array, a pandas Series)
    if not isinstance(priority, str) and (
        not hasattr(priority, "__len__") or np.ndim(priority) != 1
    ):
        raise TypeError(
            f"greedy: priority must be 'fifo', 'b-level' or one number per op, got "
            f"{type(priority).__name__}"
        )
    t_start = time.perf_counter()
    g = problem.graph
    n = g.num_ops
    names = {"fifo": "greedy", "b-level": "greedy-blevel", "blevel": "greedy-blevel",
             "critical-path": "greedy-blevel"}  # fmt: skip
    name = (
        names.get(priority, "greedy-priority") if isinstance(priority, str) else "greedy-priority"
    )
    none = Schedule.if_impossible(problem, solver=name)
    if none is not None:
        return none

    prio: list[float] | None
    if isinstance(priority, str):
        if priority == "fifo":
            prio = None
        elif priority in ("b-level", "blevel", "critical-path"):
            prio = b_level(g).tolist()
        else:
            raise ValueError(f"unknown priority {priority!r}; use 'fifo', 'b-level' or numbers")
    else:
        prio = [float(x) for x in priority]
        if len(prio) != n:
            raise ValueError(f"priority needs {n} values, got {len(prio)}")
        if not all(np.isfinite(prio)):  # a NaN key leaves the heaps' order undefined
            raise ValueError(f"priority needs {n} finite numbers, got a NaN or infinity")

    # the kernel where it runs compiled: interpreted, on toy graphs, it is slower than this
    # loop
    if compiled and prio is not None and problem.memory_cap is None and jit_ready(n + g.num_edges):
        starts_a, units_a, placed = nondelay_arrays(problem, np.asarray(prio))
        if placed == n:  # else an op fits no idle machine: the loop below says which
            return Schedule.build(
                problem, starts_a, units_a, solver=name, status=Status.FEASIBLE,
                lower_bound=lower_bounds(g, problem.machine.units, problem.capacities).value,
                wall_time_s=time.perf_counter() - t_start,
            )  # fmt: skip

    dur = g.durations.tolist()
    succ_ptr, succ_idx = g.succ_ptr.tolist(), g.succ_idx.tolist()
    indeg = np.diff(g.pred_ptr).tolist()
    consumers_left = np.diff(g.succ_ptr).tolist()
    out_b = g.output_sizes.tolist()
    ws_b = g.workspace_sizes.tolist()
    is_output = [op.output for op in g.ops]
    caps = {r: c for r, c in problem.capacities.items() if c is not None}
    res_names = [r for r in caps if any(op.demands.get(r, 0) for op in g.ops)]
    demand = {r: g.demand_array(r).tolist() for r in res_names}
    free = dict(caps)
    units_dem = g.demand_array("units").tolist()
    k = problem.unit_pool  # not the machine's units, which may be huge
    unit_pool = list(range(k)) if k is not None else []  # heap of free unit ids
    next_unit = k if k is not None else 0
    mem_cap = problem.memory_cap
    mem = g.persistent_bytes

    starts = [0.0] * n
    unit_of: list[int | None] = [None] * n
    # Ready ops wait in heaps by (priority key, index), one per demand signature (the
    # demands of an op that takes time over the limited resources; zero-duration ops, which
    # hold nothing, share the signature None). A pass visits the heads of these heaps in
    # priority order (the heap ``active``); once one op of a signature does not fit the free
    # capacities, none of that signature fits before the clock moves (a pass only takes
    # capacity), so the pass leaves the rest of that heap alone. Popping and re-pushing every
    # blocked op had made a pass O(ready) and the loop quadratic on wide graphs: 2,000 ops of
    # one resource of capacity 2 took 1.8 million pops.
    buckets: dict[tuple[int, ...] | None, list[tuple[float, int]]] = {}
    active: list[tuple[float, int, tuple[int, ...] | None]] = []
    blocked: set[tuple[int, ...] | None] = set()
    in_pass = False
    # the least memory a ready op that takes time allocates (lazy: started ones are dropped
    # when met): above what the cap leaves, no such op can start in the pass
    need_heap: list[tuple[int, int]] = []
    pushes = 0

    def need_of(v: int) -> int:
        """Bytes ``v`` allocates as it starts: its output unless nothing keeps it (no reader,
        not an output, no time), its workspace while it runs."""
        holds_out = dur[v] > 0 or consumers_left[v] > 0 or is_output[v]
        return (out_b[v] if holds_out else 0) + (ws_b[v] if dur[v] > 0 else 0)

    def signature(v: int) -> tuple[int, ...] | None:
        return None if dur[v] == 0 else tuple(demand[r][v] for r in res_names)

    def push_ready(v: int) -> None:
        nonlocal pushes
        key = float(pushes) if prio is None else -prio[v]
        pushes += 1
        sig = signature(v)
        heap = buckets.setdefault(sig, [])
        heapq.heappush(heap, (key, v))
        if sig is not None:
            heapq.heappush(need_heap, (need_of(v), v))  # fixed for an op that takes time
        if in_pass and sig not in blocked and heap[0][1] == v:
            heapq.heappush(active, (key, v, sig))

    for v in range(n):
        if indeg[v] == 0:
            push_ready(v)
    running: list[tuple[float, int, int]] = []  # (end, seq, op)
    seq = 0
    t = 0.0
    done = 0
    held_units: dict[int, list[int]] = {}
    finished = [False] * n
    started = [False] * n

    # a run that did not fit is tried again once memory is low enough for its best prefix,
    # else after 1, 2, 4, ... more completions (what they finish may lengthen the run)
    waiting: dict[int, tuple[int, int, int]] = {}  # head -> (memory that fits, done, wait)

    def zero_closure(v: int) -> list[int]:
        """Zero-duration ops to start at once from the ready ``v`` that does not fit alone:
        ``v``, then the zero-duration ops it makes ready, as long as the level once they have
        run fits the cap (a tensor written and read at the same instant lives over an empty
        interval and takes no memory). Empty when no such run fits."""
        assert mem_cap is not None
        if v in waiting:
            fits_at, since, wait = waiting[v]
            if mem > fits_at and done - since < wait:
                return []
        level, best, lowest = mem, 0, None
        run: list[int] = []
        gone: set[int] = set()
        spent: dict[int, int] = {}  # readers left per producer, after the run so far
        frontier = [v]
        for x in frontier:
            preds = g.pred_idx[g.pred_ptr[x] : g.pred_ptr[x + 1]].tolist()
            if dur[x] > 0 or x in gone or not all(finished[u] or u in gone for u in preds):
                continue
            level += need_of(x)
            gone.add(x)
            run.append(x)
            for u in preds:  # as finish() frees: a read output goes with its last reader
                spent[u] = spent.get(u, consumers_left[u]) - 1
                if spent[u] == 0:
                    level -= out_b[u]
            if level <= mem_cap:
                best = len(run)
            lowest = level if lowest is None else min(lowest, level)
            if len(frontier) < ZERO_RUN_LOOKAHEAD:  # bounded: a head that waits long for
                # memory is tried again at every event
                frontier.extend(succ_idx[succ_ptr[x] : succ_ptr[x + 1]])
        if not best:
            wait = 2 * waiting[v][2] if v in waiting else 1
            fits_at = mem_cap - ((lowest if lowest is not None else mem) - mem)
            waiting[v] = (fits_at, done, wait)
        return run[:best]

    def start_zero(v: int) -> None:
        nonlocal mem
        starts[v] = t
        started[v] = True
        mem += need_of(v)
        if units_dem[v] == 1:
            unit_of[v] = unit_pool[0] if unit_pool else 0
        finish(v)  # zero-duration: completes at once, may release successors

    def finish(v: int) -> None:
        nonlocal mem, done
        done += 1
        finished[v] = True
        for r in res_names:
            free[r] += demand[r][v] if dur[v] > 0 else 0
        for u in held_units.pop(v, []):
            heapq.heappush(unit_pool, u)
        if dur[v] > 0:
            mem -= ws_b[v]
        if consumers_left[v] == 0 and not is_output[v] and dur[v] > 0:
            mem -= out_b[v]  # no consumer: freed at its end (never held if zero-duration)
        for k2 in range(succ_ptr[v], succ_ptr[v + 1]):
            w = succ_idx[k2]
            indeg[w] -= 1
            if indeg[w] == 0:
                push_ready(w)
        # free inputs whose last consumer is v
        for p in g.pred_idx[g.pred_ptr[v] : g.pred_ptr[v + 1]].tolist():
            consumers_left[p] -= 1
            if consumers_left[p] == 0:
                mem -= out_b[p]

    def least_timed_need() -> int | None:
        while need_heap and started[need_heap[0][1]]:
            heapq.heappop(need_heap)
        return need_heap[0][0] if need_heap else None

    while done < n:
        # start every ready op that fits, in priority order
        skipped: list[tuple[float, int, tuple[int, ...] | None]] = []
        started_any = True
        while started_any:
            started_any = False
            in_pass = True
            blocked.clear()
            active[:] = [(h[0][0], h[0][1], sig) for sig, h in buckets.items() if h]
            heapq.heapify(active)
            while active:
                key, v, sig = heapq.heappop(active)
                heap = buckets[sig]
                if sig in blocked or not heap or heap[0] != (key, v):
                    continue  # a stale head
                heapq.heappop(heap)
                if heap:  # the next of its signature, in line with the others
                    heapq.heappush(active, (heap[0][0], heap[0][1], sig))
                if started[v]:  # started with a zero-duration run, then made ready
                    continue
                if sig is not None and not all(
                    d <= free[r] for r, d in zip(res_names, sig, strict=True)
                ):
                    heapq.heappush(heap, (key, v))  # and the signature waits for the clock
                    blocked.add(sig)
                    continue
                need = need_of(v)
                if mem_cap is not None and mem + need > mem_cap:
                    if dur[v] == 0:
                        run = zero_closure(v)
                        if run:
                            for x in run:
                                start_zero(x)
                            started_any = True
                            continue
                    skipped.append((key, v, sig))
                    least = least_timed_need()
                    if not buckets.get(None) and (least is None or mem + least > mem_cap):
                        # no op that takes time fits what the cap leaves, and no
                        # zero-duration op is ready to free memory: the pass is over
                        break
                    continue
                if dur[v] == 0:
                    start_zero(v)
                    started_any = True
                    continue
                starts[v] = t
                started[v] = True
                mem += need
                for r in res_names:
                    free[r] -= demand[r][v]
                if units_dem[v] > 0:
                    got, next_unit = take_units(unit_pool, next_unit, units_dem[v])
                    held_units[v] = got
                    unit_of[v] = got[0] if units_dem[v] == 1 else None
                heapq.heappush(running, (t + dur[v], seq, v))
                seq += 1
            in_pass = False
            for key, v, sig in skipped:  # back in line with the key they had
                heapq.heappush(buckets[sig], (key, v))
            skipped = []
            if not started_any:
                break
            # zero-duration completions may have made ops ready: loop again at the same time
        if done >= n:
            break
        if not running:
            waiting_ops = sorted(e for heap in buckets.values() for e in heap if not started[e[1]])
            blocked_names = [g.names[v] for _, v in waiting_ops]
            why = (
                (
                    f"memory cap {mem_cap} B: {mem} B in use and none of the ready ops "
                    f"{blocked_names[:5]} fits"
                )
                if mem_cap is not None
                else "no ready op fits"
            )
            return Schedule.empty(
                problem,
                solver=name,
                status=Status.UNKNOWN,
                info={"reason": f"dead end at t={t:g}: {why}"},
                wall_time_s=time.perf_counter() - t_start,
            )
        t = running[0][0]
        while running and running[0][0] <= t:
            _, _, v = heapq.heappop(running)
            finish(v)
    lb = lower_bounds(g, problem.machine.units, problem.capacities).value
    return Schedule.build(
        problem,
        starts,
        unit_of,
        solver=name,
        status=Status.FEASIBLE,
        lower_bound=lb,
        wall_time_s=time.perf_counter() - t_start,
    )

"""Exact minimum makespan under a tight memory cap, by search over down-sets.

At a memory cap near the least peak, CP-SAT finds good schedules but its makespan bound
stays at what it proves without the cap (docs/cpsat-model.md, "Tight memory caps"). The cap
cuts the other way for an explicit search: it leaves few orders to choose from.

**What is searched.** Semi-active schedules (every op starts at 0 or at another op's end)
contain an optimal one, and each can be built by a walk of *decision points*: at time ``t``
a unit is free, the started ops form a set ``D`` (a down-set: closed under predecessors),
the ops of ``R`` (at most ``k - 1``) still run, with ``c_r`` time units left each, and every
other op of ``D`` has ended. A move starts an op ``j`` whose predecessors have all ended
(once every unit is busy, time moves on to the next end), or waits for the next end. Memory
rises only when an op starts, so each start of positive duration checks the memory of that
instant: the outputs of ended ops that an unended op still reads (or graph outputs), plus
the outputs and workspaces of ``R`` and ``j`` (:mod:`opsched.liveness`'s rule); so does each
move of time, which covers the outputs of instant ops (an instant op may be the last reader
of what another one wrote at the same time, so they are not checked one by one). Other
resources are checked at each start.

**What makes it small.** Run any schedule's ops one at a time in start order and the peak
never rises (:mod:`opsched.solver.serial`). So every ``D`` met on the way is a down-set that
a *one-unit* order reaches within the cap and can still finish from.
:func:`~opsched.solver._downset_table.downset_table` lists exactly those first; a tight cap
leaves few (RandWire's stage4, 93 ops: 314,373 of the 1.8 million the cap lets a one-unit
order reach). Labels ``(D, R, t, c)`` are then swept layer by layer (by ``|D|``), and two
labels of the same ``D`` and ``R`` are compared: one that frees its unit no later and ends
each running op no later (``t' <= t`` and ``t' + c'_r <= t + c_r``) dominates, since any way
to finish from the other works from it too (ops end no later, so memory and resources only
fall). A label whose lower bound (remaining work over the units, the longest remaining
tail, each running op's end plus its successors' tails) reaches the incumbent is dropped.

When the sweep finishes, its best makespan is the optimum over *all* schedules within the
cap (or the incumbent is optimal, if nothing beat it); a label or down-set budget bounds
the work, and a search that runs out says nothing. With ``beam`` the sweep keeps only the
best labels of each layer: a fast heuristic, whose schedule is valid but not proven.

Integer durations and sizes (the problem CP-SAT solves: :func:`opsched.solver.cpsat.model.
tick_problem`), at most :data:`MAX_UNITS` units each positive-duration op taking one, and at
most :data:`MAX_OPS` ops. The kernels run compiled (numba) on graphs of more than
:data:`INTERPRETED_OPS` ops; the first such call of an installation compiles them (about
:data:`COMPILE_S` seconds, once: numba keeps the machine code on disk). Callers with a time
limit ask :func:`kernels_ready` first; :func:`compile_kernels` compiles them up front.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from opsched._jit import COMPILE_MIN_SIZE, call, ready
from opsched.analysis.topo import topo_indices
from opsched.errors import ProblemError
from opsched.heuristics.greedy import greedy
from opsched.ir.graph import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.solver._downset_labels import label_search
from opsched.solver._downset_table import downset_table, tail_max

__all__ = [
    "COMPILE_S",
    "DOWNSETS_PER_SECOND",
    "INTERPRETED_OPS",
    "LABELS_PER_DOWNSET",
    "LABELS_PER_SECOND",
    "MAX_DOWNSETS",
    "MAX_LABELS",
    "MAX_OPS",
    "MAX_UNITS",
    "DownsetResult",
    "compile_kernels",
    "downset_budget",
    "downset_candidate",
    "downset_search",
    "downset_search_applies",
    "kernels_ready",
    "must_compile",
    "shape_refusal",
]

#: Most compute units the search handles (labels grow fast with the running ops they carry,
#: and their packed group key needs ``(MAX_OPS + 1) ** (MAX_UNITS - 1)`` below 2**32).
MAX_UNITS = 4

#: Most ops the search handles.
MAX_OPS = 1_000

#: Graphs of at most this many ops run the kernels as Python (at most 2**10 down-sets,
#: well under a second); larger ones run them compiled, whatever their size, since the
#: work grows with the down-sets (the first compiled call compiles them: :data:`COMPILE_S`).
INTERPRETED_OPS = 10

#: Seconds a caller plans for when the kernels are not compiled yet (measured here: 12.7 s
#: for all of them in a fresh checkout; loading them from numba's cache takes 0.4 s).
COMPILE_S = 20.0

#: Down-sets listed per second of budget. Measured here at 0.8-1.2 million per second on
#: RandWire's stages (2-core machine, one thread, both passes); the lower figure leaves room
#: for slower machines.
DOWNSETS_PER_SECOND = 500_000

#: Labels made per second of budget (measured here: 1.5-3 million per second on the same).
LABELS_PER_SECOND = 1_500_000

#: Labels the exact sweep makes at the least per down-set that can finish and per unit
#: beyond the first (measured on RandWire's stages at their tightest and 80 % caps: 19-46);
#: a sweep that would need more than its budget by this count is not started.
LABELS_PER_DOWNSET = 15

#: Most down-sets and labels a budget allows, whatever the time: about 0.3 GB and 2 GB. The
#: labels bound what can be searched: the zoo's runs made 40-85 labels per down-set that
#: can finish, and reached 5-6 down-sets per such one, so more down-sets rarely help.
MAX_DOWNSETS = 4_000_000
MAX_LABELS = 36_000_000


def downset_budget(seconds: float) -> tuple[int, int]:
    """Down-sets and labels the search may make in about ``seconds`` (the two budgets).

    >>> downset_budget(10.0)
    (4000000, 15000000)
    """
    return (
        min(MAX_DOWNSETS, max(10_000, int(seconds * DOWNSETS_PER_SECOND))),
        min(MAX_LABELS, max(30_000, int(seconds * LABELS_PER_SECOND))),
    )


def kernels_ready() -> bool:
    """Whether the search runs compiled at once: compiled in this process or cached on disk.

    Where it is not, the first compiled search spends about :data:`COMPILE_S` seconds
    compiling: :func:`opsched.solver.solve_cpsat` then skips the search when its share of
    the time limit is shorter than that.
    """
    return all(ready(fn) for fn in (downset_table, tail_max, label_search))


def must_compile(num_ops: int) -> bool:
    """Whether a search on ``num_ops`` ops would first have to compile its kernels."""
    return num_ops > INTERPRETED_OPS and not kernels_ready()


def compile_kernels() -> float:
    """Compile the search's kernels now (or load them from numba's cache); the seconds taken.

    Done once per installation; batch runs call it before they start their jobs, so no job
    spends its time limit on it.

    >>> compile_kernels() >= 0.0 and kernels_ready()
    True
    """
    t0 = time.perf_counter()
    pairs = [Op(f"p{i}", 2, output_bytes=4) for i in range(INTERPRETED_OPS // 2 + 1)]
    pairs += [Op(f"c{i}", 1, deps=(f"p{i}",)) for i in range(len(pairs))]
    downset_search(Problem(OpGraph(tuple(pairs)), Machine(units=2, memory_cap=8)))
    return time.perf_counter() - t0


@dataclass(frozen=True)
class DownsetResult:
    """What a down-set search found.

    Attributes
    ----------
    makespan
        Best makespan found below the upper bound it was given (ticks), or None.
    starts
        Its start times (ticks, graph order), or None.
    proven
        The search finished: no schedule within the cap ends before ``makespan`` (or, when
        ``makespan`` is None, before the upper bound it was given).
    reason
        Why it is not proven: ``"down-set budget"``, ``"label budget"``, ``"beam"``; "" when
        proven.
    downsets, labels
        Down-sets listed (those that can still finish, of those reached) and labels made.
    seconds
        Wall time.
    """

    makespan: int | None
    starts: list[int] | None
    proven: bool
    reason: str
    downsets: tuple[int, int]
    labels: int
    seconds: float

    def to_info(self) -> dict[str, Any]:
        """The entry of a solver's ``Schedule.info`` (makespan in ticks)."""
        good, reached = self.downsets
        return {"proven": self.proven, "makespan": self.makespan, "reason": self.reason,
                "downsets": good, "reached": reached, "labels": self.labels,
                "seconds": round(self.seconds, 3)}  # fmt: skip

    def describe(self, to_time: Callable[[float], float] = float) -> str:
        """One line on the outcome; ``to_time`` turns ticks into time units."""
        size = f"{self.downsets[0]:,} down-sets, {self.labels:,} labels, {self.seconds:.1f} s"
        if self.proven and self.makespan is not None:
            return f"down-set search: makespan {to_time(self.makespan):g} optimal ({size})"
        if self.proven:
            return f"down-set search: no schedule below the bound it was given ({size})"
        return f"down-set search: stopped by the {self.reason} ({size})"


def downset_candidate(problem: Problem) -> bool:
    """Whether a solver should try the search on ``problem``: it applies
    (:func:`downset_search_applies`) and both greedy schedules break the memory cap (where
    the cap is loose, down-sets abound and CP-SAT does well)."""
    if downset_search_applies(problem) is not None:
        return False
    return not any(greedy(problem, prio).has_schedule for prio in ("b-level", "fifo"))


def shape_refusal(units: int | None, capped: bool, num_ops: int) -> str | None:
    """Why the search cannot take a problem of this shape (None when it can): what an
    experiment knows of a job before it runs (:attr:`opsched.registry.SolverInfo.refuses`).

    >>> shape_refusal(2, False, 10), shape_refusal(8, True, 10), shape_refusal(2, True, 10)
    ('no memory cap', 'more than 4 units', None)
    """
    if not capped:
        return "no memory cap"
    if units is None or units > MAX_UNITS:
        return f"more than {MAX_UNITS} units"
    if num_ops > MAX_OPS:
        return f"more than {MAX_OPS:,} ops"
    return None


def downset_search_applies(problem: Problem) -> str | None:
    """None when :func:`downset_search` can take ``problem``, else why not (one line)."""
    g = problem.graph
    why = shape_refusal(problem.machine.units, problem.memory_cap is not None, g.num_ops)
    if why is not None:
        return why
    d = g.durations
    if not np.all(d == np.round(d)):
        return "durations are not integers"
    units = g.demand_array("units")
    if np.any((units != 1) & (d > 0)):
        return "an op of positive duration does not take exactly one unit"
    return None


def downset_search(
    problem: Problem,
    *,
    upper_bound: int | None = None,
    max_downsets: int = MAX_DOWNSETS,
    max_labels: int = 10_000_000,
    beam: int = 0,
    deadline: float | None = None,
) -> DownsetResult:
    """Minimum makespan of ``problem`` within its memory cap, by the search above.

    Parameters
    ----------
    problem
        An integer problem (integer durations and sizes) with a memory cap, at most
        :data:`MAX_UNITS` units (see :func:`downset_search_applies`).
    upper_bound
        Look only for schedules that end strictly before this (the makespan of a schedule
        the caller has); None: no limit.
    max_downsets, max_labels
        Budgets: the search gives up (``proven`` false) when either runs out, when the
        down-sets outgrow their budget early (see
        :func:`~opsched.solver._downset_table.downset_table`), or when the down-sets that can
        finish, times :data:`LABELS_PER_DOWNSET` per unit beyond the first, exceed the
        labels. Memory is about
        ``8 * words + 40`` bytes per down-set (``words = ceil(ops / 64)``) and 37 (2 units)
        to 57 (4 units) bytes per label.
    deadline
        A ``time.perf_counter()`` value: the search gives up (reason ``"time limit"``) once
        the clock passes it, looked at once a layer and every 65,536 down-sets and labels.
        The budgets are counts, so the same on every run; on a loaded machine they take
        longer than their seconds' worth, and this is the stop that holds then. None: no
        deadline.
    beam
        Keep only this many labels per layer (0: all; the exact search).

    Examples
    --------
    Two 4-byte producers, each read by a consumer: side by side on 2 units they end at 3,
    but under a 4-byte cap one tensor fits at a time, so the pairs run one after the other:

    >>> from opsched.ir import Op, OpGraph
    >>> from opsched.problem import Machine
    >>> g = OpGraph((Op("a", 2, output_bytes=4), Op("b", 2, output_bytes=4),
    ...              Op("c", 1, deps=("a",)), Op("d", 1, deps=("b",))))
    >>> downset_search(Problem(g, Machine(units=2))).makespan
    3
    >>> r = downset_search(Problem(g, Machine(units=2, memory_cap=4)))
    >>> r.makespan, r.proven, r.starts
    (6, True, [0, 3, 2, 5])
    """
    t0 = time.perf_counter()
    # without a cap every down-set is one (fine on small graphs): the other conditions hold
    why = downset_search_applies(problem.with_machine(memory_cap=problem.memory_cap or 0))
    if why is not None:
        raise ProblemError(f"the down-set search does not apply: {why}")
    g = problem.graph
    n, k = g.num_ops, int(problem.machine.units or 0)
    nw = max(1, (n + 63) // 64)
    cap = problem.memory_cap
    free = (int(cap) if cap is not None else _everything(g)) - g.persistent_bytes
    if free < 0:  # the persistent bytes alone are over the cap
        return DownsetResult(None, None, True, "", (0, 0), 0, time.perf_counter() - t0)
    arrays = _arrays(problem, nw)
    dur, out, ws = arrays["dur"], arrays["out"], arrays["ws"]
    # the work grows with the down-sets, not with the graph: compiled beyond toy sizes, even
    # where that means compiling first (must_compile and compile_kernels plan for it)
    size = COMPILE_MIN_SIZE if n > INTERPRETED_OPS else 0
    until = math.inf if deadline is None else float(deadline)
    keys, table, rows, _, live, work, good, status = call(
        downset_table, size, n, nw, arrays["pm"], arrays["rm"], arrays["pred_ptr"],
        arrays["pred_idx"], dur, out, arrays["need"], arrays["kept"], arrays["held"], free,
        max_downsets, until,
    )  # fmt: skip
    if status:
        why = "time limit" if status == 2 else "down-set budget"
        return DownsetResult(None, None, False, why, (0, rows), 0,
                             time.perf_counter() - t0)  # fmt: skip
    counts = (int(good.sum()), int(rows))
    if not good[0]:  # no one-unit order fits: no schedule at all
        return DownsetResult(None, None, True, "", counts, 0, time.perf_counter() - t0)
    if beam == 0 and counts[0] * LABELS_PER_DOWNSET * max(1, k - 1) > max_labels:
        # the exact sweep would not fit its label budget: stop before making labels
        return DownsetResult(None, None, False, "label budget", counts, 0,
                             time.perf_counter() - t0)  # fmt: skip
    tails = arrays["tail"]
    by_tail = np.argsort(-tails, kind="stable").astype(np.int64)
    tmax = call(tail_max, size, keys, rows, nw, by_tail, tails)
    ub = int(upper_bound) if upper_bound is not None else int(dur.sum()) + 1
    best, label, labels, status, lt, lpar, lop = call(
        label_search, size, n, nw, k, keys, table, live, work, good, tmax,
        arrays["pm"], arrays["rm"], arrays["pred_ptr"], arrays["pred_idx"], dur, out, ws,
        arrays["kept"], arrays["held"], arrays["dem"], arrays["rcap"], arrays["succ_tail"],
        int(dur.sum()), free, ub, max_labels, beam, until,
    )  # fmt: skip
    starts = None
    if label >= 0:
        starts = [0] * n
        i = int(label)
        while lpar[i] >= 0:
            if lop[i] >= 0:
                starts[int(lop[i])] = int(lt[lpar[i]])
            i = int(lpar[i])
    reason = {1: "label budget", 2: "time limit"}.get(int(status), "beam" if beam > 0 else "")
    return DownsetResult(
        int(best) if label >= 0 else None, starts, not reason, reason, counts, int(labels),
        time.perf_counter() - t0,
    )  # fmt: skip


def _everything(g: OpGraph) -> int:
    """More bytes than any schedule can hold (no cap)."""
    return int(g.persistent_bytes + g.output_sizes.sum() + g.workspace_sizes.sum())


def _arrays(problem: Problem, nw: int) -> dict[str, np.ndarray]:
    """The graph as the kernels read it: bit masks, CSR predecessors, sizes, tails."""
    g = problem.graph
    n = g.num_ops
    pred_ptr = g.pred_ptr.astype(np.int64)
    pred_idx = g.pred_idx.astype(np.int64)
    succ_ptr, succ_idx = g.succ_ptr, g.succ_idx
    pm = np.zeros((n, nw), dtype=np.int64)
    rm = np.zeros((n, nw), dtype=np.int64)
    for v in range(n):
        for u in pred_idx[pred_ptr[v] : pred_ptr[v + 1]].tolist():
            pm[v, u >> 6] |= np.int64(1) << np.int64(u & 63)
            rm[u, v >> 6] |= np.int64(1) << np.int64(v & 63)
    dur = np.rint(g.durations).astype(np.int64)
    out = g.output_sizes.astype(np.int64)
    ws = g.workspace_sizes.astype(np.int64)
    has_reader = np.diff(succ_ptr) > 0
    held = np.array([op.output for op in g.ops], dtype=bool) & ~has_reader
    kept = np.where(has_reader | held, out, 0).astype(np.int64)
    need = np.where(dur > 0, out + ws, 0).astype(np.int64)
    tail = np.zeros(n, dtype=np.int64)  # longest path from the op's start to the end
    succ_tail = np.zeros(n, dtype=np.int64)
    for v in reversed(topo_indices(g).tolist()):
        nxt = succ_idx[succ_ptr[v] : succ_ptr[v + 1]]
        succ_tail[v] = int(tail[nxt].max()) if len(nxt) else 0
        tail[v] = dur[v] + succ_tail[v]
    named = [(r, c) for r, c in problem.capacities.items() if r != "units" and c is not None]
    dem = np.array([g.demand_array(r) for r, _ in named], dtype=np.int64).reshape(len(named), n)
    rcap = np.array([c for _, c in named], dtype=np.int64)
    return {
        "pm": pm, "rm": rm, "pred_ptr": pred_ptr, "pred_idx": pred_idx, "dur": dur,
        "out": out, "ws": ws, "held": held.astype(np.int8), "kept": kept, "need": need,
        "tail": tail, "succ_tail": succ_tail, "dem": dem, "rcap": rcap,
    }  # fmt: skip

"""Splitting a schedule at the ops every other op must wait for, or run before.

Call an op ``X`` a *cut op* when every other op is its ancestor or its descendant, and no
edge runs from an ancestor straight to a descendant. In every schedule ``X`` then runs alone:
its ancestors have ended when it starts, its descendants start after it ends. The tensors
alive at that moment are its inputs (no later op reads them), its output (every op before
``X`` has a reader, so no graph output is kept from before it). So the schedule falls into
independent phases, and under any memory cap and resources:

    least makespan = sum over phases of (least makespan of the phase) - sum of d(X)

over the cut ops shared by two phases (each phase runs from its first cut op's start to its
last one's end). A phase is an ordinary problem (:func:`phases`): its ops with the cut ops
at its two ends; the first cut op's inputs become zero-time inputs (live until it ends, as
they are). Each phase is solved on its own, and the schedules are put end to end.

Why: the phases can differ in kind. RandWire's stage3 + stage4 at the cap stage3 needs (its
least peak) leaves stage4 slack: the down-set search (:mod:`opsched.solver.downsets`) proves
stage3 in a second and CP-SAT stage4 in a tenth, where neither proves the whole (182 ops).
Only makespan objectives under a memory cap are split (:func:`solve_cpsat`'s default).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from opsched.analysis.topo import topo_indices
from opsched.ir.graph import OpGraph
from opsched.ir.op import Op
from opsched.problem import Problem
from opsched.schedule import Schedule, Status
from opsched.solver.settle import settle_starts

__all__ = ["MIN_PHASE_OPS", "Phase", "cut_ops", "phases", "solve_phases", "split_points"]

#: A graph is split only where each phase keeps at least this many ops (smaller ones are
#: merged with their neighbour: each phase costs a solver call).
MIN_PHASE_OPS = 8


def _topo_positions(graph: OpGraph) -> tuple[np.ndarray, np.ndarray]:
    """Kahn's topological order and each op's position in it."""
    order = topo_indices(graph)
    pos = np.empty(graph.num_ops, dtype=np.int64)
    pos[order] = np.arange(graph.num_ops)
    return order, pos


def cut_ops(graph: OpGraph) -> list[int]:
    """The cut ops of ``graph`` (see the module docstring), in topological order.

    In a topological order, ``X`` at position ``p`` is a cut op iff no edge jumps over ``p``,
    every op before ``p`` has a successor (following successors from it then stays before
    ``p`` or reaches ``X``) and every op after ``p`` a predecessor. ``O(V + E)``.

    Examples
    --------
    A chain ``a -> b -> c`` beside nothing: all three are cut ops; add ``d`` reading ``a``
    and read by ``c`` and ``b`` is no longer one.

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 1), Op("b", 1, deps=("a",)), Op("c", 1, deps=("b",))))
    >>> [g.ops[v].name for v in cut_ops(g)]
    ['a', 'b', 'c']
    >>> g = OpGraph((Op("a", 1), Op("b", 1, deps=("a",)), Op("d", 1, deps=("a",)),
    ...              Op("c", 1, deps=("b", "d"))))
    >>> [g.ops[v].name for v in cut_ops(g)]
    ['a', 'c']
    """
    n = graph.num_ops
    if n == 0:
        return []
    order, pos = _topo_positions(graph)
    src = np.repeat(np.arange(n), np.diff(graph.succ_ptr))
    a, b = pos[src], pos[graph.succ_idx]
    jump = np.zeros(n + 1, dtype=np.int64)  # edges (u, w) jump over every p in (pos u, pos w)
    np.add.at(jump, a + 1, 1)
    np.add.at(jump, b, -1)
    jump = np.cumsum(jump)[:n]
    sinks = np.flatnonzero(np.diff(graph.succ_ptr)[order] == 0)
    sources = np.flatnonzero(np.diff(graph.pred_ptr)[order] == 0)
    last_source, first_sink = int(sources.max()), int(sinks.min())
    return [int(order[p]) for p in range(last_source, first_sink + 1) if jump[p] == 0]


def split_points(graph: OpGraph, min_ops: int = MIN_PHASE_OPS) -> list[int]:
    """Cut ops to split ``graph`` at, each phase at least ``min_ops`` ops; [] for none.

    >>> from opsched.ir import Op, OpGraph
    >>> chain = OpGraph(tuple(Op(f"o{i}", 1, deps=(f"o{i - 1}",) if i else ()) for i in range(20)))
    >>> [chain.ops[v].name for v in split_points(chain)]
    ['o7']
    """
    cuts = cut_ops(graph)
    n = graph.num_ops
    _, pos = _topo_positions(graph)
    chosen: list[int] = []
    start = 0  # position of the current phase's first op
    for c in cuts:
        p = int(pos[c])
        if p - start + 1 >= min_ops and n - p >= min_ops:
            chosen.append(c)
            start = p
    return chosen


@dataclass(frozen=True)
class Phase:
    """One phase: its problem and which op of the whole graph each of its ops is.

    ``ops[i]`` is the original index of the phase graph's op ``i``, or -1 for a zero-time
    input standing for a tensor written before the phase.
    """

    problem: Problem
    ops: tuple[int, ...]


def phases(problem: Problem, cuts: list[int]) -> list[Phase]:
    """The phases between consecutive ``cuts`` (cut ops of ``problem``'s graph, in order).

    Every op lies in exactly one phase but the inner cut ops, which end one and start the
    next. See the module docstring for how the memory of each is kept exact.
    """
    g = problem.graph
    n = g.num_ops
    order, pos = _topo_positions(g)
    at = sorted(int(pos[c]) for c in cuts)
    bounds = [(None, at[0]), *itertools.pairwise(at), (at[-1], None)]
    out: list[Phase] = []
    for lo, hi in bounds:
        first = 0 if lo is None else lo
        last = n - 1 if hi is None else hi
        members = [int(v) for v in order[first : last + 1]]
        if len(members) <= 1:
            continue  # a cut op at either end alone: it belongs to its neighbour
        inside = set(members)
        ops: list[Op] = []
        index: list[int] = []
        if lo is not None:  # the first cut op's inputs, written before the phase
            x = int(order[lo])
            for u in g.pred_idx[g.pred_ptr[x] : g.pred_ptr[x + 1]].tolist():
                src = g.ops[u]
                ops.append(Op(src.name, 0.0, output_bytes=src.output_bytes, demands={},
                              kind="input"))  # fmt: skip
                index.append(-1)
        for v in members:
            op = g.ops[v]
            deps = tuple(d for d in op.deps if g.index(d) in inside or v == members[0])
            ops.append(replace(op, deps=deps) if deps != op.deps else op)
            index.append(v)
        piece = OpGraph(tuple(ops), name=f"{g.name}[phase {len(out)}]", resources=g.resources,
                        persistent_bytes=g.persistent_bytes)  # fmt: skip
        out.append(Phase(Problem(piece, problem.machine, problem.objective), tuple(index)))
    return out


def solve_phases(
    problem: Problem,
    cuts: list[int],
    solve: Callable[[Problem, float], Schedule],
    time_limit: float,
    progress: Callable[[str], None] | None = None,
) -> Schedule:
    """Solve each phase with ``solve(problem, seconds)`` and put the schedules end to end.

    Each phase gets the time left in proportion to its ops (what a phase leaves unused goes
    to the next). Time still left after the last phase goes to the phases not proven
    optimal, again in proportion to their ops: each is solved once more and keeps the
    better of its two answers (a lower makespan, or the same one proven), so a tight phase
    gets the time a loose one after it did not need. OPTIMAL only when every phase is; the
    lower bound is the phases' bounds put together the same way as their makespans.
    """
    t0 = time.perf_counter()
    g = problem.graph
    parts = phases(problem, cuts)
    done: list[Schedule] = []
    report: list[dict[str, Any]] = []

    def left() -> float:
        return time_limit - (time.perf_counter() - t0)

    remaining = sum(p.problem.graph.num_ops for p in parts)
    for i, part in enumerate(parts):
        m = part.problem.graph.num_ops
        if progress is not None:
            progress(f"phase {i + 1} of {len(parts)}: {m} ops")
        s = solve(part.problem, max(0.01, left()) * m / remaining)
        remaining -= m
        report.append(_phase_info(m, s))
        if not s.has_schedule:  # one phase without a schedule: none for the whole
            info = {"reason": f"phase {i + 1} of {len(parts)}: {s.info.get('reason', '')}",
                    "split": {"cuts": [g.ops[c].name for c in cuts], "phases": report}}  # fmt: skip
            return Schedule.empty(problem, solver="cpsat", status=s.status, info=info,
                                  wall_time_s=time.perf_counter() - t0)  # fmt: skip
        done.append(s)
    # the time the phases left: once more for those not proven, in phase order
    again = [i for i, s in enumerate(done) if s.status is not Status.OPTIMAL]
    remaining = sum(parts[i].problem.graph.num_ops for i in again)
    for i in again:
        m = parts[i].problem.graph.num_ops
        seconds = left() * m / remaining
        remaining -= m
        if seconds < SECOND_PASS_MIN_S:
            continue
        if progress is not None:
            progress(f"phase {i + 1} of {len(parts)} again, with the time left ({seconds:.1f} s)")
        s = solve(parts[i].problem, seconds)
        bounds = [b for b in (s.lower_bound, done[i].lower_bound) if b is not None]
        if _better(s, done[i]):
            done[i] = s
            report[i] = {**_phase_info(m, s), "second_pass": True}
        if bounds:  # the better bound of the two tries holds for the phase
            report[i]["lower_bound"] = max(bounds)
    starts = np.zeros(g.num_ops)
    lower = 0.0
    shift = 0.0
    for i, (part, s) in enumerate(zip(parts, done, strict=True)):
        first = 0 if i == 0 else next(j for j, v in enumerate(part.ops) if v >= 0)
        offset = shift - (s.ops[first].start if i > 0 else 0.0)  # its first cut op at shift
        for o, v in zip(s.ops, part.ops, strict=True):
            if v >= 0:
                starts[v] = o.start + offset
        last = part.ops[-1]
        shift = float(starts[last])  # where the next phase's first op (this last one) starts
        d_last = float(g.durations[last])
        bound = report[i]["lower_bound"]
        lower += (bound if bound is not None else 0.0) - (d_last if i < len(parts) - 1 else 0.0)
    # a phase is proven where its schedule is, or meets the better bound of its two tries
    proven = all(
        s.status is Status.OPTIMAL
        or (r["lower_bound"] is not None and s.makespan is not None
            and s.makespan <= r["lower_bound"])
        for s, r in zip(done, report, strict=True)
    )  # fmt: skip
    status = Status.OPTIMAL if proven else Status.FEASIBLE
    # here, not at the top: CP-SAT's package imports this module (a circular import when
    # this one is loaded first, as ``from opsched.solver import cut_ops`` does)
    from opsched.solver.cpsat.model import assign_units

    starts = settle_starts(starts, g.durations)  # the phases' offsets add rounding noise
    ends = starts + g.durations
    units = assign_units(starts.tolist(), ends.tolist(), g.demand_array("units").tolist())
    info = {"split": {"cuts": [g.ops[c].name for c in cuts], "phases": report}}
    return Schedule.build(problem, starts, units, solver="cpsat", status=status,
                          lower_bound=lower, wall_time_s=time.perf_counter() - t0,
                          info=info)  # fmt: skip


#: a second try of an unproven phase only with at least this many seconds left for it
SECOND_PASS_MIN_S = 0.2


def _phase_info(ops: int, s: Schedule) -> dict[str, Any]:
    return {"ops": ops, "status": s.status.value, "makespan": s.makespan,
            "lower_bound": s.lower_bound, "seconds": round(s.wall_time_s or 0.0, 3)}  # fmt: skip


def _better(new: Schedule, old: Schedule) -> bool:
    """Is ``new`` a better answer for a phase than ``old``: a schedule with a lower
    makespan, or the same makespan proven optimal."""
    if not new.has_schedule or new.makespan is None or old.makespan is None:
        return False
    if new.makespan < old.makespan - 1e-12:
        return True
    if new.makespan <= old.makespan + 1e-12:
        return new.status is Status.OPTIMAL and old.status is not Status.OPTIMAL
    return False

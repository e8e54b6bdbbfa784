"""The pipeline heuristic for large graphs: balanced stages + list scheduling of the unrolled graph.

1. Stage partition: :func:`~opsched.pipeline.partition.balanced_partition` cuts Kahn's
   topological order into ``S`` contiguous stages with the least bottleneck (exact DP).
2. Unroll ``M`` micro-batches (:func:`~opsched.pipeline.model.unroll`): every stage is a
   resource with its units as capacity.
3. List-schedule the unrolled problem (:func:`opsched.heuristics.listsched.list_schedule`,
   non-delay, memory-aware under a cap) with two priorities and keep the shorter makespan
   (then the lower latency; both candidates' makespan and latency are kept in ``info``):

   * ``microbatch-first``: earlier micro-batches first, b-level inside one (a GPipe-style
     fill: each input is finished as soon as possible, the least latency);
   * ``b-level``: the unrolled graph's b-level (equal ranks across micro-batches, so the
     file order, i.e. earlier micro-batches, breaks ties; more overlap when stages idle).

4. Units: each op goes to a unit of its stage's block (:func:`~opsched.pipeline.model.stage_units`).

Everything is validated as an ordinary schedule of the unrolled problem.

Examples
--------
>>> from opsched.ir import Op, OpGraph
>>> from opsched.problem import Machine, Problem
>>> g = OpGraph((Op("a", 2), Op("b", 1, deps=("a",)), Op("c", 2, deps=("b",))))
>>> r = pipeline_heuristic(Problem(g, Machine(units=2)), stages=2, microbatches=2)
>>> r.assignment, r.metrics.makespan, r.metrics.latency
([0, 1, 1], 8.0, 6.0)
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from opsched.analysis.bounds import lower_bounds
from opsched.analysis.paths import b_level
from opsched.heuristics.listsched import list_schedule
from opsched.ir import Op, OpGraph
from opsched.pipeline.model import (
    PipelineResult,
    pipeline_metrics,
    stage_capacities,
    stage_units,
    unroll,
)
from opsched.pipeline.partition import balanced_partition
from opsched.problem import Problem
from opsched.schedule import Schedule, Status

__all__ = ["pipeline_heuristic"]


def pipeline_heuristic(
    problem: Problem,
    stages: int,
    microbatches: int,
    *,
    assignment: Sequence[int] | None = None,
) -> PipelineResult:
    """Pipeline ``microbatches`` copies of ``problem.graph`` over ``stages`` stages.

    Parameters
    ----------
    problem
        The graph of one micro-batch and the machine: its ``units`` are split over the stages
        (:func:`~opsched.pipeline.model.stage_capacities`; one per stage if unlimited), its
        other resources exist once per stage, its memory cap covers all stages.
    stages, microbatches
        ``S`` and ``M``.
    assignment
        A stage per op to use instead of the balanced partition.

    Returns
    -------
    PipelineResult
        FEASIBLE schedule of the unrolled problem with metrics, or UNKNOWN (no schedule, the
        reason in ``schedule.info``) on a dead end under the memory cap.
    """
    t0 = time.perf_counter()
    g = problem.graph
    caps = stage_capacities(problem.machine.units, stages)
    given = assignment is not None
    if assignment is None:
        assignment = balanced_partition(g, stages, caps)
    assign = [int(s) for s in assignment]
    other = {r: c for r, c in problem.capacities.items() if r != "units"}
    up = unroll(g, assign, microbatches, caps, resources=other, memory_cap=problem.memory_cap)
    blev = b_level(g)
    span = float(blev.max()) + 1.0 if g.num_ops else 1.0
    per_copy = np.tile(blev, microbatches)
    mb = np.repeat(np.arange(microbatches), g.num_ops)
    rules = {
        "microbatch-first": per_copy + (microbatches - 1 - mb) * span,
        "b-level": per_copy,
    }
    best: tuple[tuple[float, float], str, Schedule] | None = None
    tried: dict[str, dict[str, float]] = {}
    last: Schedule | None = None
    for rule, prio in rules.items():
        s = list_schedule(up, prio, "earliest")
        last = s
        if not s.has_schedule:
            continue
        starts = [o.start for o in s.ops]
        cand = Schedule.build(
            up, starts, stage_units(up, starts), solver="pipeline-heuristic", status=Status.FEASIBLE
        )
        key = (cand.makespan or 0.0, pipeline_metrics(up, cand).latency)
        tried[rule] = {"makespan": key[0], "latency": key[1]}
        if best is None or key < best[0]:
            best = (key, rule, cand)
    elapsed = time.perf_counter() - t0
    info = {"stages": stages, "microbatches": microbatches, "capacities": caps}
    if best is None:
        assert last is not None
        last.solver = "pipeline-heuristic"
        last.wall_time_s = elapsed
        return PipelineResult(up, last, assign, None, "heuristic", {**info, **last.info})
    _, rule, sched = best
    if given:  # the problem is this assignment's: its unrolled graph bounds it
        sched.lower_bound = lower_bounds(up.graph, up.machine.units, up.capacities).value
    else:  # the problem leaves the assignment open, and another can be faster
        sched.lower_bound = _any_assignment_bound(g, microbatches, caps, other, stages)
    sched.wall_time_s = elapsed
    info |= {"priority": rule, "candidates": tried}
    sched.info = dict(info)
    return PipelineResult(up, sched, assign, pipeline_metrics(up, sched), "heuristic", info)


def _any_assignment_bound(
    g: OpGraph, microbatches: int, caps: Sequence[int], other: dict[str, int | None], stages: int
) -> float:
    """A makespan bound for every stage assignment: ``microbatches`` copies of ``g`` on one
    machine pooling the stages' units and each resource's ``stages`` copies (any pipelined
    schedule is a schedule of that machine)."""
    ops = [
        Op(f"{o.name}@{m}", o.duration, deps=tuple(f"{d}@{m}" for d in o.deps), demands=o.demands)
        for m in range(microbatches)
        for o in g.ops
    ]
    pooled = {r: None if c is None else c * stages for r, c in other.items()}
    return lower_bounds(OpGraph(tuple(ops), resources=dict(g.resources)), sum(caps), pooled).value

"""The pipeline problem as an ordinary opsched problem: unrolling, stage units, metrics.

A *pipeline* runs ``M`` micro-batches (or requests) through one op graph. The ops are split
into ``S`` stages; stage ``s`` owns a block of ``c_s`` compute units (a device, or a group of
streams), and every copy of an op runs on its stage's units. Unrolling makes this an ordinary
problem that every opsched tool understands:

* op ``v`` of micro-batch ``m`` becomes op ``"v@m"``; dependencies stay inside a micro-batch;
* op ``v`` in stage ``s`` demands ``units`` as before and the same amount of resource
  ``"stage<s>"`` (capacity ``c_s``), and every other resource ``r`` it demands is renamed
  ``"r@stage<s>"`` with ``r``'s capacity (each stage is its own device);
* the machine has ``K = sum(c_s)`` units; weights (``persistent_bytes``) are counted once and
  the memory cap applies to all stages together.

So a pipelined schedule is a :class:`~opsched.schedule.Schedule` of the unrolled problem and
:func:`opsched.validate.validate` checks it; :func:`stage_units` then puts every op on a unit
of its own stage's block (``sum(c_<s)`` .. ``sum(c_<=s) - 1``), and :func:`check_stages`
confirms it.

Examples
--------
>>> from opsched.ir import Op, OpGraph
>>> g = OpGraph((Op("a", 2), Op("b", 1, deps=("a",))))
>>> p = unroll(g, [0, 1], microbatches=2, capacities=[1, 1])
>>> p.graph.names, p.machine.units, p.graph["b@1"].demands
(['a@0', 'b@0', 'a@1', 'b@1'], 2, {'units': 1, 'stage1': 1})
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opsched.errors import ProblemError
from opsched.ir.graph import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule
from opsched.solver.cpsat.model import assign_units
from opsched.validate.report import Violation

__all__ = [
    "PipelineMetrics",
    "PipelineResult",
    "check_stages",
    "copy_name",
    "pipeline_metrics",
    "stage_capacities",
    "stage_units",
    "stage_violations",
    "unroll",
]


def copy_name(op: str, microbatch: int) -> str:
    """Name of op ``op`` of micro-batch ``microbatch`` in the unrolled graph (``"op@m"``)."""
    return f"{op}@{microbatch}"


def stage_capacities(units: int | None, stages: int) -> list[int]:
    """Split ``units`` compute units over ``stages`` stages as evenly as possible.

    Earlier stages get the remainder. ``units`` defaults to one per stage.

    Examples
    --------
    >>> stage_capacities(5, 2), stage_capacities(None, 3)
    ([3, 2], [1, 1, 1])
    """
    if isinstance(stages, bool) or not isinstance(stages, int) or stages < 1:
        raise ProblemError(f"stages must be an integer >= 1, got {stages!r}")
    k = stages if units is None else units
    if k < stages:
        raise ProblemError(f"{k} unit(s) cannot hold {stages} stages (at least one unit each)")
    return [k // stages + (1 if s < k % stages else 0) for s in range(stages)]


def _check_assignment(graph: OpGraph, assignment: Sequence[int], stages: int) -> np.ndarray:
    a = np.asarray(assignment, dtype=np.int64)
    if a.shape != (graph.num_ops,):
        raise ProblemError(f"stage assignment needs {graph.num_ops} entries, got {a.shape}")
    bad = np.flatnonzero((a < 0) | (a >= stages))
    if len(bad):
        raise ProblemError(
            f"stage {a[bad[0]]} out of 0..{stages - 1}", f"op {graph.names[bad[0]]!r}"
        )
    for v in range(graph.num_ops):
        for u in graph.pred_idx[graph.pred_ptr[v] : graph.pred_ptr[v + 1]]:
            if a[u] > a[v]:
                raise ProblemError(
                    f"depends on {graph.names[u]!r} of the later stage {a[u]} (stages must not "
                    f"go backwards along an edge)",
                    f"op {graph.names[v]!r} (stage {a[v]})",
                )
    return a


def unroll(
    graph: OpGraph,
    assignment: Sequence[int],
    microbatches: int,
    capacities: Sequence[int],
    *,
    resources: dict[str, int | None] | None = None,
    memory_cap: int | None = None,
) -> Problem:
    """The ordinary problem of ``microbatches`` copies of ``graph`` on staged units.

    Parameters
    ----------
    graph
        One micro-batch's op graph.
    assignment
        Stage of every op (graph order); stages never decrease along an edge.
    microbatches
        ``M >= 1``.
    capacities
        Units of every stage (its length is the number of stages).
    resources
        Capacities of the graph's other resources on each stage's device (default: the
        graph's own).
    memory_cap
        Bytes for all stages together.

    Returns
    -------
    Problem
        Ops ``"v@m"`` in micro-batch-major order (see the module docstring).
    """
    if isinstance(microbatches, bool) or not isinstance(microbatches, int) or microbatches < 1:
        raise ProblemError(f"microbatches must be an integer >= 1, got {microbatches!r}")
    caps = [int(c) for c in capacities]
    if not caps or min(caps) < 1:
        raise ProblemError(f"every stage needs at least one unit, got {caps}")
    a = _check_assignment(graph, assignment, len(caps))
    res_caps: dict[str, int | None] = dict(graph.resources)
    res_caps.update(resources or {})
    out_res: dict[str, int] = {f"stage{s}": c for s, c in enumerate(caps)}
    ops: list[Op] = []
    for m in range(microbatches):
        for v, op in enumerate(graph.ops):
            s = int(a[v])
            dem: dict[str, int] = {}
            for r, x in op.demands.items():
                if r == "units":
                    dem["units"] = x
                    if x:
                        dem[f"stage{s}"] = x
                elif res_caps.get(r) is not None:
                    dem[f"{r}@stage{s}"] = x
                    out_res[f"{r}@stage{s}"] = int(res_caps[r])  # type: ignore[arg-type]
            attrs = dict(op.attrs) | {"microbatch": m, "stage": s, "op": op.name}
            ops.append(
                Op(
                    copy_name(op.name, m),
                    op.duration,
                    tuple(copy_name(d, m) for d in op.deps),
                    op.output_bytes,
                    op.workspace_bytes,
                    dem,
                    op.kind,
                    op.output,
                    attrs,
                )
            )
    g = OpGraph(
        tuple(ops),
        name=f"{graph.name}-x{microbatches}",
        persistent_bytes=graph.persistent_bytes,
        resources=out_res,
        attrs={
            "pipeline": {
                "microbatches": microbatches,
                "stages": len(caps),
                "capacities": caps,
                "graph": graph.name,
            }
        },
    )
    return Problem(g, Machine(units=sum(caps), resources=out_res, memory_cap=memory_cap))


def _stage_of(problem: Problem) -> np.ndarray:
    return np.array([op.attrs["stage"] for op in problem.graph.ops], dtype=np.int64)


def stage_units(problem: Problem, starts: Sequence[float] | np.ndarray) -> list[int | None]:
    """Unit of every op of an unrolled problem: lowest free unit of its own stage's block.

    The stage resource keeps at most ``c_s`` unit-demanding ops of stage ``s`` running at once,
    so a lowest-free-unit colouring per stage stays inside the block.
    """
    g = problem.graph
    caps = g.attrs["pipeline"]["capacities"]
    base = np.concatenate([[0], np.cumsum(caps)[:-1]]).astype(int)
    st = np.asarray(starts, dtype=np.float64)
    ends = st + g.durations
    demand = g.demand_array("units")
    stage = _stage_of(problem)
    out: list[int | None] = [None] * g.num_ops
    for s in range(len(caps)):
        idx = np.flatnonzero(stage == s)
        cols = assign_units(st[idx].tolist(), ends[idx].tolist(), demand[idx].tolist())
        for i, u in zip(idx.tolist(), cols, strict=True):
            out[i] = None if u is None else int(base[s] + u)
    return out


def check_stages(problem: Problem, schedule: Schedule) -> list[str]:
    """Ops of an unrolled schedule placed on a unit outside their stage's block (empty: fine).

    Ops the graph does not have are left to :func:`opsched.validate.validate`.
    """
    caps = problem.graph.attrs["pipeline"]["capacities"]
    bounds = np.concatenate([[0], np.cumsum(caps)]).astype(int)
    stage = dict(zip(problem.graph.names, _stage_of(problem).tolist(), strict=True))
    bad = []
    for o in schedule.ops:
        s = stage.get(o.name)
        if s is not None and o.unit is not None and not bounds[s] <= o.unit < bounds[s + 1]:
            bad.append(f"{o.name} (stage {s}) on unit {o.unit}")
    return bad


def stage_violations(problem: Problem, schedule: Schedule) -> list[Violation]:
    """:func:`check_stages` as validator violations (kind ``stage``) when ``problem`` is an
    unrolled pipeline (its graph records ``attrs.pipeline``, as ``--graph-out`` writes it);
    empty for any other problem.

    The stage resources only bound how many ops of a stage run at once: a schedule that runs
    an op on a unit of another stage's block (another device) passes every other check.

    Raises
    ------
    ProblemError
        If the graph records a pipeline but not its stage capacities or an op's stage.
    """
    info = problem.graph.attrs.get("pipeline")
    if not isinstance(info, dict) or "capacities" not in info:
        return []
    caps = info["capacities"]
    if (
        not isinstance(caps, list)
        or not caps
        or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in caps)
    ):
        raise ProblemError(f"attrs.pipeline.capacities must be a list of unit counts >= 1, "
                           f"got {caps!r}")  # fmt: skip
    for op in problem.graph.ops:
        st = op.attrs.get("stage")
        if isinstance(st, bool) or not isinstance(st, int) or not 0 <= st < len(caps):
            raise ProblemError(f"attrs.stage must be a stage in 0..{len(caps) - 1} of the "
                               f"pipeline, got {st!r}", f"op {op.name!r}")  # fmt: skip
    out = []
    for line in check_stages(problem, schedule):
        name = line.split(" ", 1)[0]
        out.append(Violation("stage", f"{line}, outside its stage's units", (name,)))
    return out


@dataclass(frozen=True)
class PipelineMetrics:
    """Latency of one input and throughput of a pipelined schedule.

    ``latency`` is the longest time from a micro-batch's first start to its last end
    (over its ops that take time: a zero-duration op, such as an input placeholder, may
    sit anywhere before its readers and would otherwise stretch the latency by where the
    list scheduler happened to put it; a micro-batch of zero-duration ops only counts
    them all);
    ``interval`` the mean time between consecutive micro-batch completions (the initiation
    interval a steady stream sees; the makespan when ``M = 1``) and ``max_gap`` the longest;
    ``throughput`` is ``M / makespan``; ``bottleneck`` the largest stage work per unit, a
    lower bound on the period of any periodic schedule (a schedule that holds outputs back
    and releases them together can show a smaller ``interval``, never a shorter makespan
    than ``(M - 1) * bottleneck``).
    """

    makespan: float
    latency: float
    mean_latency: float
    interval: float
    max_gap: float
    throughput: float
    bottleneck: float
    stage_work: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def pipeline_metrics(problem: Problem, schedule: Schedule) -> PipelineMetrics:
    """Metrics of an unrolled pipelined ``schedule`` (times recomputed from its op starts).

    Examples
    --------
    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 2), Op("b", 1, deps=("a",))))
    >>> p = unroll(g, [0, 1], 2, [1, 1])
    >>> s = Schedule.build(p, {"a@0": 0, "b@0": 2, "a@1": 2, "b@1": 4}, solver="hand")
    >>> m = pipeline_metrics(p, s)
    >>> m.makespan, m.latency, m.interval, m.bottleneck
    (5.0, 3.0, 2.0, 2.0)
    """
    g = problem.graph
    info = g.attrs["pipeline"]
    mcount, caps = info["microbatches"], info["capacities"]
    by_name = schedule.starts()
    st = np.array([by_name[n] for n in g.names])
    en = st + g.durations
    mb = np.array([op.attrs["microbatch"] for op in g.ops])
    timed = g.durations > 0
    first = np.empty(mcount)
    last = np.empty(mcount)
    for m in range(mcount):
        mine = mb == m
        if (mine & timed).any():
            mine &= timed
        first[m], last[m] = st[mine].min(), en[mine].max()
    lat = last - first
    done = np.sort(last)
    interval = float((done[-1] - done[0]) / (mcount - 1)) if mcount > 1 else float(done[-1])
    gap = float(np.diff(done).max()) if mcount > 1 else float(done[-1])
    makespan = float(en.max()) if g.num_ops else 0.0
    stage = _stage_of(problem)
    work = g.durations * g.demand_array("units")
    per_stage = [float(work[(stage == s) & (mb == 0)].sum()) for s in range(len(caps))]
    bottleneck = max(w / c for w, c in zip(per_stage, caps, strict=True))
    return PipelineMetrics(
        makespan=makespan,
        latency=float(lat.max()),
        mean_latency=float(lat.mean()),
        interval=interval,
        max_gap=gap,
        throughput=mcount / makespan if makespan > 0 else float("inf"),
        bottleneck=bottleneck,
        stage_work=per_stage,
    )


@dataclass
class PipelineResult:
    """A pipelined schedule with its unrolled problem, stage assignment and metrics."""

    problem: Problem
    schedule: Schedule
    assignment: list[int]
    metrics: PipelineMetrics | None
    method: str
    info: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        """One line: method, status, makespan, latency, interval and the stage sizes."""
        if self.metrics is None:
            return f"{self.method}: {self.schedule.status.value}, no schedule"
        m = self.metrics
        sizes = np.bincount(self.assignment, minlength=len(m.stage_work)).tolist()
        interval = f"interval {m.interval:g} (bottleneck {m.bottleneck:g})"
        if m.interval < m.bottleneck * (1 - 1e-9):
            # a makespan-optimal schedule may finish the micro-batches together: the spread
            # of their ends is then no period (a periodic one cannot beat the bottleneck)
            interval = (f"interval {m.interval:g}, below the bottleneck {m.bottleneck:g}: the "
                        "outputs end together, not periodically")  # fmt: skip
        return (
            f"{self.method}: {self.schedule.status.value}, makespan {m.makespan:g}, latency "
            f"{m.latency:g}, {interval}, ops per stage {sizes}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "status": self.schedule.status.value,
            "assignment": list(self.assignment),
            "metrics": None if self.metrics is None else self.metrics.to_dict(),
            "info": self.info,
        }

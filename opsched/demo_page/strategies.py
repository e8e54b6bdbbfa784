"""The three scheduling strategies of the seed, computed side by side on one graph.

* **parallel** (max throughput over ``k`` units): critical-path (b-level) greedy.
* **memory-aware** (min peak): the one-unit order of least peak memory, proven by CP-SAT
  (objective ``memory_then_makespan``: least peak, then no idle time at that peak).
* **pipeline** (min latency over micro-batches): ``M`` copies of the graph, op ``v`` of
  micro-batch ``m`` also waiting for op ``v`` of micro-batch ``m - 1`` (each op is a stage
  that takes inputs in order). A new micro-batch is admitted once per the least interval
  the pipeline can sustain (:func:`admission_interval`), so inputs do not queue up inside it
  and each one's latency stays near the single-input makespan; the b-level greedy on ``k``
  units places the ops.

Every schedule is checked by :func:`opsched.validate.validate`, and its memory curve comes
from :func:`opsched.validate.simulate`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from opsched.analysis import critical_path
from opsched.heuristics import greedy
from opsched.ir import Op, OpGraph
from opsched.ir.kinds import bytes_min, dtype_bytes, flops, output_numel
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule, Status
from opsched.solver import solve_cpsat
from opsched.validate import simulate, validate

__all__ = ["admission_interval", "compare_strategies", "inception_block", "unroll_micro_batches"]

#: Nominal device of the demo's durations: 10 TFLOP/s and 500 GB/s, times in microseconds.
_FLOPS_PER_US = 10e12 / 1e6
_BYTES_PER_US = 500e9 / 1e6

_BLOCK: list[tuple[str, str, tuple[str, ...], dict[str, Any]]] = [
    ("in", "input", (), {"numel": 192 * 28 * 28}),
    ("b1_1x1", "conv2d", ("in",), {"K": 64, "R": 1, "S": 1}),
    ("b2_1x1", "conv2d", ("in",), {"K": 96, "R": 1, "S": 1}),
    ("b2_3x3", "conv2d", ("b2_1x1",), {"C": 96, "K": 128, "R": 3, "S": 3, "pad": 1}),
    ("b3_1x1", "conv2d", ("in",), {"K": 16, "R": 1, "S": 1}),
    ("b3_5x5", "conv2d", ("b3_1x1",), {"C": 16, "K": 32, "R": 5, "S": 5, "pad": 2}),
    ("b4_pool", "pool", ("in",), {"R": 3, "S": 3, "pad": 1, "mode": "max"}),
    ("b4_1x1", "conv2d", ("b4_pool",), {"K": 32, "R": 1, "S": 1}),
    ("concat", "copy", ("b1_1x1", "b2_3x3", "b3_5x5", "b4_1x1"), {"numel": 256 * 28 * 28}),
]


def inception_block() -> OpGraph:
    """An Inception-style block (28 x 28 x 192 in, four branches, concat), float32.

    Shapes follow :mod:`opsched.ir.kinds`; each op's ``output_bytes`` is its output numel
    times 4, and its duration (microseconds, rounded up) is the larger of its FLOPs at
    10 TFLOP/s and its least memory traffic at 500 GB/s: a nominal roofline, enough to make
    the branches unequal the way real kernels are.

    Examples
    --------
    >>> g = inception_block()
    >>> g.num_ops, g["b2_3x3"].duration, g["b2_3x3"].output_bytes
    (9, 18.0, 401408)
    """
    ops = []
    for name, kind, deps, extra in _BLOCK:
        attrs: dict[str, Any] = dict(extra)
        if kind in ("conv2d", "pool"):
            pad = attrs.pop("pad", 0)
            attrs = {"N": 1, "C": 192, "H": 28, "W": 28, **attrs}
            attrs.update(pad_h=pad, pad_w=pad)
        attrs["dtype"] = "float32"
        work = flops(kind, attrs) / _FLOPS_PER_US
        traffic = bytes_min(kind, attrs) / _BYTES_PER_US
        duration = max(1, math.ceil(max(work, traffic) - 1e-9))
        size = output_numel(kind, attrs) * dtype_bytes(attrs)
        ops.append(
            Op(
                name,
                duration,
                deps=deps,
                output_bytes=size,
                kind=kind,
                attrs=attrs,
                output=name == "concat",
            )
        )
    return OpGraph(tuple(ops), name="inception-block")


def unroll_micro_batches(
    graph: OpGraph, micro_batches: int, admit_every: float | None = None
) -> OpGraph:
    """``micro_batches`` copies of ``graph`` (ops named ``name@m``), chained op by op.

    Copy ``m`` of op ``v`` depends on the copies ``m`` of ``v``'s dependencies and on copy
    ``m - 1`` of ``v`` itself: each op processes the micro-batches in order, like a pipeline
    stage. With ``admit_every``, a chain of admission ops ``admit@m`` (that long, holding no
    unit; ``admit_@m`` if the graph has an op named ``admit``) gates the first ops of
    micro-batch ``m + 1``, so micro-batch ``m`` enters no earlier than ``m * admit_every``.

    Examples
    --------
    >>> from opsched.demo import seed_graph
    >>> u = unroll_micro_batches(seed_graph(), 2)
    >>> u.num_ops, u["Conv1@1"].deps
    (14, ('Input@1', 'Conv1@0'))
    >>> u = unroll_micro_batches(seed_graph(), 2, admit_every=3)
    >>> u["Input@1"].deps, u["admit@0"].duration, u["admit@0"].demands
    (('Input@0', 'admit@0'), 3.0, {})
    """
    if micro_batches < 1:
        raise ValueError(f"micro_batches must be >= 1, got {micro_batches}")
    gate = "admit"  # its copies gate@m must not be those of an op of the graph named so
    while gate in graph:
        gate += "_"
    ops = []
    for m in range(micro_batches):
        if admit_every is not None and m + 1 < micro_batches:
            prev = (f"{gate}@{m - 1}",) if m else ()
            ops.append(Op(f"{gate}@{m}", admit_every, deps=prev, demands={}, kind="admit"))
        for op in graph.ops:
            deps = tuple(f"{d}@{m}" for d in op.deps)
            if m:
                deps += (f"{op.name}@{m - 1}",)
                if admit_every is not None and not op.deps:
                    deps += (f"{gate}@{m - 1}",)
            ops.append(replace(op, name=f"{op.name}@{m}", deps=deps, reads=(), writes=()))
    return graph.replace_ops(ops, name=f"{graph.name}x{micro_batches}")


def admission_interval(graph: OpGraph, units: int) -> float:
    """Least initiation interval a pipeline of ``graph`` can sustain on ``units`` units.

    Every op takes the micro-batches one at a time, so a new one can enter at most once per
    longest op duration; and the units must do all the work of each micro-batch, so at most
    once per ``work / units``. The pipeline panel admits micro-batches at the larger of the
    two.

    >>> admission_interval(inception_block(), 4)
    18.0
    >>> admission_interval(inception_block(), 1)
    38.0
    """
    d = graph.durations
    busy = float((d * graph.demand_array("units")).sum())
    return max(float(d.max()) if len(d) else 0.0, busy / units)


def _panel(problem: Problem, sched: Schedule, title: str, note: str) -> dict[str, Any]:
    if not sched.has_schedule:
        raise RuntimeError(f"{title}: no schedule ({sched.status.value}: {sched.info})")
    report = validate(problem, sched)
    if not report.valid:
        raise RuntimeError(f"{title}: invalid schedule: {report}")
    sim = simulate(problem, sched)
    g = problem.graph
    return {
        "title": title,
        "note": note,
        "solver": sched.solver,
        "status": sched.status.value,
        "units": problem.machine.units,
        "ops": [
            {"name": o.name, "start": o.start, "end": o.end, "unit": o.unit} for o in sched.ops
        ],
        "kinds": {op.name: op.kind for op in g.ops},
        "memory": {"t": sim.memory_times.tolist(), "bytes": sim.memory_bytes.tolist()},
        "metrics": {
            "makespan": sched.makespan,
            "peak_memory": sim.peak_memory,
            "utilisation": round(sim.utilisation, 4),
            "valid": True,
        },
    }


def compare_strategies(
    graph: OpGraph, units: int = 4, micro_batches: int = 4, time_limit: float = 10.0
) -> dict[str, Any]:
    """Parallel, memory-aware and pipeline schedules of ``graph``, validated and measured.

    Parameters
    ----------
    graph
        The graph (a few dozen ops at most: the memory-aware panel is solved exactly).
    units
        Compute units of the parallel and pipeline panels.
    micro_batches
        Copies of the graph the pipeline panel streams through.
    time_limit
        CP-SAT seconds for the memory-aware panel.

    Returns
    -------
    dict
        ``graph`` (name, ops, critical path), and one panel each under ``parallel``,
        ``memory``, ``pipeline``: ``ops`` (name, start, end, unit), ``memory`` curve and
        ``metrics``; the pipeline panel adds ``latency`` per micro-batch,
        ``initiation_interval`` and ``throughput``.

    Examples
    --------
    >>> r = compare_strategies(inception_block(), units=4, micro_batches=3, time_limit=5)
    >>> m = {k: r[k]["metrics"] for k in ("parallel", "memory", "pipeline")}
    >>> m["memory"]["peak_memory"] < m["parallel"]["peak_memory"]
    True
    >>> m["parallel"]["makespan"] < m["memory"]["makespan"]
    True
    """
    par_p = Problem(graph, Machine(units=units))
    par = _panel(
        par_p,
        greedy(par_p, priority="b-level"),
        "parallel",
        f"b-level greedy on {units} units: maximum throughput",
    )
    mem_p = Problem(graph, Machine(units=1))
    mem_s = solve_cpsat(mem_p, "memory_then_makespan", time_limit=time_limit)
    proven = mem_s.status is Status.OPTIMAL
    mem = _panel(
        mem_p,
        mem_s,
        "memory-aware",
        "one unit, the order of least peak memory "
        + ("(proven by CP-SAT)" if proven else "(CP-SAT, not proven in time)"),
    )
    mem["metrics"]["proven"] = proven

    ii_admit = admission_interval(graph, units)
    unrolled = unroll_micro_batches(graph, micro_batches, admit_every=ii_admit)
    pipe_p = Problem(unrolled, Machine(units=units))
    pipe_s = greedy(pipe_p, priority="b-level")
    pipe = _panel(
        pipe_p,
        pipe_s,
        "pipeline",
        f"{micro_batches} micro-batches on {units} units, each op a stage taking "
        f"them in order; one admitted every {ii_admit:g} (the least sustainable "
        "interval), then b-level greedy",
    )
    starts = pipe_s.starts()
    ends = {o.name: o.end for o in pipe_s.ops}
    first = [min(starts[f"{v}@{m}"] for v in graph.names) for m in range(micro_batches)]
    done = [max(ends[f"{v}@{m}"] for v in graph.names) for m in range(micro_batches)]
    latency = [d - f for f, d in zip(first, done, strict=True)]
    ii = float(np.mean(np.diff(done))) if micro_batches > 1 else float(done[0])
    pipe["micro_batches"] = micro_batches
    pipe["latency"] = latency
    pipe["metrics"].update(
        latency_mean=float(np.mean(latency)),
        latency_max=float(max(latency)),
        initiation_interval=ii,
        admission_interval=ii_admit,
        throughput=micro_batches / float(pipe_s.makespan or 1.0),
    )
    par["metrics"]["throughput"] = 1.0 / float(par["metrics"]["makespan"] or 1.0)
    par["metrics"]["latency_max"] = par["metrics"]["makespan"]
    mem["metrics"]["throughput"] = 1.0 / float(mem["metrics"]["makespan"] or 1.0)
    mem["metrics"]["latency_max"] = mem["metrics"]["makespan"]
    cp = critical_path(graph)
    return {
        "graph": {
            "name": graph.name,
            "ops": [
                {
                    "name": op.name,
                    "kind": op.kind,
                    "duration": op.duration,
                    "output_bytes": op.output_bytes,
                    "deps": list(op.deps),
                }
                for op in graph.ops
            ],
            "critical_path": cp.length,
            "critical_path_ops": cp.ops,
            "work": graph.work,
        },
        "parallel": par,
        "memory": mem,
        "pipeline": pipe,
    }

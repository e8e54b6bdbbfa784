"""Lower bounds, parallelism and Amdahl's law for an op graph.

Every bound here holds for every valid schedule under the problem model
(:mod:`opsched.problem`), so a solver's result can be measured against them.
"""

from __future__ import annotations

import math
import numbers
import weakref
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import numpy as np

from opsched.analysis.memory_bound import min_memory_bound  # re-exported, as before
from opsched.analysis.paths import b_level, earliest_starts
from opsched.analysis.ramp import (
    ENERGY_HEADS_MAX_OPS,
    NESTED_HEADS_MAX_OPS,
    energy_heads,
    nested_heads,
    ramp_bound,
)
from opsched.analysis.topo import topo_indices
from opsched.errors import ProblemError
from opsched.ir.graph import OpGraph, require_graph

__all__ = [
    "Amdahl",
    "LowerBounds",
    "amdahl",
    "lower_bounds",
    "min_memory_bound",
    "parallelism_profile",
    "ramp_heads",
    "serial_ops",
]


def parallelism_profile(graph: OpGraph) -> tuple[np.ndarray, np.ndarray]:
    """Ops running over time when every op starts ASAP on unlimited units.

    Returns
    -------
    times, running : ndarray
        ``running[i]`` ops run over ``[times[i], times[i+1])`` (zero-duration ops excluded);
        the last entry, at the critical-path length, is 0.

    Examples
    --------
    >>> from opsched.demo import seed_graph
    >>> t, r = parallelism_profile(seed_graph())
    >>> t.tolist(), r.tolist()
    ([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [1, 1, 2, 1, 1, 1, 0])
    """
    require_graph(graph, "parallelism_profile")
    est = earliest_starts(graph)
    d = graph.durations
    pos = d > 0
    times = np.concatenate([est[pos], est[pos] + d[pos]])
    deltas = np.concatenate([np.ones(pos.sum(), np.int64), -np.ones(pos.sum(), np.int64)])
    if len(times) == 0:
        return np.array([0.0]), np.array([0], dtype=np.int64)
    order = np.lexsort((deltas, times))
    times, level = times[order], np.cumsum(deltas[order])
    last = np.r_[times[1:] != times[:-1], True]
    t, r = times[last], level[last]
    if t[0] > 0:
        t, r = np.r_[0.0, t], np.r_[0, r]
    return t, r


def serial_ops(graph: OpGraph) -> np.ndarray:
    """Boolean mask of ops that no other op can ever run beside.

    Op ``v`` is *serial* when every other op is its ancestor or its descendant. In a
    topological order that holds iff every op before ``v`` has a successor at or before ``v``
    and every op after ``v`` has a predecessor at or after ``v``, which two prefix scans check
    in O(V + E).

    >>> from opsched.demo import seed_graph
    >>> g = seed_graph()
    >>> [n for n, s in zip(g.names, serial_ops(g)) if s]
    ['Input', 'Conv1', 'Add', 'Output']
    """
    n = graph.num_ops
    if n == 0:
        return np.zeros(0, dtype=bool)
    order = topo_indices(graph)
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    big = n + 1
    min_succ = np.full(n, big, dtype=np.int64)
    max_pred = np.full(n, -1, dtype=np.int64)
    consumer = np.repeat(np.arange(n), np.diff(graph.pred_ptr))
    if len(consumer):
        np.minimum.at(min_succ, graph.pred_idx, pos[consumer])
        np.maximum.at(max_pred, consumer, pos[graph.pred_idx])
    ms = min_succ[order]  # by position
    mp = max_pred[order]
    prefix_max = np.r_[-1, np.maximum.accumulate(ms)[:-1]]  # over positions < p
    suffix_min = np.r_[np.minimum.accumulate(mp[::-1])[::-1][1:], big]  # over positions > p
    p = np.arange(n)
    ok_by_pos = (prefix_max <= p) & (suffix_min >= p)
    mask = np.empty(n, dtype=bool)
    mask[order] = ok_by_pos
    return mask


def _check_units(units: int | None) -> None:
    """``units`` as the bounds take it: a positive integer, or None for unlimited."""
    if units is not None and (
        isinstance(units, bool) or not isinstance(units, numbers.Integral) or units < 1
    ):
        raise ProblemError(f"units must be a positive integer or None, got {units!r}")


def _check_capacities(capacities: Mapping[str, int | None]) -> None:
    """``capacities`` as the bounds take them: resource name -> integer >= 0 or None."""
    if not isinstance(capacities, Mapping):
        raise TypeError(
            f"capacities must be a mapping of resource -> capacity, got {type(capacities).__name__}"
        )
    for r, c in capacities.items():
        if c is not None and (isinstance(c, bool) or not isinstance(c, numbers.Integral) or c < 0):
            raise ProblemError(
                f"capacity of resource {r!r} must be an integer >= 0 or None, got {c!r}"
            )


@dataclass(frozen=True)
class Amdahl:
    """Amdahl's law applied to a DAG.

    ``serial_fraction`` is the share of the work done by :func:`serial_ops`, which can never
    overlap anything; the rest may at best run ``units`` wide, so no schedule on ``units``
    units is faster than ``serial_work + parallel_work / units`` and the speedup over one
    unit is at most ``1 / (f + (1 - f) / units)``. The DAG itself also caps the speedup at
    ``work / critical_path`` (the average parallelism).
    """

    work: float
    serial_work: float
    serial_fraction: float
    critical_path: float
    average_parallelism: float
    units: int | None
    amdahl_speedup_bound: float
    speedup_bound: float


def amdahl(graph: OpGraph, units: int | None = None) -> Amdahl:
    """Serial fraction and speedup bounds for ``units`` identical units (``None``: unlimited).

    The time on ``units`` units is at least ``serial_work + U / units`` where ``U`` is the
    unit-time (duration x units demanded) of the other ops; the speedup over the serial time
    ``work`` is at most ``work`` over that, which is Amdahl's ``1 / (f + (1 - f) / units)`` when
    every op holds one unit. Ops that hold no unit add nothing to ``U``.

    Examples
    --------
    >>> from opsched.demo import seed_graph
    >>> a = amdahl(seed_graph(), units=2)
    >>> a.serial_fraction, round(a.amdahl_speedup_bound, 4), round(a.speedup_bound, 4)
    (0.5714285714285714, 1.2727, 1.1667)
    """
    d = graph.durations
    _check_units(units)
    work = float(d.sum())
    mask = serial_ops(graph)
    serial = float(d[mask].sum())
    f = serial / work if work > 0 else 1.0
    cp = float(b_level(graph).max()) if graph.num_ops else 0.0
    avg = work / cp if cp > 0 else 1.0
    unit_work = d * graph.demand_array("units")
    rest = float(unit_work[~mask].sum())
    t_amdahl = serial + (rest / units if units else 0.0)
    amd = work / t_amdahl if t_amdahl > 0 else math.inf
    bound = min(amd, avg)
    return Amdahl(work, serial, f, cp, avg, units, amd, bound)


@dataclass(frozen=True)
class LowerBounds:
    """Makespan lower bounds; :attr:`value` is the strongest.

    ``critical_path``: the longest path. ``work``: total unit-time over ``units``.
    ``serial``: serial work plus the rest over ``units`` (see :class:`Amdahl`).
    ``energy``: per named resource, the sum of duration x demand over its capacity.
    ``ramp``: per resource (``"units"`` and the named ones), the least makespan whose idle
    capacity holds what the ops' heads and tails force idle at the start and the end of every
    schedule, the heads and tails raised by the work of each op's ancestors and descendants
    (:mod:`opsched.analysis.ramp`; at least each op's head + duration + tail), and with
    ``nested=True`` by the ramp bound of each op's ancestors (descendants).
    When every duration is an integer, each bound is rounded up to an integer.
    """

    critical_path: float
    work: float
    serial: float
    energy: dict[str, float] = field(default_factory=dict)
    ramp: dict[str, float] = field(default_factory=dict)

    @property
    def value(self) -> float:
        return max([self.critical_path, self.work, self.serial, *self.energy.values(),
                    *self.ramp.values()])  # fmt: skip

    @property
    def binding(self) -> str:
        """Name of the bound that gives :attr:`value`."""
        best = {"critical_path": self.critical_path, "work": self.work, "serial": self.serial}
        best.update({f"energy:{r}": v for r, v in self.energy.items()})
        best.update({f"ramp:{r}": v for r, v in self.ramp.items()})
        return max(best, key=lambda k: best[k])

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "value": self.value, "binding": self.binding}


def lower_bounds(
    graph: OpGraph,
    units: int | None = None,
    capacities: Mapping[str, int | None] | None = None,
    ramp: bool = True,
    nested: bool = False,
) -> LowerBounds:
    """Makespan lower bounds for ``units`` compute units and resource ``capacities``.

    ``ramp=False`` leaves out the ramp bounds (:mod:`opsched.analysis.ramp`), to measure
    what they are worth. ``nested=True`` raises their heads and tails by the ramp bound of
    each op's ancestors and descendants (:func:`~opsched.analysis.ramp.nested_heads`), on
    graphs of up to :data:`~opsched.analysis.ramp.NESTED_HEADS_MAX_OPS` ops: stronger, and
    slower (0.04-0.08 s at 300 ops, about 0.2 s at 1,000, once per graph and capacities), so the
    solver and ``opsched analyze`` ask for it and the heuristics' reported bound does not.

    ``capacities`` defaults to the graph's ``resources``; a resource with a capacity of 0 that
    some op of positive duration demands makes the problem infeasible, which
    :meth:`opsched.problem.Problem.infeasibility_reason` reports; it is skipped here.

    Examples
    --------
    STG ``rand0000`` (50 tasks, critical path 55, work 262) on 4 processors:

    >>> from opsched.importers import read_stg
    >>> from opsched.datasets import dataset_path
    >>> lb = lower_bounds(read_stg(dataset_path("stg/50/rand0000.stg")), units=4)
    >>> lb.critical_path, lb.work, lb.value, lb.binding
    (55.0, 66.0, 66.0, 'work')

    The ramp bound: STG 300 ``rand0080`` on 8 processors, work 1,644: the work bound is 206,
    but the graph's start and end force more idle time than 8 x 206 - 1,644 = 4, and the
    optimum is 207:

    >>> lb = lower_bounds(read_stg(dataset_path("stg/300/rand0080.stg")), units=8)
    >>> lb.work, lb.ramp, lb.binding
    (206.0, {'units': 207.0}, 'ramp:units')

    The nested heads: ``rand0122`` on 4 processors, open at 699..708 with the energy heads;
    with them the bound is 708, the best schedule known, so that is the optimum:

    >>> g = read_stg(dataset_path("stg/300/rand0122.stg"))
    >>> lower_bounds(g, units=4).ramp, lower_bounds(g, units=4, nested=True).ramp
    ({'units': 699.0}, {'units': 708.0})
    """
    require_graph(graph, "lower_bounds")
    _check_units(units)
    if capacities is not None:
        _check_capacities(capacities)
    d = graph.durations
    integral = bool(np.all(d == np.round(d)))

    def up(x: float) -> float:
        return float(math.ceil(x - 1e-9)) if integral else x

    levels = b_level(graph) if graph.num_ops else np.zeros(0)
    cp = float(levels.max()) if graph.num_ops else 0.0
    caps = dict(graph.resources) if capacities is None else dict(capacities)
    unit_dem = graph.demand_array("units")
    unit_work = float((d * unit_dem).sum())
    if units:
        work_lb = up(unit_work / units)
        serial_mask = serial_ops(graph)
        s_work = float((d * unit_dem)[serial_mask].sum())
        # serial ops run alone: they take their full duration, the rest shares `units`
        serial_lb = up(float(d[serial_mask].sum()) + (unit_work - s_work) / units)
    else:
        work_lb = serial_lb = up(float(d[serial_ops(graph)].sum()))
    loads = _loads(graph, units, caps)
    energy = {r: up(float((d * dem).sum()) / c) for r, dem, c in loads if r != "units"}
    ramps: dict[str, float] = {}
    if ramp and loads and graph.num_ops:
        heads, tails = _heads_tails(graph, loads, levels, integral, nested)
        ramps = {r: up(ramp_bound(heads, tails, d, dem, c, integral)) for r, dem, c in loads}
    return LowerBounds(up(cp), work_lb, serial_lb, energy, ramps)


def _loads(
    graph: OpGraph, units: int | None, caps: Mapping[str, int | None]
) -> list[tuple[str, np.ndarray, float]]:
    """(name, demands, capacity) of every resource with a finite capacity; ``units`` no
    more than the ops demand together (more never binds, and 10^30 units, as a float,
    made the ramp bound 136 on a graph whose critical path, 73, is met)."""
    dem = graph.demand_array("units")
    k = min(units, max(1, int(dem.sum()))) if units else None
    loads = [("units", dem, float(k))] if k else []
    loads += [(r, graph.demand_array(r), float(c)) for r, c in caps.items() if r != "units" and c]
    return loads


def ramp_heads(
    graph: OpGraph,
    units: int | None = None,
    capacities: Mapping[str, int | None] | None = None,
    nested: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Each op's head (earliest start) and tail (least time after its end) in every schedule.

    The ramp bound's heads and tails: the longest paths, raised by the work of each op's
    ancestors (descendants) on every resource, and with ``nested`` by their ramp bound
    (:mod:`opsched.analysis.ramp`), within the size limits of those. With integer durations
    they are rounded up, so they hold in every schedule with integer starts (as the CP-SAT
    model's are, and as some optimal schedule's always are). The solver's start domains end
    at its horizon minus these tails and the op's duration.

    Examples
    --------
    A fork on 2 units: a root of 2, then four leaves of 2. The root is followed by 8 units
    of work, 4 time units on 2 units:

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("r", 2), *(Op(f"l{i}", 2, deps=("r",)) for i in range(4))))
    >>> heads, tails = ramp_heads(g, units=2)
    >>> heads.tolist(), tails.tolist()
    ([0.0, 2.0, 2.0, 2.0, 2.0], [4.0, 0.0, 0.0, 0.0, 0.0])
    """
    d = graph.durations
    integral = bool(np.all(d == np.round(d)))
    levels = b_level(graph) if graph.num_ops else np.zeros(0)
    caps = dict(graph.resources) if capacities is None else dict(capacities)
    loads = _loads(graph, units, caps)
    if not loads or not graph.num_ops:
        return earliest_starts(graph), levels - d
    return _heads_tails(graph, loads, levels, integral, nested)


#: Energy heads and tails per graph and resource capacities (graphs are immutable): the
#: heuristics and the solver ask for the same graph's bounds again and again.
_HeadsKey = tuple[tuple[tuple[str, float], ...], bool]
_HEADS: weakref.WeakKeyDictionary[OpGraph, dict[_HeadsKey, tuple[np.ndarray, np.ndarray]]] = (
    weakref.WeakKeyDictionary()
)


def _heads_tails(
    graph: OpGraph,
    loads: list[tuple[str, np.ndarray, float]],
    levels: np.ndarray,
    integral: bool,
    nested: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The ramp bound's heads and tails: raised by the work before (after) each op on each
    resource (:func:`~opsched.analysis.ramp.energy_heads`) up to
    :data:`~opsched.analysis.ramp.ENERGY_HEADS_MAX_OPS` ops, else the longest-path ones
    (``levels``: the b-levels); when ``nested``, then by the ramp bound of the ops before
    (after) each op (:func:`~opsched.analysis.ramp.nested_heads`) up to
    :data:`~opsched.analysis.ramp.NESTED_HEADS_MAX_OPS` ops."""
    d = graph.durations
    if graph.num_ops > ENERGY_HEADS_MAX_OPS:
        return earliest_starts(graph), levels - d
    nested = nested and graph.num_ops <= NESTED_HEADS_MAX_OPS
    key = (tuple((r, c) for r, _, c in loads), nested)
    per_graph = _HEADS.setdefault(graph, {})
    if key not in per_graph:
        order = topo_indices(graph).tolist()
        caps = [(dem, c) for _, dem, c in loads]
        if nested:
            heads, tails = _heads_tails(graph, loads, levels, integral)
            ptr, idx = graph.pred_ptr, graph.pred_idx
            preds = [idx[ptr[v] : ptr[v + 1]].tolist() for v in range(graph.num_ops)]
            succs = graph.consumers()
            found = (nested_heads(d, preds, order, caps, heads, integral),
                     nested_heads(d, succs, order[::-1], caps, tails, integral))  # fmt: skip
        else:
            found = energy_heads(d, graph.pred_ptr, graph.pred_idx, order, caps, integral)
        for a in found:
            a.flags.writeable = False
        per_graph[key] = found
    return per_graph[key]

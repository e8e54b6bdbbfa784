"""Planted-optimum graphs: random DAGs whose optimal makespan is known by construction.

:func:`planted` first lays out a schedule with no idle time: ``k`` units each run a row of
ops back to back over ``[0, L)``. It then adds only edges that this schedule respects
(``u -> v`` only if ``end(u) <= start(v)``). The planted schedule is therefore valid, and no
schedule on ``k`` units can end before ``work / k = k L / k = L``: its makespan ``L`` is
optimal. With memory sizes and a cap equal to the planted schedule's peak it stays feasible,
and still optimal (the work bound ignores memory). This gives exact ground truth at any size,
for measuring heuristic gaps on 10k to 1M ops.

Construction
------------
* Units get ``ops // k`` or ``ops // k + 1`` ops. On each unit, ``c - 1`` distinct cut points
  drawn uniformly from ``1 .. L - 1`` split ``[0, L)`` into ``c`` integer durations, where
  ``L = max(c) * (1 + max_duration) // 2`` (at least ``max(c)``): durations average about
  ``(1 + max_duration) / 2``.
* Ops are numbered by start time (ties by unit), so every edge goes forward.
* Op ``v`` gets ``Poisson(avg_deps)`` predecessor draws among the ops that end by its start:
  the draw goes back from the most recently ended op by an exponential offset of mean
  ``locality`` ops, so most edges are short, like the data flow of a network. Repeated draws
  collapse, so the mean degree is a little below ``avg_deps``.
* With ``memory``: output sizes, workspaces and graph outputs (the ops without a consumer) as
  the other generators draw them, and with ``cap`` the memory cap is the planted peak.

Even with no edges at all, reaching ``L`` is a perfect-partition problem, so heuristics
rarely do; the edges make it harder still.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from opsched.errors import ProblemError
from opsched.ir.graph import OpGraph
from opsched.liveness import peak_memory
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule, Status
from opsched.zoo.gen._build import build_graph, check_count, draw_sizes, is_real, rng_for

__all__ = ["PlantedGraph", "planted"]


@dataclass(frozen=True, eq=False)
class PlantedGraph:
    """A planted-optimum instance: the graph, its machine and the optimal schedule.

    Attributes
    ----------
    graph
        The generated graph; ``graph.attrs["planted"]`` records units, makespan, cap, seed.
    units
        Number of compute units the optimum is planted on.
    makespan
        The optimal makespan ``L`` (= work / units).
    memory_cap
        The planted schedule's peak when generated with ``cap=True``, else ``None``.
    starts, assignment
        Start time and unit of each op (graph order) in the planted schedule.
    """

    graph: OpGraph
    units: int
    makespan: float
    memory_cap: int | None
    starts: np.ndarray = field(repr=False)
    assignment: np.ndarray = field(repr=False)

    @property
    def problem(self) -> Problem:
        """The scheduling problem: the graph on ``units`` units under ``memory_cap``."""
        return Problem(self.graph, Machine(units=self.units, memory_cap=self.memory_cap))

    @cached_property
    def schedule(self) -> Schedule:
        """The planted schedule (status OPTIMAL, lower bound = makespan = work / units)."""
        return Schedule.build(
            self.problem,
            self.starts,
            self.assignment.tolist(),
            solver="planted",
            status=Status.OPTIMAL,
            lower_bound=self.makespan,
            info={"planted": True},
        )


def _rows(rng: np.random.Generator, counts: np.ndarray, length: int) -> list[np.ndarray]:
    """For each unit, ``counts[u]`` positive integer durations that sum to ``length``."""
    rows = []
    for c in counts.tolist():
        cuts = np.sort(rng.choice(length - 1, size=c - 1, replace=False) + 1)
        rows.append(np.diff(cuts, prepend=0, append=length))
    return rows


def planted(
    ops: int,
    units: int = 4,
    *,
    avg_deps: float = 2.0,
    locality: float | None = None,
    max_duration: int = 10,
    memory: bool = False,
    cap: bool = True,
    size_unit: int = 1 << 20,
    max_size: int = 16,
    workspace_prob: float = 0.0,
    seed: int = 0,
    name: str | None = None,
) -> PlantedGraph:
    """A random DAG of ``ops`` ops whose optimal makespan on ``units`` units is known.

    Parameters
    ----------
    ops
        Number of ops, at least ``units``.
    units
        Units of the planted zero-idle schedule (and of the instance's machine).
    avg_deps
        Mean number of predecessor draws per op (Poisson).
    locality
        Mean distance, in ops by end time, of a predecessor before the most recently ended
        op (default ``units``): small values make short, network-like edges.
    max_duration
        Durations average about ``(1 + max_duration) / 2`` (see the module docstring).
    memory, size_unit, max_size, workspace_prob
        Draw output sizes ``size_unit * U[1, max_size]`` and workspaces.
    cap
        With ``memory``: cap the memory at the planted schedule's peak.
    seed
        Equal arguments give equal instances.

    Returns
    -------
    PlantedGraph
        The graph, the optimal makespan, the cap and the planted schedule.

    Examples
    --------
    >>> from opsched.validate import validate
    >>> inst = planted(40, units=3, memory=True, seed=1)
    >>> inst.graph.num_ops, inst.makespan == inst.graph.work / 3
    (40, True)
    >>> s = inst.schedule
    >>> s.makespan == inst.makespan, s.peak_memory == inst.memory_cap
    (True, True)
    >>> validate(inst.problem, s).valid
    True
    """
    n = check_count(ops, "ops")
    k = check_count(units, "units")
    if n < k:
        raise ProblemError(f"a planted schedule on {k} units needs at least {k} ops, got {n}")
    check_count(max_duration, "max_duration")
    # a text or None had reached np.isfinite and failed there with a TypeError
    if not (is_real(avg_deps) and np.isfinite(avg_deps) and avg_deps >= 0):
        raise ProblemError(f"avg_deps must be a number >= 0, got {avg_deps!r}")
    if locality is not None and not is_real(locality):
        raise ProblemError(f"locality must be a number > 0, got {locality!r}")
    loc = float(k if locality is None else locality)
    if not (np.isfinite(loc) and loc > 0):
        raise ProblemError(f"locality must be a number > 0, got {locality!r}")
    rng = rng_for(seed)

    counts = np.full(k, n // k, dtype=np.int64)
    counts[rng.permutation(k)[: n % k]] += 1
    length = max(int(counts.max()) * (1 + max_duration) // 2, int(counts.max()))
    if length == 1:  # one op per unit: cut points would be drawn from an empty range
        rows = [np.ones(1, dtype=np.int64) for _ in range(k)]
    else:
        rows = _rows(rng, counts, length)
    dur = np.concatenate(rows)
    unit = np.repeat(np.arange(k), counts)
    start = np.concatenate([np.cumsum(r) - r for r in rows])
    order = np.lexsort((unit, start))  # by start time, ties by unit
    dur, unit, start = dur[order], unit[order], start[order]
    end = start + dur

    # predecessors: draws among the ops that ended by start(v), counted back from the latest
    by_end = np.argsort(end, kind="stable")
    ended = np.searchsorted(end[by_end], start, side="right")  # ops with end <= start(v)
    draws = rng.poisson(avg_deps, size=n) * (ended > 0)
    dst = np.repeat(np.arange(n, dtype=np.int64), draws)
    avail = ended[dst]
    back = np.floor(rng.exponential(loc, size=len(dst))).astype(np.int64) % avail
    src = by_end[avail - 1 - back]

    out = ws = outputs = None
    if memory:
        out, ws = draw_sizes(rng, n, size_unit, max_size, workspace_prob)
        outputs = np.bincount(src, minlength=n) == 0
    info = {"units": k, "makespan": length, "memory_cap": None, "seed": seed}
    graph = build_graph(
        dur.astype(np.float64),
        src,
        dst,
        name=name or f"planted-{n}-k{k}-s{seed}",
        prefix="p",
        kind="task",
        output_bytes=out,
        workspace_bytes=ws,
        outputs=outputs,
        attrs={"generator": "planted", "planted": info},
    )
    starts = start.astype(np.float64)
    mem_cap = peak_memory(graph, starts, float(length)) if memory and cap else None
    info["memory_cap"] = mem_cap  # the graph was built with this dict: record the cap
    return PlantedGraph(graph, k, float(length), mem_cap, starts, unit)

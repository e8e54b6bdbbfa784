"""Decision variables of the CP-SAT model, built once.

Per op ``v`` (times in ticks, sizes in quanta, see :mod:`opsched.solver.scaling`):

* ``start[v]`` in ``[head(v), H - tail(v)]`` where ``head`` is the ASAP start, ``tail`` the
  b-level and ``H`` the horizon (an upper bound on the optimal makespan);
* ``interval[v]``: fixed size ``d(v)`` at ``start[v]``;
* when memory matters, ``release[v]``: when the output is freed (the max end of the
  consumers, the makespan for a graph output without consumers, ``end(v)`` otherwise) and
  ``tensor[v]``: the interval ``[start[v], release[v])``, whose length is at least the
  output's least lifetime (:func:`opsched.analysis.paths.min_lifetimes`; the b-level for a
  graph output).

Plus ``makespan`` in ``[LB, H]`` (``LB`` raised to a proven least makespan passed as
``makespan_floor``) and, for memory objectives, ``peak`` (quanta above the persistent
bytes) from the least peak of :func:`opsched.analysis.min_memory_bound` (or a proven least
peak passed as ``peak_floor``) up.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from opsched.analysis.bounds import lower_bounds, min_memory_bound, ramp_heads
from opsched.analysis.paths import b_level, earliest_starts, min_lifetimes
from opsched.ir.graph import OpGraph
from opsched.problem import Problem
from opsched.solver.scaling import Scaling

__all__ = ["Variables"]


@dataclass
class Variables:
    """Every decision variable of one model (see the module docstring)."""

    model: cp_model.CpModel
    problem: Problem
    scaling: Scaling
    horizon: int
    with_memory: bool
    with_peak: bool
    tick_graph: OpGraph
    start: list[cp_model.IntVar] = field(default_factory=list)
    interval: list[cp_model.IntervalVar] = field(default_factory=list)
    release: list[cp_model.LinearExprT | None] = field(default_factory=list)
    tensor: list[cp_model.IntervalVar | None] = field(default_factory=list)
    makespan: cp_model.IntVar | None = None
    peak: cp_model.IntVar | None = None
    head: list[int] = field(default_factory=list)
    tail: list[int] = field(default_factory=list)
    makespan_lb: int = 0
    domains: bool = True  #: heads, tails and lower bounds in the domains (off: ablation only)
    lifetimes: bool = True  #: tensor intervals at least the outputs' least lifetimes
    ramp: bool = True  #: the ramp bounds (opsched.analysis.ramp) in the makespan's domain
    #: ... raised by opsched.analysis.ramp.nested_heads, whose tails cut the start domains
    nested: bool = True
    tails: bool = True  #: redundant makespan >= start + tail constraints
    memory_model: str = "cumulative"  #: or "reservoir" (under a cap; measured, see docs)
    #: ``(i, j)``: ``i`` ends before ``j`` starts, forced by the memory cap
    #: (:func:`opsched.analysis.cap_orders.cap_orders`); precedence constraints like the edges
    orders: tuple[tuple[int, int], ...] = ()
    #: a proven least peak (quanta), e.g. of the best one-unit order
    #: (:func:`opsched.heuristics.memory.min_memory_order_result`), raising ``peak``'s floor
    peak_floor: int = 0
    #: a proven least makespan (ticks), e.g. of the down-set search
    #: (:func:`opsched.solver.downsets.downset_search`), raising ``makespan``'s floor
    makespan_floor: int = 0

    def build(self) -> None:
        m = self.model
        g = self.tick_graph
        d = self.scaling.durations
        n = g.num_ops
        self.head = [int(x) for x in earliest_starts(g)]
        if self.ramp and self.nested:
            # tails that hold in every schedule with integer starts, the model's. The nested
            # heads hold too, but in the domains they slowed the search (docs/cpsat-model.md)
            _, tails = ramp_heads(g, self.problem.machine.units, self.problem.capacities)
            self.tail = [int(x) for x in tails + g.durations]
        else:
            self.tail = [int(x) for x in b_level(g)]
        lb = lower_bounds(g, self.problem.machine.units, self.problem.capacities, self.ramp,
                          nested=self.nested)  # fmt: skip
        self.makespan_lb = max(int(lb.value) if self.domains else 0, self.makespan_floor)
        h = self.horizon
        self.makespan = m.new_int_var(self.makespan_lb, max(h, self.makespan_lb), "makespan")
        for v in range(n):
            lo = self.head[v] if self.domains else 0
            hi = max(lo, h - self.tail[v] if self.domains else h)
            s = m.new_int_var(lo, hi, f"s{v}")
            self.start.append(s)
            self.interval.append(m.new_fixed_size_interval_var(s, d[v], f"i{v}"))
        if not self.with_memory:
            return
        consumers = g.consumers()
        # least lifetime of each output (start to its last reader's end, over the longest
        # path): tightens the tensor intervals the memory cumulative reasons with
        strong = self.domains and self.lifetimes
        life = [int(x) for x in min_lifetimes(g)] if strong else list(d)
        for v in range(n):
            if consumers[v]:
                lo = self.head[v] + life[v]
                rel = m.new_int_var(lo, max(h, lo), f"r{v}")
                m.add_max_equality(rel, [self.start[c] + d[c] for c in consumers[v]])
                self.release.append(rel)
            elif g.ops[v].output:
                self.release.append(self.makespan)
            else:
                self.release.append(None)  # freed at its own end: merged with the workspace
            rel_v = self.release[v]
            if rel_v is None or self.scaling.sizes_out[v] == 0:
                self.tensor.append(None)
                continue
            least = life[v] if consumers[v] else (self.tail[v] if strong else d[v])
            size = m.new_int_var(min(least, h), h, f"len{v}")
            self.tensor.append(m.new_interval_var(self.start[v], size, rel_v, f"t{v}"))
        if self.with_peak:
            total = sum(self.scaling.sizes_out) + sum(self.scaling.sizes_ws)
            # the least peak any schedule of the integer problem can have (its minimum-cut
            # bound, opsched.analysis.min_memory_bound; the tick graph has no persistent bytes)
            lo = min(max(min_memory_bound(g)[0], self.peak_floor), total) if self.domains else 0
            self.peak = m.new_int_var(lo, max(total, lo), "peak")

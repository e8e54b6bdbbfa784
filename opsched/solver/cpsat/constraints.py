"""Constraint families of the CP-SAT model, one short method each.

:meth:`Constraints.add_constraints` is the table of contents: it adds, in order,
precedence (with the orders a memory cap forces), compute units, named resources, the memory
cap (or the peak definition), the makespan as the latest end, and the redundant tail
constraints that tie the makespan to every op's remaining critical path.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from opsched.solver.cpsat.variables import Variables

__all__ = ["Constraints"]


class Constraints:
    """Adds every constraint family to ``vars.model``."""

    def __init__(self, variables: Variables) -> None:
        self.v = variables
        self.m = variables.model
        self.g = variables.tick_graph
        self.d = variables.scaling.durations
        #: cumulatives added for named resources (beyond units and memory): PSPLIB-like
        #: problems, where the model leaves timetable edge finding off (``CpsatModel.solve``)
        self.resource_cumulatives = 0

    def add_constraints(self) -> None:
        self.precedence()
        self.units()
        self.resources()
        self.memory()
        self.makespan_definition()
        if self.v.tails:
            self.makespan_tails()

    def precedence(self) -> None:
        """``start(v) >= start(u) + d(u)`` for every dependency ``u -> v``, and for every
        order the memory cap forces (``Variables.orders``)."""
        s, d = self.v.start, self.d
        for v, op in enumerate(self.g.ops):
            for dep in op.deps:
                u = self.g.index(dep)
                self.m.add(s[v] >= s[u] + d[u])
        for u, v in self.v.orders:
            self.m.add(s[v] >= s[u] + d[u])

    def _cumulative(self, resource: str, capacity: int | None) -> bool:
        """At most ``capacity`` of ``resource`` in use at once; whether a cumulative was
        added (not where the demands never exceed it, nor a ``no_overlap`` instead)."""
        if capacity is None:
            return False
        items = [
            (self.v.interval[i], op.demands.get(resource, 0))
            for i, op in enumerate(self.g.ops)
            if self.d[i] > 0 and op.demands.get(resource, 0) > 0
        ]
        if not items or sum(a for _, a in items) <= capacity:
            return False  # never binding
        if all(a * 2 > capacity for _, a in items):
            self.m.add_no_overlap([iv for iv, _ in items])  # at most one at a time
            return False
        self.m.add_cumulative([iv for iv, _ in items], [a for _, a in items], capacity)
        return True

    def units(self) -> None:
        """At most ``units`` compute units in use at any time (a cumulative)."""
        self._cumulative("units", self.v.problem.machine.units)

    def resources(self) -> None:
        """One cumulative per named resource with a finite capacity."""
        for r, cap in self.v.problem.capacities.items():
            if r != "units":
                self.resource_cumulatives += self._cumulative(r, cap)

    def memory(self) -> None:
        """Live tensors and workspaces fit in the free memory (or define ``peak``)."""
        if not self.v.with_memory:
            return
        sc = self.v.scaling
        intervals, demands = [], []
        for i in range(self.g.num_ops):
            tensor = self.v.tensor[i]
            if tensor is not None:
                intervals.append(tensor)
                demands.append(sc.sizes_out[i])
            own = sc.sizes_ws[i] + (sc.sizes_out[i] if self.v.release[i] is None else 0)
            if own > 0 and self.d[i] > 0:
                intervals.append(self.v.interval[i])
                demands.append(own)
        if self.v.with_peak:
            assert self.v.peak is not None
            if intervals:
                self.m.add_cumulative(intervals, demands, self.v.peak)
            if sc.cap is not None:
                self.m.add(self.v.peak <= sc.cap)
        elif sc.cap is not None and intervals and sum(demands) > sc.cap:
            if self.v.memory_model == "reservoir":
                self._memory_reservoir(sc.cap)
            else:
                self.m.add_cumulative(intervals, demands, sc.cap)

    def _memory_reservoir(self, cap: int) -> None:
        """The same rule as a reservoir: +size at each allocation, -size at each free.

        Events at one time count together, which is the half-open liveness rule. A reservoir
        needs a constant maximum, so it serves under a cap only (not for minimising the peak).
        """
        sc, s, d = self.v.scaling, self.v.start, self.d
        times: list[cp_model.LinearExprT] = []
        changes: list[int] = []
        for i in range(self.g.num_ops):
            rel = self.v.release[i]
            if rel is not None and sc.sizes_out[i] > 0:
                times += [s[i], rel]
                changes += [sc.sizes_out[i], -sc.sizes_out[i]]
            own = sc.sizes_ws[i] + (sc.sizes_out[i] if rel is None else 0)
            if own > 0 and d[i] > 0:
                times += [s[i], s[i] + d[i]]
                changes += [own, -own]
        self.m.add_reservoir_constraint(times, changes, 0, cap)

    def makespan_definition(self) -> None:
        """``makespan >= end(v)`` for every op without successors (the others follow)."""
        ms = self.v.makespan
        assert ms is not None
        for i, s in enumerate(self.v.start):
            if self.g.succ_ptr[i] == self.g.succ_ptr[i + 1]:
                self.m.add(ms >= s + self.d[i])

    def makespan_tails(self) -> None:
        """``makespan >= start(v) + tail(v)``: each op still has its b-level to run."""
        ms = self.v.makespan
        assert ms is not None
        for i, s in enumerate(self.v.start):
            self.m.add(ms >= s + self.v.tail[i])

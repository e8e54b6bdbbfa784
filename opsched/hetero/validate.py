"""The independent checker of heterogeneous schedules.

:func:`validate_hetero` checks a :class:`~opsched.hetero.schedule.HeteroSchedule` against its
:class:`~opsched.hetero.model.HeteroProblem` by the model's rules only; it shares no code with
the CP-SAT model or the heuristics (transfer times are recomputed from the machine's links).

Checked: every op placed exactly once, on a known device type that can run it and an instance
index in ``0..count-1``; finite starts >= 0; ``end = start + duration on that type``; no two
ops with positive duration overlapping on one instance (``[start, end)`` intervals; a
zero-duration op occupies nothing); every edge ``u -> v``: ``start(v) >= end(u) +
transfer`` where the transfer is ``output_bytes(u) / bandwidth + latency`` if the two ops run
on different device types and zero otherwise; and that the reported makespan equals the
largest end.

Times are compared as the main validator compares them (:func:`opsched.validate.validate`):
exactly where every time, duration and transfer is a whole number, else within ``1e-9``
times the schedule's scale (the sum of the durations on the types it runs the ops on and of
the transfers it makes), or :data:`~opsched.validate.checker.TIME_ULPS` units in the last
place of the time compared where that is larger. A fixed floor would let ops shorter than it
overlap.

Examples
--------
>>> from opsched.ir import Op, OpGraph
>>> from opsched.hetero.model import HeteroMachine, HeteroProblem
>>> from opsched.hetero.schedule import HeteroSchedule, PlacedOp
>>> g = OpGraph((Op("a", 1, output_bytes=100), Op("b", 2, deps=("a",))))
>>> p = HeteroProblem(g, HeteroMachine.parse("gpu:1,cpu:1", bandwidth=50, latency=1))
>>> ok = HeteroSchedule("g", "hand", "FEASIBLE",
...                     [PlacedOp("a", 0, 1, "gpu", 0), PlacedOp("b", 4, 6, "cpu", 0)])
>>> validate_hetero(p, ok).valid
True
>>> bad = HeteroSchedule("g", "hand", "FEASIBLE",
...                      [PlacedOp("a", 0, 1, "gpu", 0), PlacedOp("b", 2, 4, "cpu", 0)])
>>> print(validate_hetero(p, bad).violations[0])
precedence: 'b' starts at 2 before 'a' ends at 1 plus transfer 3 (gpu -> cpu) [a, b] at t=2
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opsched.hetero.model import HeteroProblem
from opsched.hetero.schedule import HeteroSchedule
from opsched.validate.checker import TIME_ULPS
from opsched.validate.report import Violation

__all__ = ["HeteroReport", "validate_hetero"]

_TOL = 1e-9


@dataclass(frozen=True)
class HeteroViolation(Violation):
    """One broken rule (the fields of :class:`~opsched.validate.Violation`), written
    ``kind: message [ops] at t=...``."""

    def __str__(self) -> str:
        at = f" at t={self.time:g}" if self.time is not None else ""
        who = f" [{', '.join(self.ops)}]" if self.ops else ""
        return f"{self.kind}: {self.message}{who}{at}"


@dataclass
class HeteroReport:
    """The verdict: ``valid``, every violation, and the recomputed makespan."""

    valid: bool
    violations: list[HeteroViolation] = field(default_factory=list)
    makespan: float | None = None

    def __repr__(self) -> str:  # one line, not every violation
        if self.valid:
            return f"<HeteroReport {self.summary()}>"
        return (f"<HeteroReport invalid: {len(self.violations)} violation(s); "
                f"first: {self.violations[0]}>")  # fmt: skip

    def summary(self) -> str:
        if self.valid:
            return f"valid: makespan {self.makespan or 0:g}"  # None: an empty graph
        lines = [f"INVALID: {len(self.violations)} violation(s)"]
        lines += [f"  {v}" for v in self.violations[:20]]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "makespan": self.makespan,
            "violations": [
                {"kind": v.kind, "message": v.message, "ops": list(v.ops), "time": v.time}
                for v in self.violations
            ],
        }


def _whole(x: float) -> bool:
    return math.isfinite(x) and x == math.floor(x)


class _Tolerance:
    """How far apart two times may be and still count as equal (see the module docstring)."""

    def __init__(self, problem: HeteroProblem, schedule: HeteroSchedule) -> None:
        g, machine = problem.graph, problem.machine
        dur = problem.durations
        names = machine.type_names
        placed = {o.name: o for o in schedule.ops}
        used: list[float] = []  # each op's duration where the schedule runs it
        kind: dict[str, str] = {}
        for i, op in enumerate(g.ops):
            o = placed.get(op.name)
            d = math.nan
            if o is not None and o.device in names:
                d = float(dur[i, names.index(o.device)])
                kind[op.name] = o.device
            if math.isnan(d):  # not placed, or where it cannot run: its fastest type
                row = dur[i][~np.isnan(dur[i])]
                d = float(row.min()) if row.size else 0.0
            used.append(d)
        moves = [machine.link_between(kind[u], kind[op.name]).cost(g[u].output_bytes)
                 for op in g.ops for u in op.deps
                 if u in kind and op.name in kind and kind[u] != kind[op.name]]  # fmt: skip
        # the schedule's own scale: the work it does and the transfers it makes (the
        # slowest type of each op, or the slowest link, would let one slow alternative
        # loosen every check)
        self.scale = math.fsum(used) + math.fsum(moves)
        times = [t for o in schedule.ops for t in (o.start, o.end)]
        if schedule.makespan is not None:
            times.append(schedule.makespan)
        self.exact = all(_whole(float(x)) for x in [*times, *used, *moves])

    def __call__(self, *at: float) -> float:
        """The tolerance for times of magnitude ``at``."""
        if self.exact:
            return 0.0
        big = max((abs(t) for t in at if math.isfinite(t)), default=0.0)
        return max(_TOL * self.scale, TIME_ULPS * float(np.spacing(big)))


def validate_hetero(problem: HeteroProblem, schedule: HeteroSchedule) -> HeteroReport:
    """Check ``schedule`` against ``problem`` (see the module docstring).

    Parameters
    ----------
    problem
        Graph, device types, per-type durations and links.
    schedule
        The schedule to check; a result without ops is valid only if the graph is empty.

    Returns
    -------
    HeteroReport
        ``valid`` and every violation found.
    """
    g = problem.graph
    machine = problem.machine
    counts = machine.counts
    out: list[HeteroViolation] = []
    where: dict[str, Any] = {}
    for o in schedule.ops:
        if o.name not in g:
            out.append(HeteroViolation("unknown-op", f"{o.name!r} is not in the graph", (o.name,)))
        elif o.name in where:
            out.append(HeteroViolation("duplicate", f"{o.name!r} is placed twice", (o.name,)))
        else:
            where[o.name] = o
    missing = [n for n in g.names if n not in where]
    if missing:
        shown = ", ".join(missing[:8]) + (" ..." if len(missing) > 8 else "")
        out.append(HeteroViolation("missing", f"{len(missing)} op(s) not placed: {shown}"))
    tol = _Tolerance(problem, schedule)
    good: dict[str, Any] = {}
    for name, o in where.items():
        i = g.index(name)
        if not (math.isfinite(o.start) and math.isfinite(o.end)) or o.start < -tol(o.start):
            out.append(HeteroViolation("time", f"{name!r} has start {o.start} / end {o.end}",
                                       (name,)))  # fmt: skip
            continue
        if o.device not in counts:
            out.append(HeteroViolation("device", f"{name!r} is on unknown device type "
                                       f"{o.device!r}", (name,)))  # fmt: skip
            continue
        if not 0 <= o.instance < counts[o.device]:
            out.append(HeteroViolation("device", f"{name!r} is on {o.device} instance "
                                       f"{o.instance}, but there are {counts[o.device]}",
                                       (name,)))  # fmt: skip
            continue
        d = float(problem.durations[i, machine.type_names.index(o.device)])
        if math.isnan(d):
            out.append(HeteroViolation("device", f"{name!r} cannot run on {o.device}", (name,)))
            continue
        if abs((o.end - o.start) - d) > tol(o.start, o.end):
            out.append(HeteroViolation("duration", f"{name!r} runs {o.end - o.start:g} on "
                                       f"{o.device}, its duration there is {d:g}", (name,),
                                       o.start))  # fmt: skip
        good[name] = o
    # one op at a time per instance
    per: dict[tuple[str, int], list[Any]] = {}
    for o in good.values():
        if o.end - o.start > 0:
            per.setdefault((o.device, o.instance), []).append(o)
    for (dev, k), lst in per.items():
        lst.sort(key=lambda x: (x.start, x.end))
        for a, b in itertools.pairwise(lst):
            if b.start < a.end - tol(a.end, b.start):
                out.append(HeteroViolation("overlap", f"{a.name!r} and {b.name!r} overlap on "
                                           f"{dev}:{k}", (a.name, b.name), b.start))  # fmt: skip
    # precedence with transfers between device types
    for op in g.ops:
        v = good.get(op.name)
        if v is None:
            continue
        for dep in op.deps:
            u = good.get(dep)
            if u is None:
                continue
            delay = 0.0
            if u.device != v.device:
                delay = machine.link_between(u.device, v.device).cost(g[dep].output_bytes)
            need = u.end + delay
            if v.start < need - tol(need, v.start):
                extra = f" plus transfer {delay:g} ({u.device} -> {v.device})" if delay else ""
                out.append(HeteroViolation(
                    "precedence", f"{op.name!r} starts at {v.start:g} before {dep!r} ends at "
                    f"{u.end:g}{extra}", (dep, op.name), v.start))  # fmt: skip
    makespan = max((o.end for o in where.values()), default=0.0) if where else None
    if schedule.makespan is not None and makespan is not None and \
            abs(schedule.makespan - makespan) > tol(makespan):  # fmt: skip
        out.append(HeteroViolation("makespan", f"reported {schedule.makespan:g}, recomputed "
                                   f"{makespan:g}"))  # fmt: skip
    return HeteroReport(valid=not out, violations=out, makespan=makespan)

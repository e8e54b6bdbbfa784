"""Schedules and solver results: :class:`Schedule`, its JSON format and summaries.

A :class:`Schedule` is what every solver and heuristic returns. Its makespan and peak memory
are always recomputed from the op times (:meth:`Schedule.build`), never copied from a solver's
objective. The JSON format ``opsched-schedule/1``::

    {"format": "opsched-schedule/1", "graph": "seed-demo", "solver": "greedy",
     "status": "FEASIBLE", "makespan": 6, "peak_memory": 0, "lower_bound": 6,
     "machine": {"units": 2, "resources": {}, "memory_cap": null}, "wall_time_s": 0.001,
     "ops": [{"name": "Input", "start": 0, "end": 1, "unit": 0}, ...]}
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import numpy as np

from opsched.errors import ScheduleFormatError
from opsched.liveness import peak_memory
from opsched.problem import Problem

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SCHEDULE_FORMAT", "Schedule", "ScheduledOp", "Status", "read_schedule"]

SCHEDULE_FORMAT = "opsched-schedule/1"
# "gap" is written for readers; it is derived (makespan, lower bound), so read back from them
_SCHEDULE_KEYS = {"format", "graph", "solver", "status", "makespan", "peak_memory",
                  "lower_bound", "gap", "machine", "wall_time_s", "info", "ops"}  # fmt: skip
_OP_KEYS = {"name", "start", "end", "unit"}


class Status(StrEnum):
    """How good a result is known to be."""

    OPTIMAL = "OPTIMAL"  #: proven optimal
    FEASIBLE = "FEASIBLE"  #: a valid schedule, optimality not proven
    INFEASIBLE = "INFEASIBLE"  #: proven that no schedule exists
    UNKNOWN = "UNKNOWN"  #: no schedule and no proof


@dataclass(frozen=True, slots=True)
class ScheduledOp:
    """One op's placement: runs over ``[start, end)`` on compute unit ``unit`` (or ``None``)."""

    name: str
    start: float
    end: float
    unit: int | None = None


@dataclass
class Schedule:
    """A schedule (or the absence of one) with its status and statistics.

    Use :meth:`build` to create one from start times: it computes ends, the makespan and the
    peak memory from the problem model.
    """

    graph: str
    solver: str
    status: Status
    ops: list[ScheduledOp]
    machine: dict[str, Any] = field(default_factory=dict)
    makespan: float | None = None
    peak_memory: int | None = None
    lower_bound: float | None = None
    wall_time_s: float | None = None
    info: dict[str, Any] = field(default_factory=dict)
    #: the makespan a schedule file states (:meth:`from_dict`), for the validator to compare
    #: with the one recomputed from its ops (``makespan``); None for schedules built here
    reported_makespan: float | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.status, Status):  # "FEASIBLE" as written by hand
            try:
                self.status = Status(self.status)
            except ValueError:
                known = ", ".join(s.value for s in Status)
                raise ValueError(f"unknown status {self.status!r}; known: {known}") from None

    @classmethod
    def build(
        cls,
        problem: Problem,
        starts: Mapping[str, float] | Sequence[float] | np.ndarray,
        units: Mapping[str, int | None] | Sequence[int | None] | np.ndarray | None = None,
        *,
        solver: str,
        status: Status | str = Status.FEASIBLE,
        lower_bound: float | None = None,
        wall_time_s: float | None = None,
        info: Mapping[str, Any] | None = None,
    ) -> Schedule:
        """Make a schedule from start times (by op name or in graph order).

        Examples
        --------
        >>> from opsched.ir import Op, OpGraph
        >>> from opsched.problem import Machine, Problem
        >>> g = OpGraph((Op("a", 2, output_bytes=8), Op("b", 3, deps=("a",))))
        >>> s = Schedule.build(Problem(g, Machine(units=1)), {"a": 0, "b": 2}, solver="hand")
        >>> s.makespan, s.peak_memory, [o.end for o in s.ops]
        (5.0, 8, [2.0, 5.0])
        """
        g = problem.graph
        if isinstance(starts, Mapping):
            missing = [n for n in g.names if n not in starts]
            if missing:
                raise ScheduleFormatError(f"no start time for op(s) {missing[:5]}")
            arr = np.array([float(starts[n]) for n in g.names], dtype=np.float64)
        else:
            arr = np.asarray(starts, dtype=np.float64)
            if arr.shape != (g.num_ops,):
                raise ScheduleFormatError(f"expected {g.num_ops} start times, got {arr.shape}")
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise ScheduleFormatError(
                f"start time must be finite, got {float(arr[bad[0]])!r}", f"op {g.names[bad[0]]!r}"
            )
        if isinstance(units, Mapping):
            unit_list: list[int | None] = [units.get(n) for n in g.names]
        elif units is None:
            unit_list = [None] * g.num_ops
        else:
            unit_list = [None if u is None or u < 0 else int(u) for u in units]
        ends = arr + g.durations
        makespan = float(ends.max()) if g.num_ops else 0.0
        ops = [
            ScheduledOp(n, float(s), float(e), u)
            for n, s, e, u in zip(g.names, arr, ends, unit_list, strict=True)
        ]
        return cls(
            graph=g.name,
            solver=solver,
            status=Status(status),
            ops=ops,
            machine=problem.machine_record(),
            makespan=makespan,
            peak_memory=peak_memory(g, arr, makespan),
            lower_bound=lower_bound,
            wall_time_s=wall_time_s,
            info=dict(info or {}),
        )

    @classmethod
    def empty(cls, problem: Problem, *, solver: str, status: Status | str, **kw: Any) -> Schedule:
        """A result without a schedule (INFEASIBLE or UNKNOWN)."""
        return cls(problem.graph.name, solver, Status(status), [], problem.machine_record(), **kw)

    @classmethod
    def if_impossible(
        cls, problem: Problem, *, solver: str, t0: float | None = None
    ) -> Schedule | None:
        """The no-schedule result (UNKNOWN, the reason in ``info``) where the problem's own
        checks (:meth:`~opsched.problem.Problem.infeasibility_reason`) prove that no
        schedule exists; None where they do not. ``t0``: the ``perf_counter`` the solver
        started at, for its wall time. Heuristics claim no proofs, hence UNKNOWN."""
        reason = problem.infeasibility_reason()
        if not reason:
            return None
        wall = None if t0 is None else time.perf_counter() - t0
        return cls.empty(problem, solver=solver, status=Status.UNKNOWN,
                         info={"reason": reason}, wall_time_s=wall)  # fmt: skip

    @property
    def has_schedule(self) -> bool:
        """Whether this is a schedule: it has ops, or it is the (empty) schedule of a graph
        without ops (OPTIMAL, makespan 0); INFEASIBLE and UNKNOWN results have none."""
        return bool(self.ops) or self.status in (Status.OPTIMAL, Status.FEASIBLE)

    @property
    def gap(self) -> float | None:
        """Relative gap ``(makespan - lower_bound) / makespan`` when both are known."""
        if self.makespan is None or self.lower_bound is None or self.makespan <= 0:
            return None
        return max(0.0, (self.makespan - self.lower_bound) / self.makespan)

    def starts(self) -> dict[str, float]:
        return {o.name: o.start for o in self.ops}

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": SCHEDULE_FORMAT,
            "graph": self.graph,
            "solver": self.solver,
            "status": self.status.value,
            "makespan": _num(self.makespan),
            "peak_memory": self.peak_memory,
            "lower_bound": _num(self.lower_bound),
            "gap": self.gap,
            "machine": self.machine,
            "wall_time_s": self.wall_time_s,
            "info": self.info,
            "ops": [
                {"name": o.name, "start": _num(o.start), "end": _num(o.end), "unit": o.unit}
                for o in self.ops
            ],
        }

    def to_json(self, path: str | None = None) -> str:
        """Return the JSON text; with ``path``, also write it there atomically."""
        import json

        from opsched.ir.jsonio import INDENT_MAX_OPS

        # one op per line reads well up to thousands of ops; beyond, compact is 2x faster
        indent = 1 if len(self.ops) <= INDENT_MAX_OPS else None
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            from opsched._files import write_text_atomic

            write_text_atomic(text + "\n", path)
        return text

    @classmethod
    def from_dict(cls, data: Any) -> Schedule:
        """Read an ``opsched-schedule/1`` document. The makespan is recomputed from the ops; the
        one the file states is kept as ``reported_makespan`` for the validator."""
        if not isinstance(data, Mapping):
            raise ScheduleFormatError("a schedule document must be a JSON object")
        if data.get("format", SCHEDULE_FORMAT) != SCHEDULE_FORMAT:
            raise ScheduleFormatError(f"unsupported format {data.get('format')!r}")
        raw = data.get("ops")
        if not isinstance(raw, list):
            raise ScheduleFormatError("missing list 'ops'")
        unknown = set(data) - _SCHEDULE_KEYS
        if unknown:  # a misspelt field would otherwise be dropped without a word
            raise ScheduleFormatError(f"unknown top-level field(s) {sorted(unknown)}")
        ops = []
        for i, rec in enumerate(raw):
            where = f"ops[{i}]"
            if not isinstance(rec, Mapping) or not isinstance(rec.get("name"), str):
                raise ScheduleFormatError("each entry needs a string 'name'", where)
            where = f"op {rec['name']!r} ({where})"
            unknown = set(rec) - _OP_KEYS
            if unknown:  # "stream" for "unit" would leave every op without a unit
                known = ", ".join(sorted(_OP_KEYS))
                raise ScheduleFormatError(f"unknown field(s) {sorted(unknown)}; known: {known}",
                                          where)  # fmt: skip
            start = _finite(rec.get("start"), "start", where)
            unit = rec.get("unit")
            if unit is not None and (
                isinstance(unit, bool) or not isinstance(unit, int) or not -(2**62) <= unit < 2**62
            ):
                raise ScheduleFormatError(
                    f"unit must be an integer in [-2**62, 2**62) or null, got {_shown(unit)}",
                    where,
                )
            if rec.get("end") is None:  # read as end = start before: a zero-length op
                raise ScheduleFormatError("missing 'end' (each op needs its start and end)", where)
            end = _finite(rec["end"], "end", where)
            ops.append(ScheduledOp(rec["name"], start, end, unit))
        status = data.get("status", "FEASIBLE")
        try:
            status = Status(status)
        except ValueError:
            raise ScheduleFormatError(f"unknown status {status!r}") from None
        for key in ("machine", "info"):
            if data.get(key) is not None and not isinstance(data[key], Mapping):
                raise ScheduleFormatError(f"'{key}' must be an object, got {data[key]!r}")
        machine = data.get("machine") or {}
        if machine.get("resources") is not None and not isinstance(machine["resources"], Mapping):
            raise ScheduleFormatError("'machine.resources' must be an object of name -> capacity")
        makespan = max((o.end for o in ops), default=0.0) if ops else None
        # reported figures: a number or null (the validator compares them with its own)
        reported = {k: None if data.get(k) is None else _finite(data[k], k, "the schedule")
                    for k in ("makespan", "peak_memory", "lower_bound", "wall_time_s")}  # fmt: skip
        peak = reported["peak_memory"]
        if peak is not None and (peak < 0 or peak != int(peak)):
            raise ScheduleFormatError(f"peak_memory must be a whole number of bytes, got {peak:g}")
        return cls(
            graph=str(data.get("graph", "graph")),
            solver=str(data.get("solver", "unknown")),
            status=status,
            ops=ops,
            machine=dict(data.get("machine") or {}),
            makespan=makespan,
            peak_memory=None if peak is None else int(peak),
            lower_bound=reported["lower_bound"],
            wall_time_s=reported["wall_time_s"],
            info=dict(data.get("info") or {}),
            reported_makespan=reported["makespan"] if ops else None,
        )

    # ------------------------------------------------------------------ views
    def to_frame(self) -> pd.DataFrame:
        """One row per op: name, start, end, duration, unit."""
        import pandas as pd

        return pd.DataFrame(
            {
                "name": [o.name for o in self.ops],
                "start": [o.start for o in self.ops],
                "end": [o.end for o in self.ops],
                "duration": [o.end - o.start for o in self.ops],
                "unit": [o.unit for o in self.ops],
            }
        )

    def __repr__(self) -> str:
        # the ops are left out: a notebook cell echoing a 10,000-op schedule printed them all
        return f"<Schedule {self.summary()}; {len(self.ops)} ops>"

    def summary(self) -> str:
        """A short human-readable description."""
        from opsched.units import format_bytes

        objective = self.info.get("objective")
        if objective in ("peak_memory", "memory_then_makespan"):
            # the status is the peak's: say so, and give the peak's bound, not the makespan's
            # (lower_bound and gap are the makespan's whatever the objective)
            parts = [f"{self.solver} on {self.graph}: {self.status.value} ({objective})"]
            if self.peak_memory is not None:
                parts.append(f"peak memory {format_bytes(self.peak_memory)}")
                low = self.info.get("peak_lower_bound")
                if isinstance(low, int) and not isinstance(low, bool):
                    parts.append(f"least possible >= {format_bytes(low)}")
            if self.makespan is not None:
                parts.append(f"makespan {self.makespan:g}")
            if self.lower_bound is not None:
                parts.append(f"makespan lower bound {self.lower_bound:g}")
        else:
            parts = [f"{self.solver} on {self.graph}: {self.status.value}"]
            if self.makespan is not None:
                parts.append(f"makespan {self.makespan:g}")
            if self.lower_bound is not None:
                parts.append(f"lower bound {self.lower_bound:g}")
                gap = self.gap
                if self.status is Status.FEASIBLE and gap:
                    parts.append(f"gap {100 * gap:.2f}%")
            if self.peak_memory is not None:
                parts.append(f"peak memory {format_bytes(self.peak_memory)}")
        if self.wall_time_s is not None:
            parts.append(f"{self.wall_time_s:.3f} s")
        return ", ".join(parts)

    def _repr_html_(self) -> str:
        # names come from the user's graph file: "<script>" must show as text, not run
        from opsched.viz.text import HTML_ROWS, html_table

        rows = [(o.name, f"{o.start:g}", f"{o.end:g}", "" if o.unit is None else str(o.unit))
                for o in self.ops[:HTML_ROWS]]  # fmt: skip
        return html_table(self.summary(), ("op", "start", "end", "unit"), rows, len(self.ops))


def read_schedule(path: str | os.PathLike[str]) -> Schedule:
    """Read a schedule file (:meth:`Schedule.to_json`, ``opsched solve -o``) back.

    As :meth:`Schedule.from_dict`, the makespan is recomputed from the ops. Errors
    (:class:`~opsched.errors.InputError` for a file that is not JSON,
    :class:`~opsched.errors.ScheduleFormatError` for one that is not a schedule) name the file.

    Examples
    --------
    >>> import os, tempfile, opsched
    >>> p = opsched.Problem(opsched.seed_graph(), opsched.Machine(units=2))
    >>> path = os.path.join(tempfile.mkdtemp(), "s.json")
    >>> _ = opsched.greedy(p).to_json(path)
    >>> s = opsched.read_schedule(path)
    >>> s.makespan, s.solver, opsched.validate(p, s).valid
    (6.0, 'greedy', True)
    """
    from opsched.ir.jsonio import load_json_file

    doc = load_json_file(path)  # its errors already name the file
    try:
        return Schedule.from_dict(doc)
    except ScheduleFormatError as e:
        raise e.located(str(path)) from None


def _num(x: float | None) -> float | int | None:
    if x is None:
        return None
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(x)


def _finite(v: Any, what: str, where: str) -> float:
    try:  # an integer past a float's range (10**400) would raise inside math.isfinite
        x = float(v) if isinstance(v, int | float) and not isinstance(v, bool) else math.nan
    except OverflowError:
        x = math.inf
    if not math.isfinite(x):
        raise ScheduleFormatError(f"{what} must be a finite number, got {_shown(v)}", where)
    return x


def _shown(v: Any) -> str:
    """``repr(v)`` cut to 40 characters (an integer of 400 digits in an error line)."""
    text = repr(v)
    return text if len(text) <= 40 else text[:40] + "..."

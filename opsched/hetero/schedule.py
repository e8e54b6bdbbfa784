"""Heterogeneous schedules: each op's start, end, device type and instance.

The JSON format ``opsched-hetero-schedule/1``::

    {"format": "opsched-hetero-schedule/1", "graph": "g", "solver": "heft",
     "status": "FEASIBLE", "makespan": 7, "lower_bound": 5,
     "machine": {"devices": {"gpu": 2, "cpu": 4}, "link": {...}, "links": []},
     "wall_time_s": 0.001, "info": {},
     "ops": [{"name": "a", "start": 0, "end": 1, "device": "gpu", "instance": 0}]}

The makespan is recomputed from the op ends (here and again by the validator).

Examples
--------
>>> s = HeteroSchedule("g", "hand", Status.FEASIBLE,
...                    [PlacedOp("a", 0.0, 1.0, "gpu", 0), PlacedOp("b", 4.0, 6.0, "cpu", 0)])
>>> s.makespan
6.0
>>> HeteroSchedule.from_dict(s.to_dict()).ops[1]
PlacedOp(name='b', start=4.0, end=6.0, device='cpu', instance=0)
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opsched.errors import OpschedError, ScheduleFormatError
from opsched.schedule import Status
from opsched.viz.text import HTML_ROWS, html_table

if TYPE_CHECKING:
    import pandas as pd

    from opsched.hetero.model import HeteroProblem

__all__ = ["HETERO_SCHEDULE_FORMAT", "HeteroSchedule", "PlacedOp"]

HETERO_SCHEDULE_FORMAT = "opsched-hetero-schedule/1"
# the fields each part of a document may have: any other (a misspelt one) is refused, as the
# homogeneous reader refuses it (opsched.schedule), not dropped without a word
_KEYS = ("format", "graph", "solver", "status", "makespan", "lower_bound", "machine",
         "wall_time_s", "info", "ops")  # fmt: skip
_OP_KEYS = ("name", "start", "end", "device", "instance")
_MACHINE_KEYS = ("devices", "link", "links")
_LINK_KEYS = ("bandwidth", "latency")


def _check_keys(rec: Mapping[str, Any], known: Sequence[str], where: str | None) -> None:
    unknown = set(rec) - set(known)
    if unknown:
        raise ScheduleFormatError(
            f"unknown field(s) {sorted(map(str, unknown))}; known: {', '.join(known)}", where
        )


def _check_machine(rec: Any) -> None:
    """Refuse a recorded machine that is not one: unknown fields, device counts that are not
    integers >= 1, a link with a bandwidth <= 0, a per-pair link of an unknown type (each
    error names the field; :class:`~opsched.hetero.model.HeteroMachine` says what is wrong)."""
    from opsched.hetero.model import DeviceType, HeteroMachine, Link

    if not isinstance(rec, Mapping):
        raise ScheduleFormatError(f"'machine' must be an object, got {rec!r}")
    _check_keys(rec, _MACHINE_KEYS, "machine")
    where = "machine.devices"
    try:
        counts = rec.get("devices")
        if counts is None:
            return  # none recorded: hetero validate then needs --devices
        if not isinstance(counts, Mapping):
            raise ScheduleFormatError(f"must be an object of type -> count, got {counts!r}")
        devices = [DeviceType(t, c) for t, c in counts.items()]
        where = "machine.link"
        link = rec.get("link") or {}
        if not isinstance(link, Mapping):
            raise ScheduleFormatError(f"must be an object, got {link!r}")
        _check_keys(link, _LINK_KEYS, None)
        Link(link.get("bandwidth"), link.get("latency", 0.0))
        pairs = {}
        links = rec.get("links") or []
        if not isinstance(links, list):
            raise ScheduleFormatError(f"must be a list, got {links!r}", "machine.links")
        for i, lk in enumerate(links):
            where = f"machine.links[{i}]"
            between = lk.get("between") if isinstance(lk, Mapping) else None
            if not isinstance(between, list) or len(between) != 2:
                raise ScheduleFormatError(f"needs 'between': [type, type], got {lk!r}")
            _check_keys(lk, ("between", *_LINK_KEYS), None)
            for t in between:
                if not isinstance(t, str) or t not in counts:
                    raise ScheduleFormatError(f"names unknown device type {t!r}; the machine "
                                              f"has {', '.join(counts)}")  # fmt: skip
            pairs[(str(between[0]), str(between[1]))] = Link(
                lk.get("bandwidth"), lk.get("latency", 0.0)
            )
        where = "machine"
        HeteroMachine(tuple(devices), links=pairs)
    except OpschedError as e:  # a ProblemError of the model: still this document's fault
        raise ScheduleFormatError(e.message, where) from None


@dataclass(frozen=True, slots=True)
class PlacedOp:
    """One op: runs over ``[start, end)`` on instance ``instance`` of type ``device``."""

    name: str
    start: float
    end: float
    device: str
    instance: int


@dataclass
class HeteroSchedule:
    """A heterogeneous schedule (or none: INFEASIBLE / UNKNOWN with ``info["reason"]``)."""

    graph: str
    solver: str
    status: Status
    ops: list[PlacedOp]
    machine: dict[str, Any] = field(default_factory=dict)
    lower_bound: float | None = None
    wall_time_s: float | None = None
    info: dict[str, Any] = field(default_factory=dict)
    makespan: float | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.status = Status(self.status)
        self.makespan = max((o.end for o in self.ops), default=0.0) if self.ops else None

    @classmethod
    def build(
        cls,
        problem: HeteroProblem,
        starts: Sequence[float],
        instances: Sequence[int],
        *,
        solver: str,
        status: Status | str = Status.FEASIBLE,
        lower_bound: float | None = None,
        wall_time_s: float | None = None,
        info: Mapping[str, Any] | None = None,
    ) -> HeteroSchedule:
        """Make a schedule from start times and global instance indices, in graph order.

        Ends are ``start + duration`` on the instance's type (``problem.instances`` numbers
        the instances type by type).
        """
        g = problem.graph
        ops = []
        for i, (s, p) in enumerate(zip(starts, instances, strict=True)):
            t, k = problem.instances[int(p)]
            d = float(problem.durations[i, problem.type_index[t]])
            ops.append(PlacedOp(g.ops[i].name, float(s), float(s) + d, t, k))
        return cls(g.name, solver, Status(status), ops, problem.machine.to_dict(),
                   lower_bound, wall_time_s, dict(info or {}))  # fmt: skip

    @classmethod
    def empty(cls, problem: HeteroProblem, *, solver: str, status: Status | str,
              **kw: Any) -> HeteroSchedule:  # fmt: skip
        """A result without a schedule (INFEASIBLE or UNKNOWN)."""
        return cls(problem.graph.name, solver, Status(status), [], problem.machine.to_dict(),
                   **kw)  # fmt: skip

    @property
    def has_schedule(self) -> bool:
        return bool(self.ops)

    @property
    def gap(self) -> float | None:
        """``(makespan - lower_bound) / makespan`` when both are known."""
        if self.makespan is None or self.lower_bound is None or self.makespan <= 0:
            return None
        return max(0.0, (self.makespan - self.lower_bound) / self.makespan)

    def placement(self) -> dict[str, tuple[str, int]]:
        """Op name -> (device type, instance)."""
        return {o.name: (o.device, o.instance) for o in self.ops}

    def to_dict(self) -> dict[str, Any]:
        def num(x: float | None) -> float | int | None:
            if x is None:
                return None
            return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(x)

        return {
            "format": HETERO_SCHEDULE_FORMAT,
            "graph": self.graph,
            "solver": self.solver,
            "status": self.status.value,
            "makespan": num(self.makespan),
            "lower_bound": num(self.lower_bound),
            "machine": self.machine,
            "wall_time_s": self.wall_time_s,
            "info": self.info,
            "ops": [
                {
                    "name": o.name,
                    "start": num(o.start),
                    "end": num(o.end),
                    "device": o.device,
                    "instance": o.instance,
                }
                for o in self.ops
            ],
        }

    def to_json(self, path: str | None = None) -> str:
        """The JSON text; with ``path``, also written there atomically."""
        text = json.dumps(self.to_dict(), indent=1, allow_nan=False)
        if path is not None:
            from opsched._files import write_text_atomic

            write_text_atomic(text + "\n", path)
        return text

    @classmethod
    def from_dict(cls, data: Any) -> HeteroSchedule:
        """Read an ``opsched-hetero-schedule/1`` document (errors name the op entry)."""
        if not isinstance(data, Mapping):
            raise ScheduleFormatError("a schedule document must be a JSON object")
        if data.get("format", HETERO_SCHEDULE_FORMAT) != HETERO_SCHEDULE_FORMAT:
            raise ScheduleFormatError(f"unsupported format {data.get('format')!r}; expected "
                                      f"{HETERO_SCHEDULE_FORMAT!r}")  # fmt: skip
        raw = data.get("ops")
        if not isinstance(raw, list):
            raise ScheduleFormatError("missing list 'ops'")
        _check_keys(data, _KEYS, None)
        ops = []
        for i, rec in enumerate(raw):
            where = f"ops[{i}]"
            if not isinstance(rec, Mapping) or not isinstance(rec.get("name"), str):
                raise ScheduleFormatError("each entry needs a string 'name'", where)
            where = f"op {rec['name']!r} ({where})"
            _check_keys(rec, _OP_KEYS, where)
            vals = []
            for key in ("start", "end"):
                v = rec.get(key)
                if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                    raise ScheduleFormatError(f"{key} must be a finite number, got {v!r}", where)
                vals.append(float(v))
            dev, inst = rec.get("device"), rec.get("instance")
            if not isinstance(dev, str):
                raise ScheduleFormatError(f"device must be a string, got {dev!r}", where)
            if isinstance(inst, bool) or not isinstance(inst, int):
                raise ScheduleFormatError(f"instance must be an integer, got {inst!r}", where)
            ops.append(PlacedOp(rec["name"], vals[0], vals[1], dev, inst))
        try:
            status = Status(data.get("status", "FEASIBLE"))
        except ValueError:
            raise ScheduleFormatError(f"unknown status {data.get('status')!r}") from None
        if data.get("info") is not None and not isinstance(data["info"], Mapping):
            raise ScheduleFormatError("'info' must be an object")
        if data.get("machine") is not None:
            _check_machine(data["machine"])
        lb = data.get("lower_bound")
        return cls(
            graph=str(data.get("graph", "graph")),
            solver=str(data.get("solver", "unknown")),
            status=status,
            ops=ops,
            machine=dict(data.get("machine") or {}),
            lower_bound=float(lb) if isinstance(lb, int | float) else None,
            wall_time_s=data.get("wall_time_s"),
            info=dict(data.get("info") or {}),
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per op: name, start, end, duration, device, instance."""
        import pandas as pd

        return pd.DataFrame(
            {
                "name": [o.name for o in self.ops],
                "start": [o.start for o in self.ops],
                "end": [o.end for o in self.ops],
                "duration": [o.end - o.start for o in self.ops],
                "device": [o.device for o in self.ops],
                "instance": [o.instance for o in self.ops],
            }
        )

    def __repr__(self) -> str:  # one line, not every placed op
        return f"<HeteroSchedule {self.summary()}>"

    def summary(self) -> str:
        """One line: solver, status, makespan, bound, gap, time, ops per device type."""
        parts = [f"{self.solver} on {self.graph}: {self.status.value}"]
        if self.makespan is not None:
            parts.append(f"makespan {self.makespan:g}")
        if self.lower_bound is not None:
            parts.append(f"lower bound {self.lower_bound:g}")
            if self.status is Status.FEASIBLE and self.gap:
                parts.append(f"gap {100 * self.gap:.2f}%")
        if self.ops:
            per: dict[str, int] = {}
            for o in self.ops:
                per[o.device] = per.get(o.device, 0) + 1
            parts.append("ops on " + ", ".join(f"{t} {c}" for t, c in per.items()))
        if self.wall_time_s is not None:
            parts.append(f"{self.wall_time_s:.3f} s")
        return ", ".join(parts)

    def _repr_html_(self) -> str:
        rows = [(o.name, f"{o.start:g}", f"{o.end:g}", f"{o.device}:{o.instance}")
                for o in self.ops[:HTML_ROWS]]  # fmt: skip
        return html_table(self.summary(), ("op", "start", "end", "device"), rows, len(self.ops))

"""The scheduling problem: a graph, a machine and an objective.

A :class:`Machine` has ``units`` identical compute units (resource ``"units"``), any number of
named renewable resources with integer capacities, and an optional memory cap in bytes. The
exact semantics every solver, heuristic and the validator share:

* op ``v`` runs over ``[start(v), end(v))`` with ``end = start + duration`` and holds its
  ``demands`` over that interval; a zero-duration op holds nothing;
* op ``v``'s output tensor is allocated at ``start(v)`` and freed at ``release(v)``, the latest
  end of its consumers; with no consumer it is freed at the makespan if ``output`` is true and
  at ``end(v)`` otherwise; workspace is held over ``[start(v), end(v))``;
* ``memory(t) = persistent_bytes + outputs live at t + workspaces live at t``; the schedule is
  memory-feasible iff ``max_t memory(t) <= memory_cap``.

Examples
--------
>>> from opsched.ir import Op, OpGraph
>>> g = OpGraph((Op("a", 2, output_bytes=10), Op("b", 1, deps=("a",))))
>>> p = Problem(g, Machine(units=2, memory_cap=100))
>>> p.capacity("units"), p.infeasibility_reason() is None
(2, True)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from opsched.errors import ProblemError
from opsched.ir.graph import MAX_SIZE, OpGraph
from opsched.units import format_bytes, parse_bytes

__all__ = [
    "Machine",
    "Objective",
    "Problem",
    "check_callable",
    "check_flag",
    "check_seed",
    "check_spread",
]


class Objective(StrEnum):
    """What a solver minimises."""

    MAKESPAN = "makespan"
    PEAK_MEMORY = "peak_memory"
    MAKESPAN_THEN_MEMORY = "makespan_then_memory"
    MEMORY_THEN_MAKESPAN = "memory_then_makespan"

    @classmethod
    def _missing_(cls, value: object) -> Objective:
        """Accept the CLI spellings (``peak-memory``, ``lex``, ``lex-memory``)."""
        aliases = {"peak-memory": "peak_memory", "memory": "peak_memory",
                   "lex": "makespan_then_memory", "lex-memory": "memory_then_makespan",
                   "makespan-then-memory": "makespan_then_memory",
                   "memory-then-makespan": "memory_then_makespan"}  # fmt: skip
        if isinstance(value, str) and value in aliases:
            return cls(aliases[value])
        known = ", ".join([m.value for m in cls] + list(aliases))
        raise ProblemError(f"unknown objective {value!r}; known: {known}")


@dataclass(frozen=True)
class Machine:
    """Compute units, named resource capacities and a memory cap.

    Parameters
    ----------
    units
        Number of identical compute units (CUDA streams, SMs, cores). ``None`` means unlimited:
        every op may run as soon as its dependencies finish.
    resources
        Capacities of named renewable resources. They override the graph's defaults.
    memory_cap
        Bytes available; ``None`` for no cap. Strings such as ``"3GiB"`` are accepted.
    """

    units: int | None = 1
    resources: Mapping[str, int] = field(default_factory=dict)
    memory_cap: int | str | None = None

    def __post_init__(self) -> None:
        if self.units is not None:
            if (
                isinstance(self.units, bool)
                or not isinstance(self.units, numbers.Integral)
                or self.units < 1
            ):
                raise ProblemError(f"units must be a positive integer, got {self.units!r}")
            object.__setattr__(self, "units", int(self.units))
        if not isinstance(self.resources, Mapping):
            raise ProblemError(f"resources must be a mapping, got {self.resources!r}")
        res: dict[str, int] = {}
        for name, cap in self.resources.items():
            if name == "units":
                raise ProblemError("set the 'units' capacity with Machine(units=...)")
            if not isinstance(name, str) or not name:
                raise ProblemError(f"resource names must be non-empty strings, got {name!r}")
            if (
                isinstance(cap, bool)
                or not isinstance(cap, numbers.Integral)
                or not 0 <= cap <= MAX_SIZE
            ):
                raise ProblemError(f"capacity of resource {name!r} must be an integer >= 0")
            res[name] = int(cap)
        object.__setattr__(self, "resources", res)
        if self.memory_cap is not None:
            object.__setattr__(self, "memory_cap", parse_bytes(self.memory_cap))

    def to_dict(self) -> dict[str, Any]:
        return {
            "units": self.units,
            "resources": dict(self.resources),
            "memory_cap": self.memory_cap,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Machine:
        unknown = sorted(set(data) - _MACHINE_KEYS, key=str)
        if unknown:  # a typo (``memory=``) would otherwise leave the machine uncapped
            raise ProblemError(
                f"unknown machine field {unknown[0]!r}; known: {', '.join(sorted(_MACHINE_KEYS))}"
            )
        return cls(
            units=data.get("units", 1),
            resources=dict(data.get("resources") or {}),
            memory_cap=data.get("memory_cap"),
        )


_MACHINE_KEYS = frozenset({"units", "resources", "memory_cap"})


@dataclass(frozen=True, eq=False)
class Problem:
    """A graph to schedule on a machine, with an objective.

    Every resource an op demands must have a capacity, from the machine or the graph's
    defaults; otherwise :class:`~opsched.errors.ProblemError` names the op and resource.
    """

    graph: OpGraph
    machine: Machine = field(default_factory=Machine)
    objective: Objective = Objective.MAKESPAN

    def __post_init__(self) -> None:
        if not isinstance(self.graph, OpGraph):
            raise TypeError(
                f"Problem(graph, machine): graph must be an OpGraph, got "
                f"{type(self.graph).__name__} (opsched.read_graph(path) reads a file)"
            )
        if not isinstance(self.machine, Machine):
            raise TypeError(
                f"Problem(graph, machine): machine must be a Machine, got "
                f"{type(self.machine).__name__} (e.g. Machine(units=4, memory_cap='2GiB'))"
            )
        object.__setattr__(self, "objective", Objective(self.objective))
        _check_data_deps(self.graph)
        caps = self.capacities
        for op in self.graph.ops:
            for r in op.demands:
                if r not in caps:
                    raise ProblemError(
                        f"demands resource {r!r}, which the machine does not have "
                        f"(known: {', '.join(sorted(caps))})",
                        f"op {op.name!r}",
                    )

    @property
    def capacities(self) -> dict[str, int | None]:
        """Capacity of every resource (``units`` may be ``None``: unlimited)."""
        caps: dict[str, int | None] = dict(self.graph.resources)
        caps.update(self.machine.resources)
        caps["units"] = self.machine.units
        return caps

    def capacity(self, resource: str) -> int | None:
        return self.capacities[resource]

    def machine_record(self) -> dict[str, Any]:
        """The machine a schedule records: :meth:`Machine.to_dict` with every capacity in
        force, the graph's defaults included (a PSPLIB file brings its own), so the file
        says what the schedule was made for without the graph."""
        rec = self.machine.to_dict()
        rec["resources"] = {r: c for r, c in self.capacities.items() if r != "units"}
        return rec

    @property
    def unit_pool(self) -> int | None:
        """The units a schedule can hold at once: the machine's, lowered to the ops' total
        unit demand (at least 1), or ``None`` for unlimited units.

        No schedule uses more units at once than all its ops demand together, so solvers
        size their per-unit state by this, not by :attr:`Machine.units` (which may be huge):
        the schedules are the same and still name units of the machine as given.

        >>> from opsched.ir import Op, OpGraph
        >>> g = OpGraph((Op("a", 1), Op("b", 2)))
        >>> Problem(g, Machine(units=10**30)).unit_pool, Problem(g, Machine(units=1)).unit_pool
        (2, 1)
        """
        k = self.machine.units
        if k is None:
            return None
        return min(k, max(1, int(self.graph.demand_array("units").sum())))

    @property
    def memory_cap(self) -> int | None:
        cap = self.machine.memory_cap
        return int(cap) if cap is not None else None

    def infeasibility_reason(self, cut: bool = False) -> str | None:
        """Why no schedule can exist, or ``None`` if the simple checks find no reason.

        Checked: an op demanding more of a resource than its capacity, and a memory cap below
        :func:`opsched.analysis.min_memory_bound` (the op that needs the most memory at once).
        ``cut`` adds that bound's minimum cut on graphs small enough for it (the exact
        solver asks for it; the heuristics, which report a failure either way, do not pay
        for it).
        """
        g = self.graph
        running = g.durations > 0
        for r in g.resource_names():
            cap = self.capacity(r)
            if cap is None:
                continue
            over = np.flatnonzero(running & (g.demand_array(r) > cap))
            if len(over):
                op = g.ops[int(over[0])]
                amount = op.demands.get(r, 0)
                return f"op {op.name!r} demands {amount} of {r!r} but the capacity is {cap}"
        if self.memory_cap is not None:
            from opsched.analysis.bounds import min_memory_bound

            need, who = min_memory_bound(self.graph, cut=None if cut else False)
            if need > self.memory_cap:
                return (
                    f"memory cap {format_bytes(self.memory_cap)} ({self.memory_cap} B) is below "
                    f"the {format_bytes(need)} ({need} B) that {who} needs at once"
                )
        return None

    def with_machine(self, **changes: Any) -> Problem:
        """Return a copy with machine fields changed (``units``, ``resources``, ``memory_cap``).

        >>> from opsched.demo import seed_problem
        >>> seed_problem(units=2).with_machine(memory_cap="1KiB").machine.memory_cap
        1024
        >>> seed_problem(units=2).with_machine(memory=1024)
        Traceback (most recent call last):
        opsched.errors.ProblemError: unknown machine field 'memory'; known: memory_cap, ...
        """
        m = self.machine.to_dict()
        m.update(changes)
        return Problem(self.graph, Machine.from_dict(m), self.objective)


def require_problem(problem: Any, who: str) -> None:
    """Raise a ``TypeError`` naming ``who`` unless ``problem`` is a :class:`Problem` (a graph
    passed where its problem belongs is the usual slip in a notebook).

    >>> require_problem("g", "solve_cpsat")
    Traceback (most recent call last):
    TypeError: solve_cpsat takes a Problem, got str (Problem(graph, Machine(units=4)))
    """
    if not isinstance(problem, Problem):
        raise TypeError(
            f"{who} takes a Problem, got {type(problem).__name__} "
            "(Problem(graph, Machine(units=4)))"
        )


def check_seed(seed: Any, what: str = "seed") -> int:
    """``seed`` as an int: a whole number >= 0 (NumPy integers too, not a bool), or a
    :class:`~opsched.errors.ProblemError` naming ``what``.

    >>> check_seed(np.int64(3))
    3
    >>> check_seed(1.5)
    Traceback (most recent call last):
    opsched.errors.ProblemError: seed must be a non-negative integer, got 1.5
    """
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ProblemError(f"{what} must be a non-negative integer, got {seed!r}")
    return int(seed)


def check_spread(value: Any, what: str = "noise") -> float:
    """``value`` as a finite float >= 0 (a relative spread), or a ProblemError naming
    ``what``.

    >>> check_spread(-1)
    Traceback (most recent call last):
    opsched.errors.ProblemError: noise must be a finite number >= 0, got -1
    """
    if (
        isinstance(value, bool | np.bool_)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ProblemError(f"{what} must be a finite number >= 0, got {value!r}")
    return float(value)


def check_flag(value: Any, what: str) -> bool:
    """``value`` as a bool: True or False (NumPy's too), or a ProblemError naming ``what``
    (a string such as ``"no"`` would otherwise count as true).

    >>> check_flag("no", "deterministic")
    Traceback (most recent call last):
    opsched.errors.ProblemError: deterministic must be True or False, got 'no'
    """
    if not isinstance(value, bool | np.bool_):
        raise ProblemError(f"{what} must be True or False, got {value!r}")
    return bool(value)


def check_callable(value: Any, what: str) -> None:
    """Raise a ``TypeError`` naming ``what`` unless ``value`` is None or callable (a
    ``progress=True`` would fail at the first line reported)."""
    if value is not None and not callable(value):
        raise TypeError(
            f"{what} must be a function taking one argument (e.g. print) or None, got {value!r}"
        )


def _check_data_deps(graph: OpGraph) -> None:
    """Refuse a graph in program form whose ``deps`` miss a read-after-write edge.

    :class:`OpGraph` takes its edges from ``deps`` alone; a graph file's ``reads`` /
    ``writes`` become edges when it is read, and :func:`opsched.derive_deps` derives them for
    a graph built in Python. An op that reads a buffer an earlier op wrote, without
    depending on it (directly or through others), would let a schedule read data not yet
    written, so no problem is made of it.
    """
    if graph.__dict__.get("_data_deps_checked"):  # a Problem per cap or machine: check once
        return
    if any(op.reads for op in graph.ops):
        _find_missing_data_dep(graph)
    graph.__dict__["_data_deps_checked"] = True


def _find_missing_data_dep(graph: OpGraph) -> None:
    """:func:`_check_data_deps`'s search: each read-after-write edge, direct or through
    other ops."""
    from opsched.ir.program import derive_dependencies

    raw = derive_dependencies([op.reads for op in graph.ops], [op.writes for op in graph.ops],
                              ("RAW",))  # fmt: skip
    ptr, idx = graph.pred_ptr, graph.pred_idx
    for e in raw:
        preds = idx[ptr[e.dst] : ptr[e.dst + 1]]
        if e.src in preds:
            continue
        seen, stack = set(), list(preds)
        while stack and e.src not in seen:
            v = int(stack.pop())
            if v not in seen:
                seen.add(v)
                stack.extend(idx[ptr[v] : ptr[v + 1]].tolist())
        if e.src not in seen:
            names = graph.names
            raise ProblemError(
                f"reads buffer {e.buffer!r}, written by op {names[e.src]!r}, without depending "
                f"on it: an OpGraph takes its edges from deps alone; derive them from "
                f"reads/writes with opsched.derive_deps(graph) (graph files are derived when "
                f"read)",
                f"op {names[e.dst]!r}",
            )

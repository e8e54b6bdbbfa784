"""One operator of an op graph: :class:`Op`, and the checks of its numbers.

An :class:`Op` checks its fields once, on construction, with one-line messages that name it
(:class:`~opsched.errors.GraphError`). Values that already have their canonical types take a
fast path, which matters when a graph has a million ops.

Examples
--------
>>> Op("conv", 2, deps=("input",), output_bytes=4096).units
1
>>> Op("bad", -1)
Traceback (most recent call last):
...
opsched.errors.GraphError: op 'bad': duration must be >= 0, got -1
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opsched.errors import GraphError

__all__ = ["DEFAULT_DEMANDS", "MAX_SIZE", "Op", "check_number", "check_size"]

#: Largest byte size or demand accepted anywhere (keeps every sum inside int64).
MAX_SIZE = 2**62

#: The least positive duration: below it a float loses precision (subnormals from 2.2e-308)
#: and a solver's ticks per time unit (a million over the total) overflow to infinity.
MIN_DURATION = 1e-300

#: Demands an op gets when its record names none: one compute unit.
DEFAULT_DEMANDS: Mapping[str, int] = {"units": 1}


def check_number(value: Any, what: str, where: str) -> float:
    """Return ``value`` as a finite float >= 0, or raise :class:`GraphError` naming ``where``."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise GraphError(f"{what} must be a number, got {value!r}", where)
    if isinstance(value, numbers.Integral) and not -MAX_SIZE <= int(value) <= MAX_SIZE:
        raise GraphError(
            f"{what} must be <= 2^62, got an integer of {len(str(value))} digits", where
        )
    x = float(value)
    if not math.isfinite(x):
        raise GraphError(f"{what} must be finite, got {value!r}", where)
    if x < 0:
        raise GraphError(f"{what} must be >= 0, got {value!r}", where)
    if x > MAX_SIZE:
        raise GraphError(f"{what} must be <= 2^62, got {value!r}", where)
    return x


def check_size(value: Any, what: str, where: str) -> int:
    """Return ``value`` as an integer in ``[0, 2^62]`` or raise :class:`GraphError`."""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        value = int(value)
    if isinstance(value, np.integer):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and not math.isfinite(value):
            raise GraphError(f"{what} must be finite, got {value!r}", where)
        raise GraphError(f"{what} must be an integer, got {value!r}", where)
    if value < 0:
        raise GraphError(f"{what} must be >= 0, got {value!r}", where)
    if value > MAX_SIZE:
        raise GraphError(f"{what} must be <= 2^62, got {value!r}", where)
    return value


@dataclass(frozen=True, slots=True)
class Op:
    """One operator of a graph.

    Parameters
    ----------
    name
        Unique name within the graph.
    duration
        Execution time (any unit, the same for the whole graph), ``>= 0``.
    deps
        Names of the ops that must finish before this one starts.
    output_bytes
        Size of the tensor this op produces. It is allocated when the op starts and freed when
        its last consumer ends (see :mod:`opsched.liveness`).
    workspace_bytes
        Scratch memory held only while the op runs.
    demands
        Resource name -> integer amount held while the op runs; ``{"units": 1}`` by default.
    kind
        Operator kind (``"conv2d"``, ``"matmul"``...), free text.
    output
        True for a graph output: with no consumer its tensor stays allocated until the makespan.
    attrs
        Free metadata (shapes, dtype, flops, bytes).
    reads, writes
        Buffer names, for graphs in *program form* (see :mod:`opsched.transforms.deps`).
    """

    name: str
    duration: float = 0.0
    deps: tuple[str, ...] = ()
    output_bytes: int = 0
    workspace_bytes: int = 0
    demands: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_DEMANDS))
    kind: str | None = None
    output: bool = False
    attrs: Mapping[str, Any] = field(default_factory=dict)
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self._plain():
            if type(self.duration) is int:
                object.__setattr__(self, "duration", float(self.duration))
            return
        self._check_and_normalise()

    def _plain(self) -> bool:
        """True when every field already has its canonical type and a valid value.

        This is the common case (generators, readers, transforms); it skips the general
        checks, which cost several times more and matter at a million ops.
        """
        d, o, w, deps = self.duration, self.output_bytes, self.workspace_bytes, self.deps
        return (
            type(self.name) is str
            and self.name != ""
            and (type(d) is float or type(d) is int)
            and 0 <= d <= MAX_SIZE  # false for NaN
            and (d == 0 or d >= MIN_DURATION)
            and type(o) is int
            and 0 <= o <= MAX_SIZE
            and type(w) is int
            and 0 <= w <= MAX_SIZE
            and type(deps) is tuple
            and all(type(x) is str and x != "" for x in deps)
            and len(set(deps)) == len(deps)
            and self.name not in deps
            and self.reads == ()
            and self.writes == ()
            and type(self.demands) is dict
            and all(
                type(r) is str and r != "" and type(a) is int and 0 <= a <= MAX_SIZE
                for r, a in self.demands.items()
            )
            and (self.kind is None or type(self.kind) is str)
            and type(self.output) is bool
            and isinstance(self.attrs, Mapping)
        )

    def _check_and_normalise(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise GraphError(f"op name must be a non-empty string, got {self.name!r}")
        where = f"op {self.name!r}"
        d = check_number(self.duration, "duration", where)
        if 0 < d < MIN_DURATION:
            raise GraphError(
                f"duration must be 0 or at least {MIN_DURATION:g}, got {d!r} (express times "
                "in a smaller unit)",
                where,
            )
        object.__setattr__(self, "duration", d)
        object.__setattr__(
            self, "output_bytes", check_size(self.output_bytes, "output_bytes", where)
        )
        object.__setattr__(
            self, "workspace_bytes", check_size(self.workspace_bytes, "workspace_bytes", where)
        )
        for attr in ("deps", "reads", "writes"):
            seq = getattr(self, attr)
            if isinstance(seq, str) or not isinstance(seq, Iterable):
                raise GraphError(f"{attr} must be a list of names, got {seq!r}", where)
            seq = tuple(seq)
            for item in seq:
                if not isinstance(item, str) or not item:
                    raise GraphError(
                        f"{attr} entries must be non-empty strings, got {item!r}", where
                    )
            object.__setattr__(self, attr, seq)
        if len(set(self.deps)) != len(self.deps):
            dup = next(d for d in self.deps if self.deps.count(d) > 1)
            raise GraphError(f"dependency {dup!r} is listed twice", where)
        if self.name in self.deps:
            raise GraphError("op depends on itself", where)
        if not isinstance(self.demands, Mapping):
            raise GraphError(f"demands must be an object, got {self.demands!r}", where)
        demands = {}
        for res, amount in self.demands.items():
            if not isinstance(res, str) or not res:
                raise GraphError(f"resource names must be non-empty strings, got {res!r}", where)
            demands[res] = check_size(amount, f"demand of {res!r}", where)
        object.__setattr__(self, "demands", demands)
        if self.kind is not None and not isinstance(self.kind, str):
            raise GraphError(f"kind must be a string, got {self.kind!r}", where)
        if not isinstance(self.output, bool):
            raise GraphError(f"output must be true or false, got {self.output!r}", where)
        if not isinstance(self.attrs, Mapping):
            raise GraphError(f"attrs must be an object, got {self.attrs!r}", where)

    @property
    def units(self) -> int:
        """How many compute units (resource ``units``) the op holds while it runs."""
        return self.demands.get("units", 0)

"""The heterogeneous machine model: device types, per-type durations, links between types.

A :class:`HeteroMachine` holds several *device types* (``gpu``, ``cpu``...), each with a
number of identical *instances* (GPU streams, CPU cores). Every op runs on exactly one
instance of a type it can run on, for that type's duration, and an instance runs one op at a
time. An edge ``u -> v`` whose ops run on **different device types** delays ``v`` by the
transfer time of ``u``'s output::

    transfer(u, a, b) = output_bytes(u) / bandwidth(a, b) + latency(a, b)    (a != b)

Two instances of the **same** type share memory (streams of one GPU, cores of one CPU), so a
transfer between them costs nothing: ``transfer(u, a, a) = 0``.

Durations per device type come, for each op, from the first of:

1. ``op.attrs["durations"]``, a mapping ``{type: duration}``; a type missing from it cannot
   run the op (an op that only a CPU can run lists only ``cpu``);
2. the ``cost`` function given to :class:`HeteroProblem` (``cost(op, type)`` returns a
   duration, or ``None`` if the type cannot run the op); :func:`roofline_cost` builds one
   from the op-kind vocabulary (:mod:`opsched.ir.kinds`);
3. ``op.duration``, the same on every type.

Memory caps and resources other than the devices are out of scope here.

Examples
--------
>>> from opsched.ir import Op, OpGraph
>>> g = OpGraph((Op("a", 1, output_bytes=100, attrs={"durations": {"gpu": 1, "cpu": 4}}),
...              Op("b", 2, deps=("a",), attrs={"durations": {"cpu": 2}})))
>>> p = HeteroProblem(g, HeteroMachine.parse("gpu:2,cpu:1", bandwidth=50, latency=1))
>>> p.duration(0, "gpu"), p.duration(1, "gpu"), p.can_run(1, "cpu")
(1.0, nan, True)
>>> p.transfer(0, "gpu", "cpu"), p.transfer(0, "gpu", "gpu")
(3.0, 0.0)
>>> p.instances
[('gpu', 0), ('gpu', 1), ('cpu', 0)]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opsched.errors import ProblemError
from opsched.ir.graph import MAX_SIZE, MAX_TOTAL_TIME, Op, OpGraph

__all__ = ["CostFn", "DeviceType", "HeteroMachine", "HeteroProblem", "Link", "roofline_cost"]

#: ``cost(op, device_type) -> duration or None`` (None: the type cannot run the op).
CostFn = Callable[[Op, str], float | None]


#: Most instances of one device type (a million on a 2-op graph took 5 s and 500 MB).
MAX_DEVICES = 4096


@dataclass(frozen=True)
class DeviceType:
    """A device type with ``count`` identical instances."""

    name: str
    count: int

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or any(c in self.name for c in ":,"):
            raise ProblemError(f"device type name must be a non-empty word, got {self.name!r}")
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ProblemError(
                f"device type {self.name!r}: count must be an integer >= 1, got {self.count!r}"
            )
        if self.count > MAX_DEVICES:  # the solvers keep state per instance
            raise ProblemError(
                f"device type {self.name!r}: count must be at most {MAX_DEVICES:,}, "
                f"got {self.count:,}"
            )


@dataclass(frozen=True)
class Link:
    """A link between two device types: ``bandwidth`` in bytes per time unit (``None`` for
    infinite: only the latency counts) and ``latency`` in time units."""

    bandwidth: float | None = None
    latency: float = 0.0

    def __post_init__(self) -> None:
        bw = self.bandwidth
        if bw is not None and (isinstance(bw, bool) or not isinstance(bw, int | float)
                               or not math.isfinite(bw) or bw <= 0):  # fmt: skip
            raise ProblemError(f"link bandwidth must be a finite number > 0, got {bw!r}")
        lat = self.latency
        if isinstance(lat, bool) or not isinstance(lat, int | float) or not math.isfinite(lat) \
                or lat < 0:  # fmt: skip
            raise ProblemError(f"link latency must be a finite number >= 0, got {lat!r}")

    def cost(self, nbytes: float) -> float:
        """Time to move ``nbytes`` over this link."""
        return (0.0 if self.bandwidth is None else nbytes / self.bandwidth) + float(self.latency)


@dataclass(frozen=True)
class HeteroMachine:
    """Device types and the links between them.

    Parameters
    ----------
    devices
        The device types, in order (instances are numbered type by type).
    link
        The link between any two different types.
    links
        Per-pair overrides, keyed ``(type_a, type_b)`` (either order).
    """

    devices: tuple[DeviceType, ...]
    link: Link = field(default_factory=Link)
    links: Mapping[tuple[str, str], Link] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "devices", tuple(self.devices))
        if not self.devices:
            raise ProblemError("a heterogeneous machine needs at least one device type")
        names = [d.name for d in self.devices]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ProblemError(f"device type {sorted(dup)[0]!r} is listed twice")
        norm: dict[tuple[str, str], Link] = {}
        for (a, b), lk in self.links.items():
            for t in (a, b):
                if t not in names:
                    raise ProblemError(f"link ({a}, {b}) names unknown device type {t!r}")
            norm[(a, b)] = norm[(b, a)] = lk
        object.__setattr__(self, "links", norm)

    @classmethod
    def parse(
        cls, text: str, bandwidth: float | None = None, latency: float = 0.0
    ) -> HeteroMachine:
        """Parse ``"gpu:4,cpu:8"`` (``TYPE:COUNT`` pairs; a bare ``TYPE`` means one).

        >>> HeteroMachine.parse("gpu:4,cpu:8").counts
        {'gpu': 4, 'cpu': 8}
        """
        devs = []
        for part in text.split(","):
            name, colon, num = part.strip().partition(":")
            if not name.strip():
                raise ProblemError(f"--devices: expected TYPE:COUNT, got {part!r}")
            try:
                count = int(num) if colon else 1
            except ValueError:
                raise ProblemError(
                    f"--devices: count of {name.strip()!r} must be an integer, got {num!r}"
                ) from None
            devs.append(DeviceType(name.strip(), count))
        return cls(tuple(devs), Link(bandwidth, latency))

    @property
    def type_names(self) -> list[str]:
        return [d.name for d in self.devices]

    @property
    def counts(self) -> dict[str, int]:
        return {d.name: d.count for d in self.devices}

    def link_between(self, a: str, b: str) -> Link:
        """The link used between types ``a`` and ``b`` (``a != b``)."""
        return self.links.get((a, b), self.link)

    def to_dict(self) -> dict[str, Any]:
        def lk(x: Link) -> dict[str, Any]:
            return {"bandwidth": x.bandwidth, "latency": x.latency}

        return {
            "devices": self.counts,
            "link": lk(self.link),
            "links": [{"between": [a, b], **lk(x)} for (a, b), x in self.links.items() if a < b],
        }


class HeteroProblem:
    """A graph on a heterogeneous machine: durations per (op, type) and transfer costs.

    Parameters
    ----------
    graph
        The op graph (memory fields and demands other than one device are ignored).
    machine
        Device types, counts and links.
    cost
        Optional ``cost(op, type)`` for ops without ``attrs["durations"]``.

    Raises
    ------
    ProblemError
        If an op can run on no device type of the machine, or a duration is not a finite
        number >= 0 (the message names the op).
    """

    def __init__(self, graph: OpGraph, machine: HeteroMachine, cost: CostFn | None = None):
        self.graph = graph
        self.machine = machine
        types = machine.type_names
        self.types: list[str] = types
        self.type_index: dict[str, int] = {t: k for k, t in enumerate(types)}
        n, nt = graph.num_ops, len(types)
        dur = np.full((n, nt), np.nan)
        for i, op in enumerate(graph.ops):
            where = f"op {op.name!r}"
            given = op.attrs.get("durations") if op.attrs else None
            if given is not None and not isinstance(given, Mapping):
                raise ProblemError(f"attrs.durations must be an object, got {given!r}", where)
            for k, t in enumerate(types):
                if given is not None:
                    v: Any = given.get(t)
                elif cost is not None:
                    v = cost(op, t)
                else:
                    v = op.duration
                if v is None:
                    continue
                if isinstance(v, bool) or not isinstance(v, int | float) \
                        or not math.isfinite(v) or not 0 <= v <= MAX_SIZE:  # fmt: skip
                    raise ProblemError(f"duration on {t!r} must be a finite number in "
                                       f"[0, 2^62], got {v!r}", where)  # fmt: skip
                dur[i, k] = float(v)
            if np.isnan(dur[i]).all():
                known = ", ".join(given) if given else "none"
                raise ProblemError(
                    f"can run on no device type of the machine ({', '.join(types)}); "
                    f"its durations name: {known}",
                    where,
                )
        dur.flags.writeable = False
        #: durations[i, k]: op i on type k (NaN where it cannot run)
        self.durations: np.ndarray = dur
        #: transfer[k, l] = (seconds per byte, latency) between types k and l (0 when equal)
        per_byte = np.zeros((nt, nt))
        lat = np.zeros((nt, nt))
        for a in range(nt):
            for b in range(nt):
                if a != b:
                    lk = machine.link_between(types[a], types[b])
                    per_byte[a, b] = 0.0 if lk.bandwidth is None else 1.0 / lk.bandwidth
                    lat[a, b] = float(lk.latency)
        self.per_byte = per_byte
        self.latency = lat
        # durations and transfers along a path must add up exactly in float64 (as a graph's
        # durations do): refuse a link that makes one transfer longer than all that allows
        biggest = float(graph.output_sizes.max()) if graph.num_ops else 0.0
        longest = float((biggest * per_byte + lat).max()) if nt > 1 else 0.0
        work = float(np.nan_to_num(dur, nan=0.0).max(axis=1).sum())
        if not longest + work < MAX_TOTAL_TIME:  # also false for inf / NaN
            raise ProblemError(
                f"a transfer over the links takes up to {longest:.3g} time units: with the "
                f"durations, 2^53 or more (times past it are not exact); check "
                "--link-bandwidth and --link-latency"
            )
        #: every device instance as (type, index within the type), type by type
        self.instances: list[tuple[str, int]] = [
            (d.name, j) for d in machine.devices for j in range(d.count)
        ]
        #: the type index of every instance
        self.instance_type: np.ndarray = np.array(
            [self.type_index[t] for t, _ in self.instances], dtype=np.int64
        )

    def _k(self, t: str | int) -> int:
        if isinstance(t, int):
            return t
        try:
            return self.type_index[t]
        except KeyError:
            raise ProblemError(f"unknown device type {t!r}; known: {', '.join(self.types)}") \
                from None  # fmt: skip

    def duration(self, op: int, t: str | int) -> float:
        """Duration of op ``op`` (index) on type ``t`` (NaN if it cannot run there)."""
        return float(self.durations[op, self._k(t)])

    def can_run(self, op: int, t: str | int) -> bool:
        return not math.isnan(self.durations[op, self._k(t)])

    def transfer(self, op: int, a: str | int, b: str | int) -> float:
        """Delay on each edge out of ``op`` run on type ``a`` to a consumer on type ``b``."""
        ka, kb = self._k(a), self._k(b)
        if ka == kb:
            return 0.0
        nbytes = float(self.graph.ops[op].output_bytes)
        return nbytes * float(self.per_byte[ka, kb]) + float(self.latency[ka, kb])

    def lower_bound(self) -> float:
        """A makespan lower bound: the larger of three simple bounds.

        The longest path with each op at its fastest type and free transfers; the total
        fastest work over all instances; and, for every set ``S`` of types some op can run on,
        the fastest work of the ops that can run only within ``S`` over ``S``'s instances.

        >>> from opsched.ir import Op, OpGraph
        >>> g = OpGraph((Op("a", attrs={"durations": {"cpu": 3}}),
        ...              Op("b", attrs={"durations": {"cpu": 3, "gpu": 1}})))
        >>> HeteroProblem(g, HeteroMachine.parse("gpu:1,cpu:1")).lower_bound()
        3.0
        """
        from opsched.analysis.topo import topo_indices

        g = self.graph
        if g.num_ops == 0:
            return 0.0
        fastest = np.nanmin(self.durations, axis=1)
        finish = np.zeros(g.num_ops)
        pp, pi = g.pred_ptr, g.pred_idx
        for i in topo_indices(g).tolist():
            preds = pi[pp[i] : pp[i + 1]]
            finish[i] = (finish[preds].max() if len(preds) else 0.0) + fastest[i]
        counts = np.array([d.count for d in self.machine.devices], dtype=np.float64)
        best = max(float(finish.max()), float(fastest.sum() / counts.sum()))
        runs = ~np.isnan(self.durations)
        for mask in {tuple(r) for r in runs.tolist()}:
            only = np.all(~runs | np.array(mask), axis=1)
            cap = float(counts[np.array(mask)].sum())
            best = max(best, float(fastest[only].sum() / cap))
        return best

    def transfer_matrix(self, op: int) -> np.ndarray:
        """``transfer(op, a, b)`` for every pair of types, as an array."""
        return self.graph.ops[op].output_bytes * self.per_byte + self.latency


def roofline_cost(specs: Mapping[str, tuple[float, float]]) -> CostFn:
    """A cost function from per-type peak FLOP rate and memory bandwidth.

    An op of a known kind (:data:`opsched.ir.kinds.KINDS`) takes
    ``max(flops / peak_flops, bytes / bandwidth)`` on a type listed in ``specs``
    (``{type: (flops_per_time_unit, bytes_per_time_unit)}``); types not listed, and ops
    without a kind, fall back to ``op.duration``.

    Examples
    --------
    >>> from opsched.ir import Op
    >>> cost = roofline_cost({"gpu": (1e6, 1e5), "cpu": (1e4, 1e4)})
    >>> op = Op("mm", 1.0, kind="matmul", attrs={"M": 10, "N": 10, "K": 10})
    >>> cost(op, "gpu"), cost(op, "cpu")
    (0.012, 0.2)
    """
    from opsched.ir.kinds import KINDS, bytes_min, flops

    for t, (f, b) in specs.items():
        if not (f > 0 and b > 0):
            raise ProblemError(f"roofline spec of {t!r} needs positive rates, got {(f, b)!r}")

    def cost(op: Op, t: str) -> float | None:
        kind = op.kind
        if t not in specs or kind is None or kind not in KINDS:
            return op.duration
        f, b = specs[t]
        return max(flops(kind, op.attrs) / f, bytes_min(kind, op.attrs) / b)

    return cost

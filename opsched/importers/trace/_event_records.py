"""The records a profiler trace is read into (:func:`opsched.importers.trace.events.parse_trace`,
which re-exports them): CPU ops and annotations with their nesting, CUDA runtime and driver
calls, GPU kernels, memcpys and memsets, cross-stream waits (``cuda_sync``), profiler steps,
and :class:`TraceData`, one trace's lists of each with its GPU names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CpuOp", "GpuActivity", "RuntimeCall", "Step", "SyncEvent", "TraceData"]


@dataclass(slots=True)
class CpuOp:
    """One CPU-side op or annotation (a ``ph: X`` event of a CPU category)."""

    index: int
    name: str
    cat: str
    pid: str
    tid: str
    ts: float
    dur: float
    dims: list[Any] | None = None
    types: list[Any] | None = None
    concrete: list[Any] | None = None
    parent: int = -1  #: index of the enclosing op on the same thread, -1 for a root

    @property
    def end(self) -> float:
        return self.ts + self.dur

    @property
    def is_annotation(self) -> bool:
        """A user annotation or Python frame rather than a dispatched op."""
        return self.cat in ("user_annotation", "python_function")


@dataclass(slots=True)
class RuntimeCall:
    """A CUDA runtime or driver API call on a CPU thread."""

    name: str
    pid: str
    tid: str
    ts: float
    dur: float
    correlation: int | None


@dataclass(slots=True)
class GpuActivity:
    """A kernel, memcpy or memset executed on a GPU stream."""

    name: str
    kind: str  #: "kernel", "memcpy" or "memset"
    device: int
    stream: int
    ts: float
    dur: float
    correlation: int
    grid: list[int] | None = None
    block: list[int] | None = None
    triton: bool = False

    @property
    def end(self) -> float:
        return self.ts + self.dur


@dataclass(slots=True)
class SyncEvent:
    """A ``cuda_sync`` activity: a stream waiting for an event recorded on another stream."""

    name: str
    stream: int
    ts: float
    correlation: int | None
    wait_on_stream: int | None
    record_correlation: int | None


@dataclass(slots=True)
class Step:
    """A ``ProfilerStep#N`` window on the CPU timeline."""

    number: int
    ts: float
    dur: float

    @property
    def end(self) -> float:
        return self.ts + self.dur


@dataclass
class TraceData:
    """The normalised content of one trace."""

    source: str
    schema: str  #: "legacy" or "kineto"
    devices: dict[int, str] = field(default_factory=dict)
    cpu_ops: list[CpuOp] = field(default_factory=list)
    runtime: list[RuntimeCall] = field(default_factory=list)
    gpu: list[GpuActivity] = field(default_factory=list)
    syncs: list[SyncEvent] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)

    def device_name(self, device: int) -> str:
        """Name of GPU ``device`` from ``deviceProperties``; the only entry if ids differ."""
        if device in self.devices:
            return self.devices[device]
        if len(self.devices) == 1:
            return next(iter(self.devices.values()))
        return "unknown"

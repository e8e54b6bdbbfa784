"""Reading a PyTorch profiler (Kineto) chrome trace into normalised event lists.

Two generations of the format exist and both are read:

- *legacy* (PyTorch 1.8-1.10): categories ``Operator``, ``Runtime``, ``Kernel``, ``Memcpy``,
  ``Memset``; CPU ops carry ``External id``, runtime calls and GPU activities ``external id``.
- *current* (PyTorch >= 1.11): ``cpu_op``, ``user_annotation``, ``cuda_runtime``,
  ``cuda_driver``, ``kernel``, ``gpu_memcpy``, ``gpu_memset`` and, when the profiler's
  ``enable_cuda_sync_events`` is on, ``cuda_sync`` (stream waits with the producer stream and
  the correlation id of the ``cudaEventRecord`` they wait for).

A runtime call (``cudaLaunchKernel``, ``cuLaunchKernel``, ``cudaMemcpyAsync``...) and the GPU
activity it enqueued share ``args.correlation``; that is the only link trusted between the CPU
and the GPU side. Times are microseconds as in the trace.

Examples
--------
>>> doc = {"traceEvents": [
...     {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 0,
...      "dur": 10, "args": {"Input Dims": [[4, 4]], "Input type": ["float"]}},
...     {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
...      "ts": 2, "dur": 3, "args": {"correlation": 7}},
...     {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 20,
...      "dur": 4, "args": {"correlation": 7, "stream": 7, "device": 0}}]}
>>> t = parse_trace(doc, "demo")
>>> len(t.cpu_ops), len(t.runtime), t.gpu[0].kind, t.gpu[0].stream
(1, 1, 'kernel', 7)
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opsched._files import note_input, refuse_lone_surrogates
from opsched.errors import InputError

__all__ = [
    "CpuOp",
    "GpuActivity",
    "RuntimeCall",
    "Step",
    "SyncEvent",
    "TraceData",
    "is_triton_kernel",
    "load_trace",
    "parse_trace",
]

CPU_CATS = frozenset({"Operator", "cpu_op", "user_annotation", "python_function"})
RUNTIME_CATS = frozenset({"Runtime", "cuda_runtime", "cuda_driver"})
GPU_CATS: Mapping[str, str] = {
    "Kernel": "kernel",
    "kernel": "kernel",
    "Memcpy": "memcpy",
    "gpu_memcpy": "memcpy",
    "Memset": "memset",
    "gpu_memset": "memset",
}
SYNC_CAT = "cuda_sync"
#: a step annotation; its number is read as an int, so at most 18 digits (a longer one is
#: not a step number any profiler writes, and Python refuses to parse thousands of digits)
_STEP_RE = re.compile(r"^ProfilerStep#(\d{1,18})$")
_TRITON_RE = re.compile(r"^triton_|^triton\b|^Triton")


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


def is_triton_kernel(name: str, args: Mapping[str, Any] | None = None) -> bool:
    """True for a kernel generated by Triton (TorchInductor names them ``triton_*``).

    >>> is_triton_kernel("triton_poi_fused_add_relu_0"), is_triton_kernel("volta_sgemm_128x64_nn")
    (True, False)
    """
    if _TRITON_RE.search(name):
        return True
    if args:
        backend = str(args.get("kernel_backend", "")).lower()
        if backend == "triton" or "triton" in str(args.get("kernel_file", "")).lower():
            return True
    return False


def load_trace(path: str | os.PathLike[str]) -> TraceData:
    """Read a chrome-trace JSON file, gzip-compressed or not (detected from its bytes).

    Raises
    ------
    InputError
        Missing, unreadable, truncated or not a profiler trace; the message names the file.
    """
    p = Path(path)
    note_input(p)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", str(p)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", str(p)) from None
    except OSError as e:
        raise InputError(e.strerror or str(e), str(p)) from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as e:
            raise InputError(f"truncated or corrupt gzip data ({e})", str(p)) from None
    if not raw.strip():
        raise InputError("file is empty", str(p))
    # decoded strictly in the encoding JSON allows (UTF-8, or UTF-16/32 as a trace saved by
    # some Windows tools is): json.loads(bytes) would let UTF-8-coded surrogates through
    encoding = json.detect_encoding(raw)
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as e:
        raise InputError(f"not {encoding.upper()} text (byte {e.start})", str(p)) from None
    text = text.removeprefix("\ufeff")
    del raw
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"invalid JSON: {e.msg}", f"{p}:{e.lineno}:{e.colno}") from None
    except ValueError as e:
        raise InputError(f"invalid JSON: {e}", str(p)) from None
    refuse_lone_surrogates(doc, text, str(p))
    try:
        return parse_trace(doc, p.name)
    except InputError as e:
        raise e.located(str(p)) from None


#: Largest timestamp or duration read (microseconds): about 30,000 years; clocks count from
#: boot or from 1970, so anything larger is a corrupt number, not a time.
_MAX_US = 1e18


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    x = float(v)
    return x if math.isfinite(x) else None


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        m = re.search(r"-?\d+", v)  # legacy GPU tids are strings such as "stream 7"
        return int(m.group()) if m else None
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def _id(v: Any) -> int | None:
    """A device or stream id written in ``args``: a whole number >= 0 (a digit string too)."""
    if isinstance(v, str):
        v = v.strip()
        return int(v) if v.isascii() and v.isdigit() and len(v) <= 18 else None
    n = _int(v)
    return n if n is not None and n >= 0 else None


def parse_trace(doc: Any, source: str = "trace") -> TraceData:
    """Normalise a parsed chrome-trace document (see the module docstring)."""
    if isinstance(doc, list):
        events = doc
        doc = {}
    elif isinstance(doc, Mapping) and isinstance(doc.get("traceEvents"), list):
        events = doc["traceEvents"]
    else:
        raise InputError("not a profiler trace: no 'traceEvents' list")
    t = TraceData(source=source, schema="kineto")
    props = doc.get("deviceProperties")
    for dev in props if isinstance(props, list) else []:  # anything else names no GPU
        dev_id = _int(dev.get("id")) if isinstance(dev, Mapping) else None
        if dev_id is not None:
            t.devices[dev_id] = str(dev.get("name", "unknown"))
    seen_steps: set[int] = set()
    for i, e in enumerate(events):
        if not isinstance(e, Mapping) or e.get("ph") != "X":
            continue
        cat = e.get("cat")
        if not isinstance(cat, str):  # a category of another type is none of ours
            cat = None
        # a GPU event's duration is its measurement: one without any is refused, not read as 0
        untimed = cat in GPU_CATS and "dur" not in e
        ts, dur = _num(e.get("ts")), _num(e.get("dur", 0))
        if ts is None or dur is None or dur < 0 or untimed:
            raise InputError(f"traceEvents[{i}] ({e.get('name')!r}): bad ts/dur")
        if abs(ts) > _MAX_US or dur > _MAX_US:  # past any clock: a corrupt number
            raise InputError(f"traceEvents[{i}] ({e.get('name')!r}): ts/dur past {_MAX_US:g} us")
        if cat not in CPU_CATS and cat not in RUNTIME_CATS and cat not in GPU_CATS \
                and cat != SYNC_CAT:  # fmt: skip
            continue  # an event of another category is none of ours, whatever its fields
        name = e.get("name")
        if not isinstance(name, str):
            raw = "no name" if "name" not in e else f"name {_short(name)} is not a string"
            raise InputError(f"traceEvents[{i}] at ts {e['ts']}: {raw}")
        where = f"traceEvents[{i}] ({name[:60]!r} at ts {e['ts']})"
        args: Mapping[str, Any] = e["args"] if isinstance(e.get("args"), Mapping) else {}
        if cat == "Operator":
            t.schema = "legacy"
        if cat in CPU_CATS:
            m = _STEP_RE.match(name)
            if m is None and name.startswith("ProfilerStep#"):
                raise InputError(f"{where}: no step number after 'ProfilerStep#' (1-18 digits)")
            if m and int(m.group(1)) not in seen_steps:
                seen_steps.add(int(m.group(1)))
                t.steps.append(Step(int(m.group(1)), ts, dur))
            t.cpu_ops.append(
                CpuOp(
                    len(t.cpu_ops),
                    name,
                    str(cat),
                    str(e.get("pid")),
                    str(e.get("tid")),
                    ts,
                    dur,
                    _list(args.get("Input Dims")),
                    _list(args.get("Input type")),
                    _list(args.get("Concrete Inputs")),
                )
            )
        elif cat in RUNTIME_CATS:
            t.runtime.append(
                RuntimeCall(
                    name,
                    str(e.get("pid")),
                    str(e.get("tid")),
                    ts,
                    dur,
                    _int(args.get("correlation")),
                )
            )
        elif cat in GPU_CATS:
            corr = _int(args.get("correlation"))
            # the stream and device are read from args; without them from tid and pid, where
            # Kineto writes them too (legacy tids read "stream 7")
            if "stream" in args and _id(args["stream"]) is None:
                raise InputError(f"{where}: args.stream {_short(args['stream'])} is no stream id")
            if "device" in args and _id(args["device"]) is None:
                raise InputError(f"{where}: args.device {_short(args['device'])} is no device id")
            stream = _id(args["stream"]) if "stream" in args else _int(e.get("tid"))
            if corr is None or stream is None:
                raise InputError(
                    f"traceEvents[{i}] ({name[:60]!r}): GPU event without correlation or stream"
                )
            device = _id(args["device"]) if "device" in args else _int(e.get("pid"))
            t.gpu.append(
                GpuActivity(
                    name,
                    GPU_CATS[str(cat)],
                    device if device is not None else 0,
                    stream,
                    ts,
                    dur,
                    corr,
                    _list(args.get("grid")),
                    _list(args.get("block")),
                    GPU_CATS[str(cat)] == "kernel" and is_triton_kernel(name, args),
                )
            )
        elif cat == SYNC_CAT:
            stream = _int(args.get("stream", e.get("tid")))
            if stream is not None:
                wos = _int(args.get("wait_on_stream"))
                rec = _int(args.get("wait_on_cuda_event_record_corr_id"))
                t.syncs.append(
                    SyncEvent(
                        name,
                        stream,
                        ts,
                        _int(args.get("correlation")),
                        wos if wos is not None and wos >= 0 else None,
                        rec if rec is not None and rec >= 0 else None,
                    )
                )
    if not t.gpu and any(isinstance(e, Mapping) and e.get("pid") == "CUDA functions"
                         for e in events):  # fmt: skip
        raise InputError(
            "an autograd-profiler export (events under pid 'CUDA functions'), not a Kineto "
            "trace: record with torch.profiler.profile and export_chrome_trace"
        )
    t.steps.sort(key=lambda s: s.ts)
    _link_parents(t.cpu_ops)
    return t


def _short(v: Any) -> str:
    """``repr`` of a field's value for an error line, cut at 40 characters."""
    r = repr(v)
    return r if len(r) <= 40 else r[:37] + "..."


def _list(v: Any) -> list[Any] | None:
    return v if isinstance(v, list) else None


def _link_parents(ops: list[CpuOp]) -> None:
    """Set each op's ``parent``: the innermost op of the same thread enclosing it."""
    by_thread: dict[tuple[str, str], list[CpuOp]] = {}
    for op in ops:
        by_thread.setdefault((op.pid, op.tid), []).append(op)
    for lst in by_thread.values():
        lst.sort(key=lambda o: (o.ts, -o.dur, o.index))
        stack: list[CpuOp] = []
        for op in lst:
            while stack and stack[-1].end < op.end:  # ended before op ends: not a parent
                stack.pop()
            op.parent = stack[-1].index if stack else -1
            stack.append(op)

"""Linking GPU activities to the CPU ops that launched them.

A GPU activity is tied to its runtime call by ``correlation``; the runtime call is tied to
the CPU ops by time: the ops of the same thread whose interval contains the call form its
*stack* (outermost first). Two frames of that stack matter:

- the **graph op** (:func:`graph_frame`): the outermost frame that is a dispatched operator,
  skipping wrappers (profiler steps, user annotations, Python frames, autograd engine
  frames and autograd nodes such as ``ConvolutionBackward0``, optimizer and module
  wrappers); when every frame is a wrapper, the innermost one;
- the **timing-row op** (:func:`row_frame`): the innermost CPU op (annotations excluded), as in
  the per-aten-op timing tables.

Examples
--------
>>> from opsched.importers.trace.events import parse_trace
>>> doc = {"traceEvents": [
...     {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 0,
...      "dur": 20},
...     {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 1,
...      "dur": 15},
...     {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
...      "ts": 5, "dur": 3, "args": {"correlation": 9}},
...     {"ph": "X", "cat": "kernel", "name": "sgemm", "pid": 0, "tid": 7, "ts": 30, "dur": 8,
...      "args": {"correlation": 9, "stream": 7}}]}
>>> t = parse_trace(doc)
>>> [la] = link_launches(t)
>>> [t.cpu_ops[i].name for i in stack_of(t, la.leaf)]
['aten::linear', 'aten::addmm']
>>> t.cpu_ops[graph_frame(t, la.leaf)].name, t.cpu_ops[row_frame(t, la.leaf)].name
('aten::linear', 'aten::addmm')
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any

from opsched.importers.trace.events import CpuOp, GpuActivity, RuntimeCall, Step, TraceData

__all__ = [
    "MAX_LAUNCHES",
    "Launch",
    "graph_frame",
    "is_wrapper",
    "kept_launches",
    "launch_name",
    "link_launches",
    "row_frame",
    "stack_of",
    "step_of",
    "top_frame",
]

_WRAPPER_PREFIXES = (
    "ProfilerStep#",
    "## ",
    "autograd::engine::evaluate_function",
    "torch::autograd::",
    "Optimizer.",
    "nn.Module:",
    "DistributedDataParallel.",
    "enumerate(DataLoader)",
    "<built-in",
)
_AUTOGRAD_NODE = re.compile(r"^[A-Z][A-Za-z0-9_]*Backward\d*$")


@dataclass(slots=True)
class Launch:
    """One GPU activity with the runtime call that enqueued it and the innermost CPU op."""

    gpu: GpuActivity
    call: RuntimeCall | None
    leaf: int  #: index into ``TraceData.cpu_ops`` of the innermost enclosing op, -1 if none

    @property
    def launch_ts(self) -> float:
        """CPU time of the launch (the GPU start when the runtime call is missing)."""
        return self.call.ts if self.call is not None else self.gpu.ts


def is_wrapper(op: CpuOp) -> bool:
    """True for frames that group ops rather than dispatch one (see the module docstring).

    >>> from opsched.importers.trace.events import CpuOp
    >>> is_wrapper(CpuOp(0, "ConvolutionBackward0", "cpu_op", "1", "1", 0, 1))
    True
    >>> is_wrapper(CpuOp(0, "aten::mm", "cpu_op", "1", "1", 0, 1))
    False
    """
    n = op.name
    return (
        op.is_annotation
        or n.startswith(_WRAPPER_PREFIXES)
        or "#" in n
        or _AUTOGRAD_NODE.match(n) is not None
    )


def link_launches(t: TraceData) -> list[Launch]:
    """Every GPU activity with its runtime call and innermost enclosing CPU op."""
    calls = {c.correlation: c for c in t.runtime if c.correlation is not None}
    inner = _innermost(t, [c for c in t.runtime if c.correlation is not None])
    out = []
    for g in sorted(t.gpu, key=lambda a: (a.ts, a.stream)):
        c = calls.get(g.correlation)
        out.append(Launch(g, c, inner.get(id(c), -1) if c is not None else -1))
    return out


def _innermost(t: TraceData, calls: list[RuntimeCall]) -> dict[int, int]:
    """id(call) -> index of the innermost CPU op on its thread containing the call's start."""
    ops_by_thread: dict[tuple[str, str], list[CpuOp]] = {}
    for op in t.cpu_ops:
        ops_by_thread.setdefault((op.pid, op.tid), []).append(op)
    calls_by_thread: dict[tuple[str, str], list[RuntimeCall]] = {}
    for c in calls:
        calls_by_thread.setdefault((c.pid, c.tid), []).append(c)
    out: dict[int, int] = {}
    for key, cs in calls_by_thread.items():
        ops = sorted(ops_by_thread.get(key, []), key=lambda o: (o.ts, -o.dur, o.index))
        starts = [o.ts for o in ops]
        for c in cs:
            # the innermost container is the last-starting op at or before c.ts that still
            # covers it; walk up from the last op started at or before c.ts via parents
            i = bisect.bisect_right(starts, c.ts) - 1
            idx = ops[i].index if i >= 0 else -1
            while idx >= 0 and t.cpu_ops[idx].end < c.ts:
                idx = t.cpu_ops[idx].parent
            out[id(c)] = idx
    return out


def stack_of(t: TraceData, leaf: int) -> list[int]:
    """Op indices from the outermost frame to ``leaf`` (empty for -1)."""
    chain = []
    while leaf >= 0:
        chain.append(leaf)
        leaf = t.cpu_ops[leaf].parent
    return chain[::-1]


def graph_frame(t: TraceData, leaf: int) -> int:
    """The frame that becomes a graph op: the outermost non-wrapper (else the innermost)."""
    stack = stack_of(t, leaf)
    for i in stack:
        if not is_wrapper(t.cpu_ops[i]):
            return i
    return stack[-1] if stack else -1


def row_frame(t: TraceData, leaf: int) -> int:
    """The innermost dispatched CPU op (annotations excluded), -1 if there is none."""
    for i in reversed(stack_of(t, leaf)):
        if not t.cpu_ops[i].is_annotation:
            return i
    return -1


def top_frame(t: TraceData, leaf: int) -> int:
    """The outermost dispatched CPU op (annotations excluded), -1 if there is none."""
    for i in stack_of(t, leaf):
        if not t.cpu_ops[i].is_annotation:
            return i
    return -1


def step_of(steps: list[Step], ts: float) -> int | None:
    """Number of the profiler step whose window contains CPU time ``ts`` (None if none).

    >>> step_of([Step(5, 0, 10), Step(6, 10, 10)], 12.5)
    6
    """
    starts = [s.ts for s in steps]
    i = bisect.bisect_right(starts, ts) - 1
    if i >= 0 and ts < steps[i].end:
        return steps[i].number
    return None


def launch_name(name: str) -> str:
    """A kernel's name up to the end of its template arguments (what a launch rule reads),
    the parameter list dropped.

    >>> launch_name("void k<4, f<float>, std::array<char*, 3ul> >(int, f<float>)")
    'void k<4, f<float>, std::array<char*, 3ul> >'
    >>> launch_name("volta_sgemm_128x32_nt")
    'volta_sgemm_128x32_nt'
    """
    depth = 0
    for i, c in enumerate(name):
        if c == "<":
            depth += 1
        elif c == ">" and depth > 0 and name[i - 1] != "-":
            depth -= 1
            if depth == 0:
                return name[: i + 1]
    return name


#: An op whose shapes give no kind keeps the launches (name, grid, block) of at most this
#: many kernels: the graph's ``attrs["launches"]``, the timing rows' ``launches`` column.
MAX_LAUNCHES = 64


def kept_launches(acts: list[GpuActivity]) -> list[list[Any]] | None:
    """What an op without a kind keeps of its GPU activities for pricing
    (:mod:`opsched.cost.launch`): each kernel's ``[name, grid, block]``, the name cut by
    :func:`launch_name`; None where it copies or sets memory, or launched none or more than
    :data:`MAX_LAUNCHES` kernels."""
    kernels = [g for g in acts if g.kind == "kernel"]
    if not 0 < len(kernels) == len(acts) <= MAX_LAUNCHES:
        return None
    return [[launch_name(g.name), g.grid, g.block] for g in kernels]

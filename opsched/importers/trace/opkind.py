"""Op kinds of trace frames, with the context a single op's shapes lack.

:func:`~opsched.importers.trace.shapes.infer_kind` works on one op's recorded inputs.
:class:`FrameKinds` adds what only the surrounding trace knows: a convolution's output shape
(the first input of a later op on the same thread that starts with ``[N, K]``), which halves
of a convolution backward ran (the child ops that launched kernels, or the recorded
``output_mask``), and, for a ``cudnn_convolution_backward_input`` / ``_weight`` leaf, the
shapes of its parent, which holds all three tensors.

Examples
--------
>>> from opsched.importers.trace.events import parse_trace
>>> ev = lambda name, ts, dims: {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1,
...     "tid": 1, "ts": ts, "dur": 1, "args": {"Input Dims": dims, "Input type": ["float"] * 2}}
>>> t = parse_trace({"traceEvents": [ev("aten::conv2d", 0, [[8, 3, 32, 32], [16, 3, 3, 3]]),
...                                  ev("aten::relu", 2, [[8, 16, 16, 16]])]})
>>> kind, attrs = FrameKinds(t).kind(0)
>>> kind, attrs["stride_h"], attrs["pad_h"]
('conv2d', 2, 1)
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

from opsched.importers.trace.events import CpuOp, TraceData
from opsched.importers.trace.shapes import (
    _CONV,
    _CONV_BWD,
    _concrete,
    _short,
    dtype_of,
    infer_kind,
    tensor_dims,
)

__all__ = ["FrameKinds", "kernel_dtype"]

#: Ops that convert, copy or fill tensors: under autocast they cast an op's inputs to the
#: dtype its math runs in, so their own inputs say nothing of that dtype.
_CASTS = frozenset(
    {"to", "_to_copy", "copy_", "_copy_from", "_copy_from_and_resize", "clone", "contiguous",
     "fill_", "zero_", "zeros", "zeros_like", "empty", "empty_like", "ones", "full"}
)  # fmt: skip


def kernel_dtype(trace: TraceData, launches: Iterable[Any]) -> tuple[str, str] | None:
    """``(dtype, op name)`` of the innermost op that ran most of ``launches``' kernel time,
    casts and fills left out (None if no such op ran a kernel).

    Under autocast the op a graph takes its kind from (``aten::linear``) is recorded with its
    float32 inputs, and the cast copies and the inner op it dispatches to
    (``aten::addmm`` on bfloat16 tensors) run the kernels: the inner op's inputs give the
    dtype the kernels ran in. Launches are :class:`~opsched.importers.trace.link.Launch`.
    """
    busy: dict[int, float] = {}
    for la in launches:
        casts = la.leaf < 0 or _short(trace.cpu_ops[la.leaf].name) in _CASTS
        if la.gpu.kind == "kernel" and not casts:
            busy[la.leaf] = busy.get(la.leaf, 0.0) + la.gpu.dur
    if not busy:
        return None
    leaf = trace.cpu_ops[max(busy, key=lambda i: (busy[i], -i))]
    if not tensor_dims(leaf.dims):  # no shapes recorded: no dtype either
        return None
    return dtype_of(leaf.dims, leaf.types), leaf.name


_HINT_WINDOW = 64  # later ops searched for a convolution's output shape
_PART_OF = {
    "cudnn_convolution_backward_input": "data",
    "cudnn_convolution_backward_weight": "filter",
    "convolution_backward_input": "data",
    "convolution_backward_weight": "filter",
}


class FrameKinds:
    """Kind inference for the CPU ops of one trace (results cached per op and parts)."""

    def __init__(self, trace: TraceData) -> None:
        self.t = trace
        self._threads: dict[tuple[str, str], list[CpuOp]] = {}
        for op in trace.cpu_ops:
            self._threads.setdefault((op.pid, op.tid), []).append(op)
        for lst in self._threads.values():
            lst.sort(key=lambda o: (o.ts, -o.dur, o.index))
        self._starts = {k: [o.ts for o in v] for k, v in self._threads.items()}
        self._cache: dict[tuple[int, frozenset[str] | None], tuple[str | None, dict]] = {}

    def out_hint(self, op: CpuOp, n: int, k: int) -> list[int] | None:
        """First input shape ``[n, k, P, Q]`` of a later op on ``op``'s thread, if any."""
        key = (op.pid, op.tid)
        lst, starts = self._threads[key], self._starts[key]
        i = bisect.bisect_left(starts, op.end)
        for later in lst[i : i + _HINT_WINDOW]:
            ts = tensor_dims(later.dims)
            if ts and len(ts[0]) == 4 and ts[0][0] == n and ts[0][1] == k:
                return ts[0]
        return None

    def kind(self, index: int, leaf_names: Iterable[str] = ()) -> tuple[str | None, dict[str, Any]]:
        """Kind and attrs of CPU op ``index``; ``leaf_names``: ops below it that ran kernels."""
        op = self.t.cpu_ops[index]
        n = _short(op.name)
        parts: frozenset[str] | None = None
        if n in _CONV_BWD:
            parts = frozenset(_PART_OF[x] for x in map(_short, leaf_names) if x in _PART_OF)
            if not parts:
                mask = _concrete(op.concrete, 10)
                if isinstance(mask, list) and len(mask) >= 2:
                    parts = frozenset(
                        p for p, m in zip(("data", "filter"), mask, strict=False) if m
                    )
            parts = parts or None
        ck = (index, parts)
        if ck not in self._cache:
            self._cache[ck] = self._infer(op, n, parts)
        kind, attrs = self._cache[ck]
        return kind, dict(attrs)

    def _infer(
        self, op: CpuOp, n: str, parts: frozenset[str] | None
    ) -> tuple[str | None, dict[str, Any]]:
        if n in _PART_OF and op.parent >= 0:  # a backward half: shapes from its parent
            parent = self.t.cpu_ops[op.parent]
            if _short(parent.name) in _CONV_BWD:
                return infer_kind(
                    parent.name, parent.dims, parent.types, parent.concrete, parts={_PART_OF[n]}
                )
        hint = None
        if n in _CONV:
            ts = tensor_dims(op.dims)
            if len(ts) >= 2 and len(ts[0]) == 4 and len(ts[1]) == 4:
                hint = self.out_hint(op, ts[0][0], ts[1][0])
        return infer_kind(
            op.name,
            op.dims,
            op.types,
            op.concrete,
            out_hint=hint,
            parts=set(parts) if parts else None,
        )

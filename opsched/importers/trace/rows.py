"""Per-op kernel timing rows in the schema of the shared Kineto / HTA timing tables.

One row per instance of an innermost CPU op that launched kernels (the op that called
``cudaLaunchKernel``; memcpys and memsets are not counted, kernels launched from a bare user
annotation have no op and no row), over the whole trace. Columns, as in
``kineto_resnet50_v100_ops.csv.gz``:

``gpu`` device name; ``op`` the innermost op; ``top_op`` the outermost CPU op above it;
``shape`` a readable shape; ``input_dims`` / ``input_types`` as recorded (JSON);
``n_kernels``; ``gpu_time_us`` the sum of its kernels' durations; ``flops`` and
``bytes_min`` from :mod:`opsched.ir.kinds` when the shapes give a kind (else empty);
``achieved_tflops`` / ``achieved_gbps`` from those; ``kernels`` the kernel names (first 90
characters each, `` | `` separated); ``source`` the trace. One column more than those
tables: ``launches``, for an op whose shapes give no kind and that only launched kernels,
each kernel's ``[name, grid, block]`` as JSON (at most
:data:`~opsched.importers.trace.link.MAX_LAUNCHES`; the name up to its template
arguments), which :mod:`opsched.cost.launch` reads a size from (PyTorch's foreach and
fused optimizer ops record no shapes); empty otherwise.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from opsched.importers.trace.events import TraceData
from opsched.importers.trace.link import Launch, kept_launches, row_frame, top_frame
from opsched.importers.trace.opkind import FrameKinds
from opsched.importers.trace.shapes import shape_text
from opsched.ir import kinds as K

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ROW_COLUMNS", "timing_rows"]

ROW_COLUMNS = (
    "gpu",
    "op",
    "top_op",
    "shape",
    "input_dims",
    "input_types",
    "n_kernels",
    "gpu_time_us",
    "flops",
    "bytes_min",
    "achieved_tflops",
    "achieved_gbps",
    "kernels",
    "source",
    "launches",
)


def timing_rows(t: TraceData, launches: list[Launch], source: str | None = None) -> pd.DataFrame:
    """One row per kernel-launching op instance, in the order the ops ran.

    Examples
    --------
    >>> from opsched.importers.trace.events import parse_trace
    >>> from opsched.importers.trace.link import link_launches
    >>> doc = {"deviceProperties": [{"id": 0, "name": "GPU-X"}], "traceEvents": [
    ...   {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0,
    ...    "dur": 9, "args": {"Input Dims": [[64, 32], [32, 16]], "Input type": ["float"] * 2}},
    ...   {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
    ...    "ts": 2, "dur": 3, "args": {"correlation": 4}},
    ...   {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 2,
    ...    "args": {"correlation": 4, "stream": 7, "device": 0}}]}
    >>> t = parse_trace(doc, "demo.json")
    >>> r = timing_rows(t, link_launches(t)).iloc[0]
    >>> r["gpu"], r["shape"], int(r["flops"]), float(r["gpu_time_us"])
    ('GPU-X', 'M=64 N=16 K=32', 65536, 2.0)
    """
    import pandas as pd

    every: dict[int, list[Launch]] = {}  # per row frame, its copies and memsets too
    for la in launches:
        f = row_frame(t, la.leaf)
        if f >= 0:
            every.setdefault(f, []).append(la)
    groups = {f: ls for f, las in every.items()
              if (ls := [la for la in las if la.gpu.kind == "kernel"])}  # fmt: skip
    fk = FrameKinds(t)
    rows: list[dict[str, Any]] = []
    for f in sorted(groups, key=lambda i: (t.cpu_ops[i].ts, i)):
        op, ls = t.cpu_ops[f], groups[f]
        kind, attrs = fk.kind(f)
        gpu_time = float(sum(la.gpu.dur for la in ls))
        fl = float(K.flops(kind, attrs)) if kind else math.nan
        by = float(K.bytes_min(kind, attrs)) if kind else math.nan
        top = top_frame(t, f)
        kept = kept_launches([la.gpu for la in every[f]]) if not kind else None
        rows.append(
            {
                "gpu": t.device_name(ls[0].gpu.device),
                "op": op.name,
                "top_op": t.cpu_ops[top].name if top >= 0 else op.name,
                "shape": shape_text(op.name, kind, attrs, op.dims),
                "input_dims": json.dumps(op.dims) if op.dims is not None else "",
                "input_types": json.dumps(op.types) if op.types is not None else "",
                "n_kernels": len(ls),
                "gpu_time_us": gpu_time,
                "flops": fl,
                "bytes_min": by,
                "achieved_tflops": round(fl / (gpu_time * 1e6), 3) if gpu_time > 0 else math.nan,
                "achieved_gbps": round(by / (gpu_time * 1e3), 1) if gpu_time > 0 else math.nan,
                "kernels": " | ".join(la.gpu.name[:90] for la in ls),
                "source": source or t.source,
                "launches": json.dumps(kept) if kept else "",
            }
        )
    return pd.DataFrame(rows, columns=list(ROW_COLUMNS))

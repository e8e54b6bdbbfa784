"""Timing a grid of single ops with PyTorch, for calibrating the cost model on a new device.

:func:`collect` runs each op of a shape grid (linear, bmm, conv2d, binary / scalar / unary
elementwise, layernorm, softmax) and measures one call at a time:

- ``warmup`` untimed calls first (cuDNN autotuning and allocator warm-up happen there);
- before every timed call a large buffer is written (``flush_bytes``, default 256 MiB on
  CUDA, 64 MiB on CPU) so that no operand is still in the L2 / last-level cache;
- CUDA: CUDA events recorded around the call on the current stream, then a synchronize
  (so the time includes PyTorch dispatch and launch, like NeuSight's); CPU:
  ``time.perf_counter`` around the call;
- the median of ``repeats`` timed calls (fewer when a shape is slow: at most
  ``seconds_per_shape`` of timed calls, at least 3).

The rows follow the column schema and conventions of ``neusight_ops.csv.gz``: op names
``linear bmm conv add mul div pow addu mulu divu powu relu gelu tanh ln softmax``; linear
``x=[B,M,N] W=[K,N]`` (``N`` in-features, ``K`` out-features, with bias), bmm
``[B,M,N]@[B,N,K]``; elementwise, ``ln`` and ``softmax`` on ``B x H_dim``; ``flops`` and
``bytes_min`` counted as there (e.g. one FLOP per element for a binary op, layernorm 8 per
element); ``gpu`` is the device name. The shapes and counts are in :mod:`opsched.cost.shapes`.

On CUDA two more columns come from :data:`KERNEL_CALLS` calls run under the PyTorch profiler
(each after a cache flush, like the timed ones): ``main_kernel``, the longest kernel, which
tells the math mode a float32 GEMM or convolution ran in (:mod:`opsched.cost.mathmode`), and
``kernel_time_us``, the mean summed GPU time of the call's own kernels (the flush's fill kernel
left out): the op's time without PyTorch's dispatch, which a busy host makes noisy in the
per-call time (on the H200 of ``opsched_h200.csv.gz`` a small call took 19-22 us in some
stretches and 35-43 us in others). :mod:`opsched.cost.data` reads that column as a second,
kernel-timed row of the same shape. The columns are NeuSight's followed by ``kernel_time_us``.

Examples
--------
>>> COLUMNS[-1], COLUMNS.index("measured_time_us")
('kernel_time_us', 17)
"""

from __future__ import annotations

import math
import platform
import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from opsched.cost.shapes import (
    BINARY_OPS,
    DTYPE_BYTES,
    OPS,
    SCALAR_OPS,
    default_grid,
    op_counts,
    out_hw,
    shape_text,
)
from opsched.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "COLUMNS",
    "KERNEL_CALLS",
    "OPS",
    "collect",
    "default_grid",
    "op_counts",
    "require_torch",
]

COLUMNS = (
    "gpu",
    "op",
    "dtype",
    "shape",
    "B",
    "M",
    "N",
    "K",
    "Cin",
    "Cout",
    "kernel",
    "H",
    "W",
    "stride",
    "pad",
    "out_hw",
    "H_dim",
    "measured_time_us",
    "flops",
    "bytes_min",
    "achieved_tflops",
    "achieved_gbps",
    "main_kernel",
    "grid",
    "block",
    "split",
    "source_path",
    "kernel_time_us",
)
#: Calls profiled per shape on CUDA for ``main_kernel`` and ``kernel_time_us``.
KERNEL_CALLS = 5

TORCH_HINT = "PyTorch is needed for 'cost collect': pip install torch==2.13.0"


def require_torch() -> Any:
    """Import torch, or raise :class:`InputError` with the one-line install hint."""
    try:
        import torch
    except ImportError:
        raise InputError(TORCH_HINT) from None
    return torch


def _make_call(torch: Any, spec: dict[str, Any], dev: str, dt: Any) -> Callable[[], Any]:
    """Build the operands once and return a closure running the op."""
    op = spec["op"]
    g = torch.Generator(device="cpu").manual_seed(0)

    def rnd(*shape: int) -> Any:
        return torch.rand(*shape, generator=g).to(device=dev, dtype=dt) + 0.5

    F = torch.nn.functional
    if op == "linear":
        x, w, b = rnd(spec["B"], spec["M"], spec["N"]), rnd(spec["K"], spec["N"]), rnd(spec["K"])
        return lambda: F.linear(x, w, b)
    if op == "bmm":
        a, bb = rnd(spec["B"], spec["M"], spec["N"]), rnd(spec["B"], spec["N"], spec["K"])
        return lambda: torch.bmm(a, bb)
    if op == "conv":
        x = rnd(spec["B"], spec["Cin"], spec["H"], spec["W"])
        w = rnd(spec["Cout"], spec["Cin"], spec["kernel"], spec["kernel"])
        return lambda: F.conv2d(x, w, None, spec["stride"], spec["pad"])
    x = rnd(spec["B"], spec["H_dim"])
    if op in BINARY_OPS:
        y = rnd(spec["B"], spec["H_dim"])
        fn = {"add": torch.add, "mul": torch.mul, "div": torch.div, "pow": torch.pow}[op]
        return lambda: fn(x, y)
    if op in SCALAR_OPS:
        fn = {"addu": torch.add, "mulu": torch.mul, "divu": torch.div, "powu": torch.pow}[op]
        return lambda: fn(x, 1.5)
    if op == "ln":
        w, b = rnd(spec["H_dim"]), rnd(spec["H_dim"])
        return lambda: F.layer_norm(x, (spec["H_dim"],), w, b)
    if op == "softmax":
        return lambda: torch.softmax(x, dim=-1)
    return {
        "relu": lambda: torch.relu(x),
        "gelu": lambda: F.gelu(x),
        "tanh": lambda: torch.tanh(x),
    }[op]


def _device_name(torch: Any, device: str) -> str:
    if device == "cuda":
        return str(torch.cuda.get_device_name())
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return "CPU " + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return f"CPU {platform.processor() or platform.machine()}"


def _kernels(torch: Any, call: Callable[[], Any], flush: Any = None) -> tuple[str, float]:
    """Longest kernel name and mean kernel time (us) per call over :data:`KERNEL_CALLS` calls,
    each after a cache flush (none with ``flush=None``)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(KERNEL_CALLS):
            if flush is not None:
                flush.fill_(i + 0.5)  # a FillFunctor kernel: left out below
            call()
        torch.cuda.synchronize()
    best, best_t, total = "", -1.0, 0.0
    for e in prof.events():
        if not str(getattr(e, "device_type", "")).endswith("CUDA") or "FillFunctor" in e.name:
            continue
        # device_time (torch >= 2.4); reading cuda_time there only raises a deprecation warning
        t = float(e.device_time if hasattr(e, "device_time") else getattr(e, "cuda_time", 0.0))
        total += t
        if t > best_t:
            best, best_t = e.name, t
    return best, total / KERNEL_CALLS


def _time_one(
    torch: Any,
    call: Callable[[], Any],
    device: str,
    flush: Any,
    warmup: int,
    repeats: int,
    seconds: float,
) -> float:
    """Median time of one call in microseconds."""
    cuda = device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for _ in range(warmup):
        call()
    sync()
    times: list[float] = []
    spent = 0.0
    while len(times) < repeats and (len(times) < 3 or spent < seconds):
        flush.fill_(len(times) + 1.0)  # write the whole buffer: evicts the operands
        sync()
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            end.synchronize()
            us = start.elapsed_time(end) * 1e3
        else:
            t0 = time.perf_counter()
            call()
            us = (time.perf_counter() - t0) * 1e6
        times.append(us)
        spent += us * 1e-6
    return float(statistics.median(times))


def collect(
    device: str = "cpu",
    *,
    quick: bool = False,
    dtype: str = "float32",
    specs: list[dict[str, Any]] | None = None,
    warmup: int = 3,
    repeats: int = 25,
    seconds_per_shape: float = 2.0,
    flush_bytes: int | None = None,
    threads: int | None = None,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
) -> pd.DataFrame:
    """Time every op of ``specs`` (default :func:`default_grid`) on ``device``.

    ``threads`` sets torch's CPU intra-op threads for the run (restored afterwards); one
    thread gives steadier CPU timings on a busy machine, where a thread pool waits for
    descheduled workers.

    Raises
    ------
    InputError
        torch missing (with the install hint), CUDA requested but unavailable, an unknown
        dtype or op, a half-precision dtype on CPU.
    """
    import pandas as pd

    torch = require_torch()
    if device not in ("cpu", "cuda"):
        raise InputError(f"--device must be cpu or cuda, got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("--device cuda: no CUDA device is available to torch")
    if dtype not in DTYPE_BYTES:
        raise InputError(f"--dtype must be one of {', '.join(DTYPE_BYTES)}, got {dtype!r}")
    if device == "cpu" and dtype != "float32":
        raise InputError(f"--dtype {dtype} is only timed on cuda; use float32 on cpu")
    specs = default_grid(quick) if specs is None else specs
    for s in specs:
        if s.get("op") not in OPS:
            raise InputError(f"unknown op {s.get('op')!r} in the grid; known: {', '.join(OPS)}")
    nbytes = flush_bytes if flush_bytes is not None else (256 if device == "cuda" else 64) << 20
    flush = torch.empty(max(1, nbytes // 4), dtype=torch.float32, device=device)
    dt, elem = getattr(torch, dtype), DTYPE_BYTES[dtype]
    name = _device_name(torch, device)
    method = "CUDA events" if device == "cuda" else "perf_counter"
    source = f"opsched cost collect: torch {torch.__version__}, {method}, median"
    rows = []
    old_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        rows = _run(
            torch,
            specs,
            device,
            dt,
            elem,
            flush,
            warmup,
            repeats,
            seconds_per_shape,
            name,
            source,
            progress,
        )
    finally:
        torch.set_num_threads(old_threads)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _run(
    torch: Any,
    specs: list[dict[str, Any]],
    device: str,
    dt: Any,
    elem: int,
    flush: Any,
    warmup: int,
    repeats: int,
    seconds: float,
    name: str,
    source: str,
    progress: Callable[[int, int, dict[str, Any]], None] | None,
) -> list[dict[str, Any]]:
    rows = []
    with torch.inference_mode():
        for i, spec in enumerate(specs):
            if progress is not None:
                progress(i, len(specs), spec)
            call = _make_call(torch, spec, device, dt)
            us = _time_one(torch, call, device, flush, warmup, repeats, seconds)
            fl, by = op_counts(spec, elem)
            kernel, kernel_us = _kernels(torch, call, flush) if device == "cuda" else ("", math.nan)
            row: dict[str, Any] = dict.fromkeys(COLUMNS, math.nan)
            row.update({k: v for k, v in spec.items() if k in COLUMNS})
            if spec["op"] == "conv":
                row["out_hw"] = out_hw(spec)
            row.update(
                gpu=name,
                dtype=str(dt).removeprefix("torch."),
                shape=shape_text(spec),
                measured_time_us=round(us, 4),
                flops=fl,
                bytes_min=by,
                achieved_tflops=round(fl / (us * 1e6), 4),
                achieved_gbps=round(by / (us * 1e3), 2),
                main_kernel=kernel,
                split="collect",
                source_path=source,
                kernel_time_us=round(kernel_us, 4),
            )
            rows.append(row)
            del call
    return rows

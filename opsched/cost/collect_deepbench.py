"""Timing DeepBench's GEMM and convolution shapes with PyTorch, in DeepBench's column schema.

:func:`collect` (``collect.py``) times NeuSight-style rows: one call, dispatch included,
cache flushed. DeepBench's tables hold what NeuSight's cannot: the two backward directions
of a convolution, and GEMMs in the shapes of real training jobs, timed per call in a loop
of back-to-back calls on warm caches. :func:`collect_deepbench` re-times the shapes of such
a table (``deepbench_conv.csv`` or ``deepbench_gemm.csv``) on this machine and writes rows in
the same schema, so ``opsched cost fit --add`` learns a new card's convolution backward
curves too, and ``opsched cost evaluate`` compares the card with the ones DeepBench timed.

How each time is taken (CUDA):

- the call is run ``warmup`` times first (with ``torch.backends.cudnn.benchmark`` on, cuDNN
  picks its fastest algorithm there, as DeepBench's benchmark did);
- ``n`` calls are captured in one CUDA graph (``n`` chosen so that one replay lasts about
  ``replay_us``) and the graph is replayed ``replays`` times between CUDA events; the time
  is the median replay over ``n``. A graph replays kernels back to back without PyTorch's
  dispatch, which is what DeepBench's loop of library calls measured. Where capture fails,
  the ``n`` calls are timed eagerly between events instead;
- the longest kernel of the profiled calls is written beside the time (``fwd_kernel``,
  ``bwd_data_kernel``, ``bwd_filter_kernel``; ``kernel`` for a GEMM): its name tells the
  math mode a float32 op ran in (:func:`opsched.cost.mathmode.kernel_math_mode`).

On CPU the same loop is timed with ``time.perf_counter`` ``replays`` times and the median
taken (for tests; no graph, no kernels).

Convolutions: ``F.conv2d`` forward, and ``torch.ops.aten.convolution_backward`` with only the
input gradient (backward data) or only the weight gradient (backward filter) asked for,
NCHW tensors. GEMMs: ``torch.mm`` of an ``M x K`` by a ``K x N`` operand, each stored
transposed where the row's ``transA`` / ``transB`` is ``T``.

``dtype``: ``float32`` (TF32 off, FP32 arithmetic), ``tf32`` (float32 tensors, TF32 allowed
for both cuBLAS and cuDNN), ``float16``, ``bfloat16``; written as DeepBench spells them
(``fp32``, ``tf32``, ``fp16``, ``bf16``).

Examples
--------
>>> import pandas as pd
>>> t = pd.DataFrame({"M": [64, 64], "N": [32, 32], "K": [16, 16], "transA": ["N", "N"],
...                   "transB": ["T", "T"], "time_us": [1.0, 2.0]})
>>> deepbench_shapes(t, "deepbench_gemm")
[{'M': 64, 'N': 32, 'K': 16, 'transA': 'N', 'transB': 'T'}]
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opsched.cost.collect import _kernels, require_torch
from opsched.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CONV_FIELDS", "DTYPES", "GEMM_FIELDS", "collect_deepbench", "deepbench_shapes"]

CONV_FIELDS = ("N", "C", "H", "W", "K", "R", "S", "pad_h", "pad_w", "stride_h", "stride_w")
GEMM_FIELDS = ("M", "N", "K", "transA", "transB")
#: dtype option -> (torch dtype name, DeepBench's spelling, TF32 allowed).
DTYPES = {
    "float32": ("float32", "fp32", False),
    "tf32": ("float32", "tf32", True),
    "float16": ("float16", "fp16", False),
    "bfloat16": ("bfloat16", "bf16", False),
}
#: The conv timings of a row: target column, kernel column, output mask of the backward.
_CONV_TARGETS = (
    ("fwd_time_us", "fwd_kernel", None),
    ("bwd_data_time_us", "bwd_data_kernel", (True, False, False)),
    ("bwd_filter_time_us", "bwd_filter_kernel", (False, True, False)),
)


def deepbench_shapes(table: Any, schema: str) -> list[dict[str, Any]]:
    """The distinct shapes of a DeepBench-schema table, in first-seen order."""
    fields = CONV_FIELDS if schema == "deepbench_conv" else GEMM_FIELDS
    missing = [f for f in fields if f not in table.columns]
    if missing:
        raise InputError(f"{schema} table lacks column(s) {', '.join(missing)}")
    out, seen = [], set()
    for r in table[list(fields)].itertuples(index=False):
        try:
            key = tuple(
                str(v) if f.startswith("trans") else int(v) for f, v in zip(fields, r, strict=True)
            )
        except (TypeError, ValueError):
            continue
        if key not in seen:
            seen.add(key)
            out.append(dict(zip(fields, key, strict=True)))
    return out


@contextmanager
def _math_flags(torch: Any, tf32: bool) -> Iterator[None]:
    """cuDNN benchmark mode on, TF32 on or off for cuBLAS and cuDNN; restored afterwards."""
    be = torch.backends
    old = (be.cudnn.benchmark, be.cudnn.allow_tf32, be.cuda.matmul.allow_tf32)
    be.cudnn.benchmark, be.cudnn.allow_tf32, be.cuda.matmul.allow_tf32 = True, tf32, tf32
    try:
        yield
    finally:
        be.cudnn.benchmark, be.cudnn.allow_tf32, be.cuda.matmul.allow_tf32 = old


def _conv_calls(torch: Any, s: dict[str, Any], dev: str, dt: Any) -> list[Callable[[], Any]]:
    g = torch.Generator(device="cpu").manual_seed(0)

    def rnd(*shape: int) -> Any:
        return (torch.rand(*shape, generator=g) - 0.5).to(device=dev, dtype=dt)

    x, w = rnd(s["N"], s["C"], s["H"], s["W"]), rnd(s["K"], s["C"], s["R"], s["S"])
    stride, pad = (s["stride_h"], s["stride_w"]), (s["pad_h"], s["pad_w"])
    y = torch.nn.functional.conv2d(x, w, None, stride, pad)
    gy = rnd(*y.shape)
    del y
    back = torch.ops.aten.convolution_backward

    def fwd() -> Any:
        return torch.nn.functional.conv2d(x, w, None, stride, pad)

    def bwd(mask: tuple[bool, bool, bool]) -> Callable[[], Any]:
        return lambda: back(gy, x, w, None, stride, pad, (1, 1), False, (0, 0), 1, list(mask))

    return [fwd if m is None else bwd(m) for _, _, m in _CONV_TARGETS]


def _gemm_call(torch: Any, s: dict[str, Any], dev: str, dt: Any) -> Callable[[], Any]:
    g = torch.Generator(device="cpu").manual_seed(0)

    def rnd(rows: int, cols: int, trans: bool) -> Any:
        shape = (cols, rows) if trans else (rows, cols)
        t = (torch.rand(*shape, generator=g) - 0.5).to(device=dev, dtype=dt)
        return t.t() if trans else t

    a = rnd(s["M"], s["K"], s["transA"] == "T")
    b = rnd(s["K"], s["N"], s["transB"] == "T")
    return lambda: torch.mm(a, b)


def _loop_us(torch: Any, call: Callable[[], Any], cuda: bool, n: int) -> float:
    """Time of ``n`` back-to-back eager calls (us)."""
    if not cuda:
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        return (time.perf_counter() - t0) * 1e6
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        call()
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end)) * 1e3


def _graph_us(torch: Any, call: Callable[[], Any], n: int, replays: int) -> float | None:
    """Median time (us) of one call from replays of a CUDA graph of ``n`` calls; None if the
    call cannot be captured."""
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            call()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(n):
                call()
        graph.replay()
        torch.cuda.synchronize()
    except Exception:  # capture unsupported for this call: the caller times it eagerly
        torch.cuda.synchronize()
        return None
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(float(start.elapsed_time(end)) * 1e3 / n)
    del graph
    return float(statistics.median(times))


def _time(
    torch: Any, call: Callable[[], Any], cuda: bool, warmup: int, replay_us: float, replays: int
) -> tuple[float, str]:
    """(time of one call in us, longest kernel's name)."""
    for _ in range(warmup):
        call()
    if cuda:
        torch.cuda.synchronize()
    est = _loop_us(torch, call, cuda, 3) / 3
    n = max(1, min(200, round(replay_us / max(est, 1e-3))))
    if not cuda:  # the median of as many loops as a CUDA graph gets replays (the rows say
        # "median"; a single loop's mean had been taken, and --repeats had changed nothing)
        return statistics.median(_loop_us(torch, call, cuda, n) / n for _ in range(replays)), ""
    us = _graph_us(torch, call, n, replays)
    if us is None:
        us = statistics.median(_loop_us(torch, call, cuda, n) / n for _ in range(replays))
    return us, _kernels(torch, call)[0]


def collect_deepbench(
    table: Any,
    schema: str,
    device: str = "cpu",
    dtype: str = "float32",
    *,
    warmup: int = 3,
    replays: int = 5,
    replay_us: float = 2000.0,
    budget_s: float | None = None,
    threads: int | None = None,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
) -> pd.DataFrame:
    """Time the distinct shapes of a DeepBench-schema ``table`` on ``device``.

    Each time is the median of ``replays`` replays; ``threads`` sets torch's CPU intra-op
    threads for the run (restored afterwards), as in :func:`opsched.cost.collect.collect`.

    ``schema`` is ``deepbench_conv`` or ``deepbench_gemm``. Shapes are timed in the table's
    order; with ``budget_s`` no new shape is started after that many seconds (the rows timed
    so far are returned). The rows carry the table's shape columns, ``gpu`` (the device's
    name), ``suite = "opsched collect"``, ``dtype`` (DeepBench's spelling), the time
    column(s), the kernel column(s), FLOPs and the source in ``source_file``.

    Raises
    ------
    InputError
        torch missing, CUDA asked for but absent, an unknown dtype, a half dtype on CPU, a
        table without the schema's shape columns.
    """

    from opsched.cost.collect import _device_name

    if schema not in ("deepbench_conv", "deepbench_gemm"):
        raise InputError(f"not a DeepBench table: {schema}")
    if dtype not in DTYPES:
        raise InputError(f"--dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    torch = require_torch()
    if device not in ("cpu", "cuda"):
        raise InputError(f"--device must be cpu or cuda, got {device!r}")
    cuda = device == "cuda"
    if cuda and not torch.cuda.is_available():
        raise InputError("--device cuda: no CUDA device is available to torch")
    tname, spelled, tf32 = DTYPES[dtype]
    if not cuda and tname != "float32":
        raise InputError(f"--dtype {dtype} is only timed on cuda; use float32 on cpu")
    shapes = deepbench_shapes(table, schema)
    dt, name = getattr(torch, tname), _device_name(torch, device)
    how = "CUDA graph replay" if cuda else "perf_counter loop"
    source = f"opsched cost collect: torch {torch.__version__}, {how}, median"
    old_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _run(torch, schema, shapes, cuda, device, dt, name, spelled, tf32, source,
                    warmup, replays, replay_us, budget_s, progress)  # fmt: skip
    finally:
        torch.set_num_threads(old_threads)


def _run(
    torch: Any,
    schema: str,
    shapes: list[dict[str, Any]],
    cuda: bool,
    device: str,
    dt: Any,
    name: str,
    spelled: str,
    tf32: bool,
    source: str,
    warmup: int,
    replays: int,
    replay_us: float,
    budget_s: float | None,
    progress: Callable[[int, int, dict[str, Any]], None] | None,
) -> pd.DataFrame:
    """:func:`collect_deepbench`'s timing loop, under the thread count it set."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    with _math_flags(torch, tf32), torch.inference_mode(False), torch.no_grad():
        for i, s in enumerate(shapes):
            if budget_s is not None and time.perf_counter() - t0 > budget_s:
                break
            if progress is not None:
                progress(i, len(shapes), s)
            row: dict[str, Any] = {"gpu": name, "suite": "opsched collect", "dtype": spelled,
                                   **s, "source_file": source}  # fmt: skip
            if schema == "deepbench_conv":
                oh = (s["H"] + 2 * s["pad_h"] - s["R"]) // s["stride_h"] + 1
                ow = (s["W"] + 2 * s["pad_w"] - s["S"]) // s["stride_w"] + 1
                flops = 2 * s["N"] * s["K"] * oh * ow * s["C"] * s["R"] * s["S"]
                row.update(out_h=oh, out_w=ow, fwd_flops=flops)
                calls = _conv_calls(torch, s, device, dt)
                for (col, kcol, _), call in zip(_CONV_TARGETS, calls, strict=True):
                    us, kernel = _time(torch, call, cuda, warmup, replay_us, replays)
                    row.update({col: round(us, 3), kcol: kernel})
                    del call
            else:
                us, kernel = _time(torch, _gemm_call(torch, s, device, dt), cuda, warmup,
                                   replay_us, replays)  # fmt: skip
                row.update(time_us=round(us, 3), kernel=kernel,
                           flops=2 * s["M"] * s["N"] * s["K"])  # fmt: skip
            rows.append(row)
            if cuda:
                torch.cuda.empty_cache()
    return pd.DataFrame(rows)

"""Read the kernel-timing tables and map their rows onto op kinds.

Seven schemas are recognised by their columns (:func:`detect_schema`): ``deepbench_gemm``,
``deepbench_conv``, ``neusight``, ``vidur``, ``profiler_ops`` (Kineto / HTA per-op rows),
``profiler_kernels`` (one row per kernel) and ``sdpa`` (fused attention forwards timed by
``scripts/device/time_sdpa.py``: ``B``, heads ``H``, ``Sq``, ``Skv``, ``D``, ``causal``).
:func:`canonical_rows` turns a table into one record per timing: the canonical GPU key, the
timing ``method``, the op ``kind`` and ``attrs`` of :mod:`opsched.ir.kinds`, and the measured
time in microseconds.

Timing methods (see the data's README): ``wallclock`` (DeepBench: host clock over many calls),
``events`` (NeuSight: CUDA events around one PyTorch call, dispatch included), ``kernel``
(Vidur: summed kernel time; ``sdpa``: CUDA-graph replays, kernel time without dispatch) and
``cupti`` (profiler kernel durations).

Examples
--------
>>> import pandas as pd
>>> df = pd.DataFrame({"gpu": ["NVIDIA T4"], "dtype": ["fp16"], "M": [64], "N": [32], "K": [16],
...                    "transA": ["N"], "transB": ["N"], "time_us": [7.0]})
>>> detect_schema(df.columns)
'deepbench_gemm'
>>> r = canonical_rows(df, "deepbench_gemm")[0]
>>> r["gpu"], r["method"], r["kind"], r["attrs"]["dtype"], r["time_us"]
('T4', 'wallclock', 'matmul', 'float16', 7.0)
"""

from __future__ import annotations

import bz2
import csv
import gzip
import json
import lzma
import math
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from opsched._files import note_input
from opsched.cost.conv_leaves import leaf_shapes
from opsched.cost.gpu_names import resolve_gpu
from opsched.cost.launch import launch_kind, launches_kind
from opsched.cost.mathmode import (
    SOURCE_MODES,
    kernel_math_mode,
    with_math_dtype,
)
from opsched.cost.sources import (
    DEEPBENCH_KERNEL_COLUMNS,
    BadCell,
    NoRule,
    deepbench_conv_attrs,
    deepbench_dtype,
    neusight_op,
    profiler_op,
    size_cell,
    torch_dtype,
    vidur_op,
)
from opsched.cost.specs import load_specs
from opsched.errors import InputError, OpschedError

__all__ = [
    "KERNEL_TARGET",
    "METHODS",
    "NO_OP",
    "SCHEMAS",
    "TIME_COLUMNS",
    "blank_cell",
    "blank_gpu_rows",
    "canonical_rows",
    "check_columns",
    "detect_schema",
    "priced_targets",
    "read_table",
    "target_method",
    "time_columns",
]

#: schema -> columns that identify it.
SCHEMAS: dict[str, tuple[str, ...]] = {
    "deepbench_conv": ("fwd_time_us", "N", "C", "H", "W", "K", "R", "S"),
    "deepbench_gemm": ("M", "N", "K", "time_us", "transA"),
    "neusight": ("op", "measured_time_us", "H_dim", "Cin"),
    "vidur": ("op", "time_us_median", "num_tokens", "n_embd"),
    "profiler_kernels": ("kernel", "kernel_dur_us", "op", "op_input_dims"),
    "profiler_ops": ("op", "gpu_time_us", "input_dims", "input_types"),
    "sdpa": ("H", "Sq", "Skv", "D", "causal", "time_us"),
}

#: schema -> {target: measured-time column}; deepbench_conv has three timings per row.
TIME_COLUMNS: dict[str, dict[str, str]] = {
    "deepbench_conv": {
        "conv2d": "fwd_time_us",
        "conv2d_bwd_data": "bwd_data_time_us",
        "conv2d_bwd_filter": "bwd_filter_time_us",
    },
    "deepbench_gemm": {"": "time_us"},
    "neusight": {"": "measured_time_us"},
    "vidur": {"": "time_us_median"},
    "profiler_kernels": {"": "kernel_dur_us"},
    "profiler_ops": {"": "gpu_time_us"},
    "sdpa": {"": "time_us"},
}

#: Target of the kernel-only time that ``opsched cost collect`` adds to NeuSight-schema rows.
KERNEL_TARGET = "kernel"


def time_columns(schema: str, columns: Iterable[str]) -> dict[str, str]:
    """The timing targets of a table with these ``columns``: those of :data:`TIME_COLUMNS`
    it has (a DeepBench convolution table may time the forward direction alone) plus, for a
    NeuSight-schema table with a ``kernel_time_us`` column, :data:`KERNEL_TARGET` (method
    ``kernel``).

    >>> time_columns("neusight", ["op", "measured_time_us", "kernel_time_us"])
    {'': 'measured_time_us', 'kernel': 'kernel_time_us'}
    >>> time_columns("deepbench_conv", ["fwd_time_us", "bwd_filter_time_us"])
    {'conv2d': 'fwd_time_us', 'conv2d_bwd_filter': 'bwd_filter_time_us'}
    """
    cols = set(columns)
    out = {target: col for target, col in TIME_COLUMNS[schema].items() if col in cols}
    if schema == "neusight" and "kernel_time_us" in cols:
        out[KERNEL_TARGET] = "kernel_time_us"
    return out


def check_columns(schema: str, columns: Iterable[str], gpu: str | None, timed: bool = True) -> None:
    """Raise :class:`InputError` if a table lacks a column its rows are read from: ``gpu``
    (unless a GPU is given for every row), an attention table's ``dtype`` or, when
    ``timed``, its schema's timing column.

    >>> check_columns("deepbench_gemm", ["M", "N", "K", "time_us", "transA"], None)
    Traceback (most recent call last):
    ...
    opsched.errors.InputError: no 'gpu' column: name the GPU of every row (--gpu)
    """
    cols = set(columns)
    if gpu is None and "gpu" not in cols:
        raise InputError("no 'gpu' column: name the GPU of every row (--gpu)")
    if schema == "sdpa" and "dtype" not in cols:  # each row's dtype is read from it
        raise InputError("no 'dtype' column: an attention table names each row's dtype "
                         "(float16, bfloat16, float32)")  # fmt: skip
    if timed and not time_columns(schema, cols):
        raise InputError(f"no timing column ({', '.join(TIME_COLUMNS[schema].values())})")


def priced_targets(schema: str, columns: Iterable[str]) -> dict[str, str]:
    """The targets to price of a table: its timed ones (:func:`time_columns`), or every
    target of its schema when it times none (a table of shapes alone).

    >>> priced_targets("deepbench_conv", ["N", "C", "H", "W", "K", "R", "S"])["conv2d_bwd_data"]
    'bwd_data_time_us'
    """
    return time_columns(schema, columns) or dict(TIME_COLUMNS[schema])


def target_method(schema: str, target: str) -> str:
    """The timing method of one target of a table (see :func:`time_columns`)."""
    return "kernel" if target == KERNEL_TARGET else METHODS[schema]


#: schema -> timing method.
METHODS: dict[str, str] = {
    "deepbench_conv": "wallclock",
    "deepbench_gemm": "wallclock",
    "neusight": "events",
    "vidur": "kernel",
    "profiler_kernels": "cupti",
    "profiler_ops": "cupti",
    "sdpa": "kernel",
}


def read_table(path: str | Path) -> Any:
    """Read a ``.csv`` or ``.csv.gz`` timing table into a pandas DataFrame.

    Raises
    ------
    InputError
        Missing, empty or malformed file.
    """
    import pandas as pd

    p = Path(path)
    if p.is_dir():  # say so: "no such file" sent users looking for a typo in the name
        raise InputError("is a directory, not a timing table", str(p))
    if not p.is_file():
        raise InputError("no such file", str(p))
    note_input(p)
    try:
        df = pd.read_csv(p, low_memory=False)
    except pd.errors.ParserError as e:
        _check_row_lengths(p)  # names the ragged row, if that is the trouble
        raise InputError(f"not a readable CSV table ({str(e).splitlines()[0]})", str(p)) from None
    except (pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as e:
        raise InputError(f"not a readable CSV table ({str(e).splitlines()[0]})", str(p)) from None
    except EOFError:
        raise InputError("truncated compressed file", str(p)) from None
    # pandas pads a short row with blanks and reads a long first row's extra cell as an index:
    # either leaves a blank in the last column or an index of labels, so only then is a table
    # read again to count each row's cells (tables whose last column is sparse, as Vidur's
    # and the HTA kernels', pay that second read: 0.3-0.4 s against 0.2 s for pandas, beside
    # 16 s of pricing Vidur's 106,458 rows)
    if len(df.columns) and (
        not isinstance(df.index, pd.RangeIndex) or bool(df.iloc[:, -1].isna().any())
    ):
        _check_row_lengths(p)
    return df


#: Openers of the compressed tables pandas reads, by suffix; others are not scanned again.
_OPENERS: dict[str, Any] = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def _check_row_lengths(p: Path) -> None:
    """Refuse a row of ``p`` with more or fewer cells than its header (a cut-off last row)."""
    suffix = p.suffix.lower()
    if suffix in (".zip", ".zst", ".tar"):
        return
    opener = _OPENERS.get(suffix, open)
    try:
        with opener(p, "rt", encoding="utf-8", newline="") as f:
            # pandas skips blank lines, and lines of spaces only, too
            rows = (row for row in csv.reader(f) if row and (len(row) > 1 or row[0].strip()))
            width = len(next(rows, []))
            bad, last = None, 0
            for last, row in enumerate(rows, 1):
                if len(row) != width and bad is None:
                    bad = (last, len(row))
        if bad is not None:
            n, k = bad
            cut = "; the file looks cut short" if n == last and k < width else ""
            raise InputError(f"data row {n} has {k} cells where the header has {width}{cut}")
    except InputError as e:
        raise e.located(str(p)) from None
    except (csv.Error, UnicodeDecodeError, OSError, EOFError, zlib.error, lzma.LZMAError):
        return  # pandas' own error, if any, says what is wrong


def detect_schema(columns: Iterable[str], where: str = "table", timed: bool = True) -> str:
    """Name of the timing schema whose identifying columns all appear in ``columns``.

    With ``timed=False`` a table of shapes alone also matches: a schema's identifying columns
    but its timing ones (the rows to price, none measured), when no schema matches in full.

    >>> detect_schema(["gpu", "M", "N", "K", "transA"], timed=False)
    'deepbench_gemm'
    """
    cols = set(columns)
    for name, need in SCHEMAS.items():
        if set(need) <= cols:
            return name
    if not timed:
        for name, need in SCHEMAS.items():
            if set(need) - set(TIME_COLUMNS[name].values()) <= cols:
                return name
    wanted = "; ".join(
        f"{name}: {', '.join(c for c in need if timed or c not in TIME_COLUMNS[name].values())}"
        for name, need in SCHEMAS.items()
    )
    raise InputError(f"unknown timing schema: the columns match none of ({wanted})", where)


def blank_cell(value: Any) -> bool:
    """A cell with nothing in it: NaN, None or only spaces."""
    return (
        value is None or (isinstance(value, float) and math.isnan(value)) or not str(value).strip()
    )


def blank_gpu_rows(df: Any) -> int:
    """How many rows of a timing table leave their ``gpu`` cell blank (0 without the column).

    >>> import pandas as pd
    >>> blank_gpu_rows(pd.DataFrame({"gpu": ["NVIDIA T4", None, " ", float("nan")]}))
    3
    """
    if "gpu" not in df.columns:
        return 0
    return sum(blank_cell(v) for v in df["gpu"].tolist())


#: A row :func:`canonical_rows` left out: ``(row, what, name)``, ``what`` one of ``"op"`` (an
#: op of no rule, ``name`` it), ``"dtype"`` (a dtype of no class, ``name`` it), ``"shape"``
#: (no readable shape, ``name`` empty).
Skipped = tuple[int, str, str]
#: The name a skipped kernel row without an op (and without a launch rule,
#: :func:`~opsched.cost.launch.launch_kind`) is listed under.
NO_OP = "(kernels without an op)"


def _skip(skipped: list[Skipped] | None, row: int, what: str, name: str = "") -> None:
    if skipped is not None:
        skipped.append((row, what, name))


def row_launches_kind(cell: Any) -> tuple[str, dict[str, Any]] | None:
    """The kind a timing row's ``launches`` cell gives (the JSON list of ``[name, grid,
    block]`` that ``opsched import-trace`` writes for an op no shape rule reads;
    :func:`opsched.cost.launch.launches_kind`); None for a blank or unreadable cell.

    >>> row_launches_kind('[["void at::native::vectorized_elementwise_kernel<4, f<float>, '
    ...                   'Array<char*, 2> >", [1, 1, 1], [128, 1, 1]]]')
    ('elementwise', {'numel': 512, 'arity': 1, 'dtype': 'float32'})
    """
    if not isinstance(cell, str) or not cell.strip():
        return None
    try:
        return launches_kind(json.loads(cell))
    except ValueError:
        return None


def _instance_sizes(df: Any) -> list[int | None] | None:
    """Per row of a kernel table, the kernel rows its op instance (``op_instance``) holds;
    None per row without an instance, or for a table without the column."""
    if "op_instance" not in df.columns:
        return None
    inst = df["op_instance"]
    sizes = inst.map(inst.value_counts())
    return [None if blank_cell(i) else int(n) for i, n in zip(inst, sizes, strict=True)]


def canonical_rows(
    df: Any,
    schema: str,
    gpu: str | None = None,
    timed: bool = True,
    skipped: list[Skipped] | None = None,
    launches: bool = True,
) -> list[dict[str, Any]]:
    """One record per timing of a table in ``schema`` (``timed=False``: also a table without
    its timing column, one record per target of :func:`priced_targets`, time NaN).
    ``launches``: a ``profiler_ops`` row no shape rule reads takes the kind its ``launches``
    cell gives (:func:`row_launches_kind`) before ``opaque``, and a kernel row no op
    launched, or whose op has no shape rule (``CompiledFunction``, fbgemm), the kind of its
    launch where :func:`~opsched.cost.launch.launch_kind` reads one (such a record has
    ``whole`` True: it is priced as itself, not as a share of its op); the fit turns this
    off, so no curve is fitted on sizes a launch only estimates.

    Each record has ``row`` (index into ``df``), ``target`` (``""``; for DeepBench convs the
    conv kind; :data:`KERNEL_TARGET` for a collected row's kernel-only time), ``gpu``
    (canonical key; ``gpu`` overrides the table's column), ``method``, ``kind``, ``attrs``
    (with ``dtype``) and ``time_us`` (NaN when the row has no timing).
    A float32 GEMM or convolution that the source ran on TF32 tensor cores
    (the row's kernel names where the table records them, else the source's
    :data:`opsched.cost.mathmode.SOURCE_MODES`; only on a GPU with a TF32 peak) gets
    ``dtype = "tf32"``.
    Rows that cannot be mapped (an unparseable shape, an op of no rule, a dtype the model
    has no class for) are left out, each appended to ``skipped`` (when given, see
    :data:`Skipped`), and so are rows whose ``gpu``
    cell is blank when ``gpu`` is not given (a trace without device properties: the HTA
    kernel table has 1,154 such rows); :func:`blank_gpu_rows` counts them.

    Raises
    ------
    InputError
        A GPU name no spec matches (the message names the first such data row, counted
        from 1 after the header, and lists the known GPUs), or a column the rows are read
        from is missing (:func:`check_columns`).
    """
    check_columns(schema, df.columns, gpu, timed)
    out: list[dict[str, Any]] = []
    specs = load_specs()
    mode = SOURCE_MODES[schema]
    targets = priced_targets(schema, df.columns)
    cache: dict[str, str] = {} if gpu is None else {gpu: resolve_gpu(gpu)}
    # the cuDNN backward leaves of a kernel table: shapes from their paired halves
    leaves = leaf_shapes(df) if schema == "profiler_kernels" else {}
    # a kernel table's op launched the kernel rows of its instance (an opaque op's count)
    per_op = _instance_sizes(df) if schema == "profiler_kernels" else None
    whole: set[int] = set()  # kernel rows priced from their own launch, not their op's share
    for pos, r in enumerate(df.itertuples(index=False)):
        if gpu is None and blank_cell(r.gpu):
            continue
        name = gpu if gpu is not None else str(r.gpu).strip()
        if name not in cache:
            try:
                cache[name] = resolve_gpu(name)
            except InputError as e:  # name the row: a file may hold many GPUs
                raise InputError(f"data row {pos + 1}: {e.message}") from None
        key = cache[name]
        try:
            if schema == "deepbench_gemm":
                base: tuple[str, dict[str, Any]] = (
                    "matmul", {"M": size_cell(r.M), "N": size_cell(r.N), "K": size_cell(r.K)}
                )  # fmt: skip
                dtype, spelt = deepbench_dtype(getattr(r, "dtype", None))
            elif schema == "deepbench_conv":
                base = ("conv2d", deepbench_conv_attrs(r))
                dtype, spelt = deepbench_dtype(getattr(r, "dtype", None))
            elif schema == "neusight":
                # NeuSight's own rows are all float32; collect's may not be. Ops its rules do
                # not name are priced as the profiler's ATen ops, never fitted
                base = neusight_op(r, other=not timed)
                raw = getattr(r, "dtype", None)
                blank = raw is None or (isinstance(raw, float) and math.isnan(raw)) or raw == ""
                dtype = "float32" if blank else torch_dtype(raw)
                if not dtype:  # a dtype the cost model has no class for (float64...)
                    _skip(skipped, pos, "dtype", str(raw))
                    continue
            elif schema == "vidur":
                base = vidur_op(r)
                dtype = "float16"
            elif schema == "sdpa":
                base = (
                    "attention",
                    {
                        "B": size_cell(r.B) * size_cell(r.H),
                        "Sq": size_cell(r.Sq),
                        "Skv": size_cell(r.Skv),
                        "D": size_cell(r.D),
                        "causal": min(size_cell(r.causal), 1),
                    },
                )
                dtype = torch_dtype(r.dtype)
                if not dtype:
                    _skip(skipped, pos, "dtype", str(r.dtype))
                    continue
            elif schema == "profiler_ops":
                base = profiler_op(r, "input_dims", "input_types")
                if launches and base[0] == "opaque":  # the launches the importer kept
                    base = row_launches_kind(getattr(r, "launches", None)) or base
                dtype = base[1].get("dtype", "float32")
            elif blank_cell(r.op):  # a kernel no recorded op launched: its launch's shape
                launched = (launch_kind(r.kernel, getattr(r, "grid", None),
                                        getattr(r, "block", None))
                            if launches else None)  # fmt: skip
                if launched is None:
                    _skip(skipped, pos, "op", NO_OP)
                    continue
                base = launched
                dtype = base[1]["dtype"]
            else:
                base = profiler_op(r, "op_input_dims", "op_input_types", leaves.get(pos),
                                   None if per_op is None else per_op[pos])  # fmt: skip
                if launches and base[0] == "opaque":  # an op of no rule: its kernel's launch
                    launched = launch_kind(r.kernel, getattr(r, "grid", None),
                                           getattr(r, "block", None))  # fmt: skip
                    if launched is not None:
                        base = launched
                        whole.add(pos)
                dtype = base[1].get("dtype", "float32")
        except OpschedError:  # already names the problem (and is a ValueError)
            raise
        except NoRule as e:
            _skip(skipped, pos, "op", repr(e.op))
            continue
        except (ValueError, TypeError, AttributeError, json.JSONDecodeError):
            _skip(skipped, pos, "shape")
            continue
        except BadCell as e:
            raise InputError(f"data row {pos + 1}: {e}") from None
        deepbench = schema.startswith("deepbench")
        if deepbench:  # collected rows: "tf32" allowed it; each timing names its own kernel
            row_default = (True, True) if spelt == "tf32" else mode
        else:
            shown = getattr(r, "kernels", None) or getattr(r, "main_kernel", None)
            row_mode = kernel_math_mode(shown) or mode
        for target, col in targets.items():
            kind = base[0] if target in ("", KERNEL_TARGET) else target
            if deepbench:
                named = getattr(r, DEEPBENCH_KERNEL_COLUMNS[target], None)
                row_mode = kernel_math_mode(named) or row_default
            t = getattr(r, col, float("nan"))
            try:
                t = float(t)
            except (TypeError, ValueError):
                t = float("nan")
            attrs = with_math_dtype(kind, {**base[1], "dtype": dtype}, specs[key], mode=row_mode)
            out.append({"row": pos, "target": target, "gpu": key,
                        "method": target_method(schema, target), "kind": kind,
                        "attrs": attrs, "time_us": t, "whole": pos in whole})  # fmt: skip
    return out

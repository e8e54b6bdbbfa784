"""The kernel-timing tables' schemas and their reading (shared by :mod:`opsched.cost.data`).

Seven schemas are told apart by their columns (:func:`detect_schema`); each names the
columns that hold its measured times (:data:`TIME_COLUMNS`) and its timing method
(:data:`METHODS`). :func:`read_table` reads a ``.csv`` or compressed ``.csv`` table and
refuses a ragged one, naming the row.

>>> detect_schema(["gpu", "M", "N", "K", "time_us", "transA"])
'deepbench_gemm'
>>> METHODS["neusight"], time_columns("deepbench_conv", ["bwd_data_time_us"])
('events', {'conv2d_bwd_data': 'bwd_data_time_us'})
"""

from __future__ import annotations

import bz2
import csv
import gzip
import lzma
import math
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from opsched._files import note_input
from opsched.errors import InputError

__all__ = [
    "KERNEL_TARGET",
    "METHODS",
    "SCHEMAS",
    "TIME_COLUMNS",
    "blank_cell",
    "blank_gpu_rows",
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

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

import json
import math
from typing import Any

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
from opsched.cost.tables import (  # re-exported (__all__): the schemas' names and readers
    KERNEL_TARGET,
    METHODS,
    SCHEMAS,
    TIME_COLUMNS,
    blank_cell,
    blank_gpu_rows,
    check_columns,
    detect_schema,
    priced_targets,
    read_table,
    target_method,
    time_columns,
)
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

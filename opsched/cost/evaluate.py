"""Predict the rows of a timing table and measure the error against the measured times.

Examples
--------
>>> import pandas as pd
>>> df = pd.DataFrame({"gpu": ["NVIDIA T4"] * 2, "dtype": ["fp32"] * 2, "M": [512, 64],
...                    "N": [512, 64], "K": [512, 64], "transA": ["N"] * 2,
...                    "transB": ["N"] * 2, "time_us": [120.0, 9.0]})
>>> out = predict_table(df)
>>> list(out.columns[-2:]), bool((out.predicted_time_us > 0).all())
(['time_us', 'predicted_time_us'], True)
>>> errors(out)[["gpu", "family", "rows"]].values.tolist()
[['T4', 'matmul', 2]]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from opsched.cost.data import (
    KERNEL_TARGET,
    Skipped,
    blank_gpu_rows,
    canonical_rows,
    detect_schema,
    priced_targets,
)
from opsched.cost.features import family_of
from opsched.cost.profile import load_profile
from opsched.errors import GraphError, InputError

__all__ = ["errors", "predict_table"]

#: Column names of the predictions; DeepBench convs get one per timing.
_PRED = {"": "predicted_time_us", "conv2d": "predicted_time_us",
         "conv2d_bwd_data": "predicted_bwd_data_time_us",
         "conv2d_bwd_filter": "predicted_bwd_filter_time_us",
         KERNEL_TARGET: "predicted_kernel_time_us"}  # fmt: skip


def predict_table(df: Any, gpu: str | None = None, where: str = "table") -> Any:
    """``df`` (any timing schema) plus predicted times in microseconds.

    Rows whose shape cannot be read, whose op has no rule or whose dtype has no class get NaN
    (listed in ``out.attrs["_opsched"]["skipped"]``, :data:`opsched.cost.data.Skipped`), and
    so do rows whose shape no kernel can have
    (listed as ``(row, why)`` in ``out.attrs["_opsched"]["impossible"]``) and rows without a
    GPU name when ``gpu`` is not given (their count is ``out.attrs["_opsched"]["no_gpu"]``;
    a table in which no row names its GPU is an error that asks for ``gpu``). Kernel-level
    profiler rows take their share of their op's predicted time
    (:mod:`opsched.cost.kernel_shares`). Also
    attaches, for :func:`errors`, the hidden columns ``_family``, ``_gpu``, ``_roofline_us``
    (per target), and names the prediction columns added in ``attrs["_opsched"]["columns"]``.
    """
    schema = detect_schema(df.columns, where, timed=False)
    no_gpu = blank_gpu_rows(df) if gpu is None else 0
    if no_gpu and no_gpu == len(df):
        raise InputError("no row names its GPU (the gpu column is blank): give --gpu", where)
    skipped: list[Skipped] = []
    try:
        recs = canonical_rows(df, schema, gpu, timed=False, skipped=skipped)
    except InputError as e:
        raise e.located(where) from None
    out = df.copy()
    n = len(df)
    targets = priced_targets(schema, df.columns)
    cols = {t: np.full(n, np.nan) for t in targets}
    roofs = {t: np.full(n, np.nan) for t in targets}
    fams = np.full(n, "", dtype=object)
    gpus = np.full(n, "", dtype=object)
    by_gpu: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in recs:
        by_gpu.setdefault((r["gpu"], r["method"]), []).append(r)
    impossible: list[tuple[int, str]] = []  # (row, why): shapes no kernel can have
    for (key, method), rs in by_gpu.items():
        prof = load_profile(key)
        # canonical_rows already set each row's math mode from its source: no default on top
        pred, why = _price(prof, rs, method)
        impossible += [(r["row"], w) for r, w in zip(rs, why, strict=True) if w is not None]
        for r, p in zip(rs, pred, strict=True):
            if not math.isfinite(p):
                continue
            cols[r["target"]][r["row"]] = p
            roofs[r["target"]][r["row"]] = prof.roofline(r["kind"], r["attrs"])
            if r["target"] in ("", "conv2d"):
                fams[r["row"]] = family_of(r["kind"], r["attrs"])
                gpus[r["row"]] = key
    if schema == "profiler_kernels" and "op_instance" in df.columns:
        from opsched.cost.kernel_shares import kernel_weights

        part = kernel_weights(df["op"].tolist(), df["kernel"].tolist(), df["op_instance"].tolist())
        own = [r["row"] for r in recs if r.get("whole")]  # priced from their own launch
        part[own] = 1.0
        cols[""] = cols[""] * part  # each kernel its share of the op (kernel_shares)
        count = df.groupby("op_instance")["op_instance"].transform("size").to_numpy(float).copy()
        count[own] = 1.0
        roofs[""] = roofs[""] / np.where(np.isnan(count), 1.0, count)  # no op: a whole
    for t in targets:
        out[_PRED[t]] = cols[t]
    out.attrs["_opsched"] = {"schema": schema, "family": fams, "gpu": gpus, "roof": roofs,
                             "targets": targets, "no_gpu": no_gpu,
                             "columns": [_PRED[t] for t in targets],
                             "impossible": sorted(impossible), "skipped": skipped}  # fmt: skip
    return out


def _price(prof: Any, rs: list[dict[str, Any]], method: str) -> tuple[Any, list[str | None]]:
    """Prices of the records ``rs`` in one call, and per record why none (None: priced).

    A table may hold a row no kernel can have (stride 0, a window past its input): then the
    shape rules find it, it is left out (NaN) and the others are priced together; a fault
    they do not see leaves the rest priced one at a time.
    """

    def batch(idx: list[int]) -> Any:
        return prof.predict_many([rs[i]["kind"] for i in idx], [rs[i]["attrs"] for i in idx],
                                 method, allow_tf32=False)  # fmt: skip

    every = list(range(len(rs)))
    try:
        return batch(every), [None] * len(rs)
    except GraphError:
        pass
    why = [_impossible(r["kind"], r["attrs"]) for r in rs]
    ok = [i for i in every if why[i] is None]
    pred = np.full(len(rs), math.nan)
    try:
        pred[ok] = batch(ok)
    except GraphError:
        for i in ok:
            try:
                pred[i] = batch([i])[0]
            except GraphError as e:
                why[i] = e.message
    return pred, why


def _impossible(kind: str, attrs: Any) -> str | None:
    """Why no kernel can have this op's shape (the shape rules' error), or None."""
    from opsched.cost.batch import check_op
    from opsched.ir import kinds

    try:
        check_op(kind, attrs)
        kinds.dtype_bytes(attrs)
        if kind != "fused":
            kinds.flops(kind, attrs)
            kinds.bytes_min(kind, attrs)
    except GraphError as e:
        return e.message
    return None


def errors(pred: Any) -> Any:
    """Absolute percentage errors per GPU and family: ours next to the plain roofline.

    Returns a DataFrame with ``gpu, family, rows, median_ape, mean_ape, roofline_median_ape,
    roofline_mean_ape`` (percent). Rows measured at 0 us, without a measured time (an empty
    cell: a timing column a row may leave blank) or without a prediction are skipped;
    ``attrs["unmeasured"]`` lists the priced data rows (from 1) whose measured time is written
    but is no time (text, infinite or below 0), which are skipped too.
    """
    import pandas as pd

    meta = pred.attrs["_opsched"]
    timed = {t: c for t, c in meta["targets"].items() if c in pred.columns}
    if not timed:
        raise InputError(
            f"no timing column ({', '.join(meta['targets'].values())}): nothing to score "
            "(cost predict prices a table of shapes)"
        )
    parts = []
    unmeasured: set[int] = set()  # priced data rows whose measured time is written but no time
    for target, col in timed.items():
        fam = meta["family"]
        if target == KERNEL_TARGET:  # the same op, timed without dispatch
            fam = np.where(fam != "", np.char.add(fam.astype(str), " (kernel)"), "")
        elif target not in ("", "conv2d"):
            fam = np.where(fam != "", target, "")
        measured = pd.to_numeric(pred[col], errors="coerce").to_numpy(float)
        p = pred[_PRED[target]].to_numpy(float)
        ok = (measured > 0) & np.isfinite(p) & np.isfinite(measured)
        written = (pred[col].notna() & (pred[col].astype(str).str.strip() != "")).to_numpy()
        no_time = written & ~(np.isfinite(measured) & (measured >= 0))
        unmeasured.update((np.flatnonzero(np.isfinite(p) & no_time) + 1).tolist())
        parts.append(pd.DataFrame({
            "gpu": meta["gpu"][ok], "family": fam[ok],
            "ape": np.abs(p[ok] - measured[ok]) / measured[ok] * 100,
            "roof_ape": np.abs(meta["roof"][target][ok] - measured[ok]) / measured[ok] * 100,
        }))  # fmt: skip
    d = pd.concat(parts, ignore_index=True)
    if d.empty:  # a table of unmeasured or unreadable rows: say so, not an empty table
        raise InputError(
            f"no row could be scored: {len(pred)} rows, none with both a measured time above 0 "
            "and a readable shape"
        )
    g = d.groupby(["gpu", "family"], sort=True)
    res = g.agg(rows=("ape", "size"), median_ape=("ape", "median"), mean_ape=("ape", "mean"),
                roofline_median_ape=("roof_ape", "median"),
                roofline_mean_ape=("roof_ape", "mean")).reset_index()  # fmt: skip
    res = res.round(2)
    res.attrs["unmeasured"] = sorted(unmeasured)
    return res

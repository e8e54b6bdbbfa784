"""The timing rows the cost model is fitted on, as arrays per op family.

:func:`load_fit_data` reads the timing tables (any schema of :mod:`opsched.cost.data`), maps
every row to its family (:func:`opsched.cost.features.family_of`) and computes the curve
features on the row's own GPU (:func:`opsched.cost.features.feature_matrix`), its roofline
time and its k-fold group (the shape, all GPUs together).

Examples
--------
>>> data = load_fit_data(files=["deepbench_gemm.csv"], limit=20)
>>> fd = data.families["matmul"]
>>> fd.x.shape[0] == fd.t.size == fd.gpu.size, bool((fd.t > 0).all())
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from opsched.cost.conv_leaves import LEAVES, op_table_shapes
from opsched.cost.curve import FREE_OVERHEAD_METHODS, fit_curve
from opsched.cost.data import canonical_rows, detect_schema, read_table
from opsched.cost.features import (
    FAMILIES,
    SAMPLE_ATTRS,
    as_priced,
    dtype_class,
    family_of,
    feature_matrix,
    roofline_us,
    tree_class,
)
from opsched.cost.limits import STORAGE_DTYPES, conv_bound_us
from opsched.cost.mathmode import CONV_KINDS
from opsched.cost.paddings import PADDED_FAMILIES, paddings
from opsched.cost.specs import load_specs
from opsched.errors import InputError

__all__ = [
    "FIT_FILES",
    "MAX_ROWS_PER_SLOT",
    "TWIN_FAMILIES",
    "FamilyData",
    "FitData",
    "cap_rows",
    "fit_rows",
    "load_fit_data",
    "shape_key",
    "with_leaf_shapes",
]

#: Timing tables the shipped profiles are fitted on (the kernel-level profiler tables repeat
#: the per-op ones and are not used).
FIT_FILES: tuple[str, ...] = (
    "deepbench_gemm.csv", "deepbench_conv.csv", "neusight_ops.csv.gz", "vidur_llm_ops.csv.gz",
    "kineto_resnet50_v100_ops.csv.gz", "hta_ops.csv.gz", "opsched_h200.csv.gz",
    "opsched_h200_deepbench_conv.csv.gz", "opsched_h200_deepbench_gemm.csv.gz",
    "opsched_h200_deepbench_gemm_half.csv.gz", "opsched_h200_aligned_half.csv.gz",
    "opsched_h200_sdpa.csv.gz",
)  # fmt: skip


@dataclass
class FamilyData:
    """Arrays of one family: features (own GPU's specs), times, GPU, method, dtype class."""

    x: np.ndarray
    t: np.ndarray
    roof: np.ndarray
    gpu: np.ndarray
    method: np.ndarray
    cls: np.ndarray
    source: np.ndarray
    group: np.ndarray
    #: the class the residual trees see (:func:`opsched.cost.features.tree_class`); None: ``cls``
    tcls: np.ndarray | None = None
    #: :data:`~opsched.cost.paddings.PADDED_FAMILIES`: the features of each row's three
    #: paddings (:func:`~opsched.cost.paddings.paddings`; the row's own where one changes
    #: nothing); a small op is priced at most as its paddings
    #: (:func:`opsched.cost.fit.predict_family`)
    x_pads: tuple[np.ndarray, ...] = ()
    #: each row's place in its timing run, in [0, 1), for the runs whose per-call times drift
    #: (:data:`opsched.cost.drift.DRIFT_RUNS`); NaN for every other row; None: no such rows
    run_pos: np.ndarray | None = None
    #: the float32 twins of the half-precision rows (:data:`TWIN_FAMILIES`): ``twin`` marks
    #: them, ``x32`` / ``roof32`` / ``x32_pads`` are the twins' features, roofline and
    #: paddings' features (zero on the other rows); a half op is priced at most as its twin
    #: (:func:`opsched.cost.fit.predict_family`, as ``Profile.predict``); None: no such rows
    twin: np.ndarray | None = None
    x32: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    roof32: np.ndarray = field(default_factory=lambda: np.zeros(0))
    x32_pads: tuple[np.ndarray, ...] = ()
    #: the convolution families: each row's :func:`~opsched.cost.limits.conv_bound_us`,
    #: under which no price goes (:func:`opsched.cost.fit.predict_family`); None otherwise
    bound: np.ndarray | None = None

    def tree_cls(self) -> np.ndarray:
        """Per row, the dtype class of the tree features."""
        return self.cls if self.tcls is None else self.tcls


@dataclass
class FitData:
    """All timing rows, by family."""

    families: dict[str, FamilyData]


def with_leaf_shapes(df: Any, path: Path) -> Any:
    """A per-op profiler table with its cuDNN backward leaves' shapes read from the
    kernel-level table of the same traces, where one lies beside it (``..._ops.csv.gz`` ->
    ``..._kernels.csv.gz``; :func:`opsched.cost.conv_leaves.op_table_shapes`): the curated
    ``shape`` column cannot tell a data half's stride or, for some rows, a filter half's
    size. Without that table, ``df`` as it is."""
    sibling = path.with_name(path.name.replace("_ops.", "_kernels."))
    if sibling == path or not sibling.is_file() or not df["op"].isin(list(LEAVES)).any():
        return df  # no kernel table to read, or no leaf to read it for
    shapes = op_table_shapes(df, read_table(sibling))
    if not shapes:
        return df
    text = df["shape"].astype(object).tolist() if "shape" in df.columns else [""] * len(df)
    for pos, shape in shapes.items():
        text[pos] = shape
    return df.assign(shape=text)


def load_fit_data(
    root: str | Path | None = None,
    files: Iterable[str] = FIT_FILES,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
    families: Collection[str] | None = None,
) -> FitData:
    """Read the timing tables under ``root`` (default: the built-in datasets) into arrays.

    ``limit`` keeps only the first ``limit`` rows of each table (for quick tests);
    ``progress``, if given, is called with a line per table read. ``families`` keeps the
    rows of those op families only (most of the time goes into the features, about 0.12 ms
    a row); a model fitted on them takes its kernel floors and donor curves from them
    alone, so it is not the shipped fit of those families (``fit_model(families=...)`` on
    the whole data is).
    """
    from opsched.datasets import dataset_path

    base = Path(root) if root is not None else dataset_path("kernel-timings")
    specs = load_specs()
    recs: dict[str, list[tuple[Any, ...]]] = {}
    for name in files:
        df = read_table(base / name)
        if limit is not None:
            df = df.head(limit)
        schema = detect_schema(df.columns, name)
        if schema == "profiler_ops":
            df = with_leaf_shapes(df, base / name)
        try:
            records = canonical_rows(df, schema, launches=False)
        except InputError as e:
            raise e.located(str(base / name)) from None
        if progress is not None:
            progress(f"read {Path(name).name}: {len(df):,} rows ({schema})")
        for r in records:
            t = r["time_us"]
            if not (t > 0 and np.isfinite(t)):
                continue
            fam = family_of(r["kind"], r["attrs"])
            if fam not in FAMILIES:  # a fused op (a whole convolution backward): priced by parts
                continue
            if families is not None and fam not in families:
                continue
            recs.setdefault(fam, []).append(
                (
                    as_priced(r["kind"], r["attrs"]),  # a fill's traffic, as Profile prices it
                    t,
                    r["gpu"],
                    r["method"],
                    dtype_class(r["attrs"]["dtype"]),
                    schema,
                    shape_key(r["kind"], r["attrs"]),
                    tree_class(r["attrs"]["dtype"]),
                    Path(name).name,
                )
            )
    out: dict[str, FamilyData] = {}
    if progress is not None:
        progress(f"computing the features of {sum(map(len, recs.values())):,} rows")
    for fam, rows in recs.items():
        kind = {"bmm": "matmul"}.get(fam, "elementwise" if fam.startswith("elementwise") else fam)
        gpus = np.array([r[2] for r in rows])
        x = np.zeros((len(rows), feature_matrix(fam, [rows[0][0]], specs[rows[0][2]]).shape[1]))
        roof = np.zeros(len(rows))
        slots = len(paddings(fam, SAMPLE_ATTRS[fam])) if fam in PADDED_FAMILIES else 0
        pads = [np.zeros_like(x) for _ in range(slots)]
        twin = np.array([fam in TWIN_FAMILIES and r[4] == "half" for r in rows])
        n32 = len(rows) if twin.any() else 0  # the twins' arrays only where there are twins
        x32, roof32 = np.zeros((n32, x.shape[1])), np.zeros(n32)
        pads32 = [np.zeros_like(x32) for _ in range(slots)]

        for gpu in sorted(set(gpus)):
            idx = np.nonzero(gpus == gpu)[0]
            into = (x, roof, pads)
            _fill_features(fam, kind, idx, [rows[i][0] for i in idx], specs[gpu], *into)
            tw = idx[twin[idx]]
            if tw.size:
                fp32 = [{**rows[i][0], "dtype": "float32"} for i in tw]
                _fill_features(fam, kind, tw, fp32, specs[gpu], x32, roof32, pads32)
        out[fam] = FamilyData(
            x=x, t=np.array([r[1] for r in rows]), roof=roof, gpu=gpus,
            method=np.array([r[3] for r in rows]), cls=np.array([r[4] for r in rows]),
            source=np.array([r[5] for r in rows]), group=np.array([r[6] for r in rows]),
            tcls=np.array([r[7] for r in rows]), x_pads=tuple(pads),
            run_pos=_run_positions(fam, rows),
        )  # fmt: skip
        if fam in CONV_KINDS:
            out[fam].bound = np.array([conv_bound_us(fam, r[0], specs[r[2]]) for r in rows])
        if twin.any():
            out[fam].twin, out[fam].x32, out[fam].roof32 = twin, x32, roof32
            out[fam].x32_pads = tuple(pads32)
    return FitData(out)


def _fill_features(
    fam: str,
    kind: str,
    idx: np.ndarray,
    attrs: list[Any],
    spec: Any,
    xs: np.ndarray,
    roofs: np.ndarray,
    pad_xs: list[np.ndarray],
) -> None:
    """Write the features, roofline and paddings' features of rows ``idx`` (``attrs``, one
    GPU's ``spec``) into ``xs``, ``roofs`` and ``pad_xs``."""
    xs[idx] = feature_matrix(fam, attrs, spec)
    roofs[idx] = [roofline_us(kind, a, spec) for a in attrs]
    padded = [paddings(fam, a) for a in attrs]  # per row, one entry per slot
    for k, xp in enumerate(pad_xs):
        slot = [p[k] or a for p, a in zip(padded, attrs, strict=True)]
        xp[idx] = feature_matrix(fam, slot, spec)


def _run_positions(fam: str, rows: list[tuple[Any, ...]]) -> np.ndarray | None:
    """Places in their run (:func:`opsched.cost.drift.run_positions`; a run = one table's rows
    of one GPU and timing method, in the table's order) of the rows of drifting runs."""
    from opsched.cost.drift import DRIFT_RUNS, run_positions

    table = np.array([r[8] for r in rows])
    method = np.array([r[3] for r in rows])
    drifting = np.zeros(len(rows), bool)
    for name, family, m in DRIFT_RUNS:
        if family == fam:
            drifting |= (table == name) & (method == m)
    if not drifting.any():
        return None
    pos = np.full(len(rows), np.nan)
    gpus = np.array([r[2] for r in rows])
    pos[drifting] = run_positions(np.char.add(np.char.add(table, "|"), gpus)[drifting])
    return pos


#: Families whose half-precision rows are priced at most as their float32 twins: all but the
#: fused attention kernel, which has no float32 form.
TWIN_FAMILIES = frozenset(FAMILIES) - {"attention"}


def shape_key(kind: str, attrs: Mapping[str, Any]) -> str:
    """The k-fold group of a timing: its kind and shape attrs (dtype included), not its GPU.

    The same shape timed on several GPUs or by several sources lands in one fold, so no fold
    is scored on a shape whose time on another GPU was in its training rows. A float32 op
    run in TF32 (``dtype = "tf32"``) groups with its float32 shape, a float16 one run with FP32
    arithmetic (``"float16_fp32math"``) with its float16 shape.

    Examples
    --------
    >>> shape_key("matmul", {"M": 2, "N": 3, "K": 4, "dtype": "tf32"})
    'matmul|K=4|M=2|N=3|dtype=float32'
    """
    # the math mode is how a source ran the op, not part of its shape
    stored = STORAGE_DTYPES.get(str(attrs.get("dtype")))
    a = {**attrs, "dtype": stored} if stored else attrs
    return kind + "|" + "|".join(f"{k}={a[k]}" for k in sorted(a))


#: Rows per (GPU, timing method, dtype class) a curve's fit uses at most (a fixed random
#: subset): more add little to a curve of ~20 parameters and slow the fit down. The residual
#: trees, which have thousands of leaves to fill, learn from every row.
MAX_ROWS_PER_SLOT = 3000


def cap_rows(fd: FamilyData, sel: np.ndarray) -> np.ndarray:
    """``sel`` with at most :data:`MAX_ROWS_PER_SLOT` rows per (GPU, method, class).

    The rows kept are drawn with a seed fixed by the slot's size, so a refit is identical.
    """
    out = sel.copy()
    keys = np.char.add(np.char.add(fd.gpu, "|"), np.char.add(fd.method, fd.cls))
    for key in np.unique(keys[sel]):
        idx = np.nonzero(sel & (keys == key))[0]
        if idx.size > MAX_ROWS_PER_SLOT:
            rng = np.random.default_rng(idx.size)
            out[rng.choice(idx, idx.size - MAX_ROWS_PER_SLOT, replace=False)] = False
    return out


def fit_rows(
    fd: FamilyData,
    sel: np.ndarray,
    prior: np.ndarray,
    ridge: float,
    offset: np.ndarray | None = None,
) -> tuple[np.ndarray, dict[tuple[str, str], float]]:
    """Fit one curve on the selected (then capped) rows of a family.

    One overhead slot per (GPU, timing method); only the methods of
    :data:`~opsched.cost.curve.FREE_OVERHEAD_METHODS` get a fitted overhead. ``offset`` (one
    value per row of ``fd``) is a fixed log-time term (:func:`~opsched.cost.curve.fit_curve`).

    Returns
    -------
    beta, overheads
        The coefficients and ``{(gpu, method): overhead_us}`` of the free slots.
    """
    sel = cap_rows(fd, sel)
    slots = sorted({(g, m) for g, m in zip(fd.gpu[sel], fd.method[sel], strict=True)})
    index = {s: i for i, s in enumerate(slots)}
    slot = np.array([index[(g, m)] for g, m in zip(fd.gpu[sel], fd.method[sel], strict=True)])
    free = [m in FREE_OVERHEAD_METHODS for _, m in slots]
    off = None if offset is None else offset[sel]
    res = fit_curve(fd.x[sel], fd.t[sel], slot, free, prior=prior, ridge=ridge, offset=off)
    return res.beta, {s: res.overheads[i] for s, i in index.items() if free[i]}


def median_overheads(overheads: Mapping[tuple[str, str], float]) -> dict[str, float]:
    """Per timing method, the median of the per-GPU fitted overheads (a pooled curve's).

    >>> median_overheads({("A", "events"): 20.0, ("B", "events"): 30.0, ("C", "events"): 40.0})
    {'events': 30.0}
    """
    by_method: dict[str, list[float]] = {}
    for (_, method), o in overheads.items():
        by_method.setdefault(method, []).append(o)
    return {m: float(np.median(v)) for m, v in by_method.items()}

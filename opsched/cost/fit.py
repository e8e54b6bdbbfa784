"""Fit the per-GPU profiles from the timing tables; k-fold and leave-one-GPU-out errors.

The fit runs in two stages for every op family and dtype class:

1. a *pooled* curve over all GPUs (features in GPU units, one overhead per GPU and timing
   method), pulled towards the plain roofline;
2. one curve per GPU that has timings, pulled towards the pooled curve.

A GPU without timings (or a family it has no rows for) uses the curve of a GPU on the same
chip where one has it for that kind of timing (:mod:`opsched.cost.sibling`), else the pooled
curve through its own specs, with each timing method's median overhead.
:mod:`opsched.cost.heldout` measures the held-out error of this whole procedure (grouped
k-fold and leave-one-GPU-out); :mod:`opsched.cost.export` writes a fitted model as the
shipped profiles.

Examples
--------
>>> data = load_fit_data(files=["deepbench_gemm.csv"])
>>> model = fit_model(data)
>>> ("T4", "matmul", "half") in model.groups
True
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from opsched.cost.boost import corrects, fit_trees, tree_features, tree_method, tree_methods
from opsched.cost.curve import FREE_OVERHEAD_METHODS, predict_curve
from opsched.cost.donor import BORROWER_FAMILIES, borrower_curves, fit_donor
from opsched.cost.drift import dedrift
from opsched.cost.features import HALF_FP32_MATH, SAMPLE_ATTRS, feature_matrix
from opsched.cost.fitdata import (
    FIT_FILES,
    FamilyData,
    FitData,
    fit_rows,
    load_fit_data,
    median_overheads,
)
from opsched.cost.floor import (
    FLOORLESS_FAMILIES,
    apply_floor,
    fit_family_floors,
    fit_floors,
    floor_of,
)
from opsched.cost.limits import elementwise_cap, roofline_bound, streaming_cap, twin_bounds
from opsched.cost.sibling import method_kind, pick_sibling, shape_counts
from opsched.cost.specs import GpuSpec, load_specs
from opsched.cost.trees import TreeEnsemble

__all__ = [
    "FIT_FILES",
    "FamilyData",
    "FitData",
    "Model",
    "fit_model",
    "load_fit_data",
]

POOLED_RIDGE = 1.0
GROUP_RIDGE = 3.0
#: Least training rows and distinct shapes for a family to get residual trees: with fewer
#: shapes (profiler families: a few dozen shapes repeated) the trees learned the training
#: shapes and raised the held-out error of reduce and the opaque catch-all (see docs/cost-model.md).
MIN_TREE_ROWS = 200
MIN_TREE_SHAPES = 100


@dataclass
class Model:
    """Fitted curves: pooled per (family, class) and per (gpu, family, class), the latter with
    their distinct shapes per timing kind (``shapes``, :mod:`opsched.cost.sibling`); residual
    trees per family (pooled over GPUs); kernel floors per GPU and pooled (``"*"``,
    :mod:`opsched.cost.floor`), and the convolutions' own floors (family -> the same)."""

    floors: dict[str, float] = field(default_factory=lambda: {"*": 1.0})
    family_floors: dict[str, dict[str, float]] = field(default_factory=dict)
    pooled: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    groups: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    trees: dict[str, TreeEnsemble] = field(default_factory=dict)

    def curve(
        self, gpu: str, family: str, cls: str, method: str | None = None
    ) -> dict[str, Any] | None:
        """The GPU's own curve; else, for a timing ``method``, a same-chip GPU's curve fitted on
        that kind of timing (``source: sibling``); else the pooled one, else the pooled one of
        another class."""
        own = self.groups.get((gpu, family, cls))
        if own is not None:
            return own
        sib = None if method is None else sibling_curve(self, gpu, family, cls, method)
        if sib is not None:
            return sib
        if (family, cls) in self.pooled:
            return self.pooled[(family, cls)]
        for other in ("fp32", "half", "int8"):
            if (family, other) in self.pooled:
                return self.pooled[(family, other)]
        return None

    def fp32_math_class(self, gpu: str, family: str, method: str | None = None) -> str:
        """The curve class of half-precision tensors with FP32 arithmetic
        (:data:`HALF_FP32_MATH`): ``half`` where the GPU (or a same-chip sibling, for
        ``method``) has a half curve fitted on its own rows, else ``fp32``. The profiles
        apply the same rule (:meth:`opsched.cost.profile.Profile.curve`)."""
        if (gpu, family, "half") in self.groups:
            return "half"
        own = None if method is None else sibling_curve(self, gpu, family, "half", method)
        return "half" if own is not None else "fp32"


def fit_model(
    data: FitData,
    train: Mapping[str, np.ndarray] | None = None,
    per_gpu: bool = True,
    trees: bool = True,
    progress: Callable[[str], None] | None = None,
    tree_families: Collection[str] | None = None,
    drift: bool = True,
    families: Collection[str] | None = None,
) -> Model:
    """Fit pooled and (if ``per_gpu``) per-GPU curves on rows where ``train[family]`` holds.

    ``progress``, if given, is called with a line at each stage (curves, then trees).
    ``tree_families`` limits the trees to those families (default: every family); a family's
    trees change the predictions of that family alone.

    With ``trees`` (needs scikit-learn), each family with at least :data:`MIN_TREE_ROWS`
    training rows of :data:`MIN_TREE_SHAPES` shapes also gets residual trees
    (:mod:`opsched.cost.boost`) fitted on the log ratio of measured time to the curve's
    prediction, on every training row of the timing methods in ``tree_methods(family)`` (the
    curves use a capped sample, :func:`~opsched.cost.fitdata.cap_rows`; the trees gain from all
    of them: docs/cost-model.md, nineteenth round). The
    trees correct fitted curves, a GPU's own or a same-chip sibling's
    (:mod:`opsched.cost.sibling`); a GPU that transfers the pooled curve through its specs
    keeps it as it is (trees there raised the leave-one-GPU-out error, e.g. A100-PCIe-40GB
    softmax 11 -> 79 %), except for the convolutions
    (:data:`~opsched.cost.boost.POOLED_TREE_FAMILIES`, :func:`~opsched.cost.boost.corrects`).
    ``per_gpu=False`` (no per-GPU curves at all: the pooled curve alone) fits no trees.

    With ``drift``, the trees of a run whose per-call times drift along it (NeuSight's
    convolutions, :mod:`opsched.cost.drift`) learn from its times with the drift (estimated
    on its training rows) taken out; the curves always fit the times as measured.
    ``drift=False``: the trees learn from the measured times too.

    ``families`` fits the curves and trees of those families only (a quick refit while
    working on one family; :func:`opsched.cost.heldout.crossval` passes it on). The kernel
    floors still come from every family's rows and the donor curve from its donor families,
    so those families' fits are the ones a whole fit makes, except where a family's curves
    lack an overhead for a timing method of its rows: that falls back to the median over
    the families fitted, not over all (none on the shipped data, where every family's
    per-call methods were timed on several GPUs; a test checks the backward convolutions).
    """
    say = progress or (lambda _: None)
    say(f"fitting the curves of {len(data.families)} op families")
    model = Model()
    masks = {f: np.ones(len(fd.t), bool) if train is None else train[f]
             for f, fd in data.families.items()}  # fmt: skip
    # a GPU left out (leave-one-GPU-out) has no floor of its own: it transfers (floor_of)
    rows = {f: (fd.t[m], fd.roof[m], fd.gpu[m], fd.method[m])
            for f, fd in data.families.items() for m in (masks[f],)}  # fmt: skip
    model.floors = fit_floors(r for f, r in rows.items() if f not in FLOORLESS_FAMILIES)
    model.family_floors = fit_family_floors(rows)
    borrowing = families is None or bool(set(families) & set(BORROWER_FAMILIES))
    donors = fit_donor(data, masks, per_gpu) if borrowing else {}
    if families is not None:
        data = FitData({f: fd for f, fd in data.families.items() if f in families})
        masks = {f: masks[f] for f in data.families}
    for fam in BORROWER_FAMILIES if donors else ():
        if families is not None and fam not in families:
            continue
        bfd = data.families.get(fam)
        width = feature_matrix(fam, [SAMPLE_ATTRS[fam]], _specs()["T4"]).shape[1]
        pooled, groups = borrower_curves(bfd, masks.get(fam), donors, width, per_gpu)
        if bfd is not None:  # the shapes behind each GPU's curve (opsched.cost.sibling)
            for (gpu, cls), c in groups.items():
                own = masks[fam] & (bfd.gpu == gpu) & (bfd.cls == cls)
                c["shapes"] = shape_counts(bfd.group[own], bfd.method[own])
        model.pooled |= {(fam, c): v for c, v in pooled.items()}
        model.groups |= {(g, fam, c): v for (g, c), v in groups.items()}
    for fam, fd in sorted(data.families.items()):
        if fam in BORROWER_FAMILIES and donors:
            continue
        mask = masks[fam]
        d = fd.x.shape[1]
        roof_prior = np.zeros(d)
        roof_prior[1] = 1.0
        for cls in sorted(set(fd.cls[mask])):
            sel = mask & (fd.cls == cls)
            if sel.sum() < 3:
                continue
            beta, ovh = fit_rows(fd, sel, roof_prior, POOLED_RIDGE)
            pooled_ovh = median_overheads(ovh)
            model.pooled[(fam, cls)] = {"beta": beta, "overheads": pooled_ovh,
                                        "rows": int(sel.sum()), "source": "pooled"}  # fmt: skip
            for gpu in sorted(set(fd.gpu[sel])) if per_gpu else ():
                gsel = sel & (fd.gpu == gpu)
                if gsel.sum() < 3:
                    continue
                gbeta, govh = fit_rows(fd, gsel, beta, GROUP_RIDGE)
                overheads = dict(pooled_ovh) | {m: o for (_, m), o in govh.items()}
                shapes = shape_counts(fd.group[gsel], fd.method[gsel])
                model.groups[(gpu, fam, cls)] = {"beta": gbeta, "overheads": overheads,
                                                 "rows": int(gsel.sum()), "source": "fitted",
                                                 "shapes": shapes}  # fmt: skip
    _fill_overheads(model)
    trees = trees and per_gpu  # per_gpu=False: the pooled curves alone (see predict_family)
    if trees and not _have_sklearn():
        import warnings

        warnings.warn("cost model: scikit-learn missing (pip install opsched[ml]); "
                      "fitting the curves without residual trees", stacklevel=2)  # fmt: skip
        trees = False
    if trees:
        # what the trees learn from: the drift taken out (the curves fit the times as measured)
        target = dedrift(data, masks, say) if drift else data
        for fam, fd in sorted(data.families.items()):
            if tree_families is not None and fam not in tree_families:
                continue
            sel = masks[fam] & np.isin(fd.method, list(tree_methods(fam)))
            if sel.sum() < MIN_TREE_ROWS or np.unique(fd.group[sel]).size < MIN_TREE_SHAPES:
                continue
            say(f"fitting the residual trees of {fam} ({int(sel.sum()):,} rows)")
            base = predict_family(model, fam, fd, sel, floor=False)
            ok = np.isfinite(base) & (base > 0)
            idx = np.nonzero(sel)[0][ok]
            feats = tree_features(
                fd.x[idx], fd.gpu[idx], fd.tree_cls()[idx], fd.method[idx], _specs()
            )
            t = target.families[fam].t[idx]
            model.trees[fam] = fit_trees(feats, np.log(t / base[ok]))
    return model


def sibling_curve(
    model: Model, gpu: str, family: str, cls: str, method: str
) -> dict[str, Any] | None:
    """The curve ``gpu`` borrows from a same-chip GPU for ``method``'s kind of timing, or None.

    A copy of the sibling's fitted curve (its overheads too) with ``source: sibling`` and the
    sibling's name (:func:`opsched.cost.sibling.pick_sibling`).
    """
    found = pick_sibling(gpu, family, cls, method_kind(method), model.groups, _specs())
    if found is None:
        return None
    sib, c = found
    return dict(c) | {"source": "sibling", "sibling": sib}


def _specs() -> Mapping[str, GpuSpec]:
    return load_specs()


def _arch() -> dict[str, str]:
    return {k: s.arch for k, s in load_specs().items()}


def _have_sklearn() -> bool:
    try:
        import sklearn.ensemble  # noqa: F401
    except ImportError:
        return False
    return True


def _fill_overheads(model: Model) -> None:
    """Give every curve an overhead for every timing method that has one anywhere.

    A missing (family, class, method) overhead is taken from the same family's other dtype
    class, else the median over all families of that method.
    """
    by_method: dict[str, list[float]] = {}
    for c in model.pooled.values():
        for m, o in c["overheads"].items():
            by_method.setdefault(m, []).append(o)
    medians = {m: float(np.median(v)) for m, v in by_method.items()}
    for (fam, cls), c in model.pooled.items():
        for m, med in medians.items():
            if m not in c["overheads"]:
                others = [
                    model.pooled[(fam, o)]["overheads"].get(m)
                    for o in ("fp32", "half", "int8")
                    if o != cls and (fam, o) in model.pooled
                ]
                found = [o for o in others if o is not None]
                c["overheads"][m] = found[0] if found else med
    for (_, fam, cls), c in model.groups.items():
        c["overheads"] = dict(model.pooled[(fam, cls)]["overheads"]) | c["overheads"]


def predict_family(
    model: Model, fam: str, fd: FamilyData, sel: np.ndarray, floor: bool = True
) -> np.ndarray:
    """Predicted times of the selected rows of one family (NaN where no curve exists).

    Each row takes :meth:`Model.curve` for its GPU, class and method. Rows priced by a fitted
    curve (the GPU's own or a same-chip sibling's) whose method is in ``tree_methods(fam)`` are
    multiplied by ``exp`` of the family's residual trees, if it has any (pooled curves too for
    :data:`~opsched.cost.boost.POOLED_TREE_FAMILIES`). With ``floor``, every
    prediction is then held at or above its roofline
    (:func:`~opsched.cost.limits.roofline_bound`) and raised to its GPU's kernel floor
    (:mod:`opsched.cost.floor`), and to the family's floor where it has one; the trees are
    fitted on the residual of the unbounded, unfloored curve (``floor=False``).
    """
    idx = np.nonzero(sel)[0]
    out = _predict_rows(model, fam, fd, idx)
    if floor:  # as Profile.predict bounds its prices (the trees see the unbounded curve)
        gpus, at = np.unique(fd.gpu[idx], return_inverse=True)
        l2 = np.array([load_specs()[str(g)].l2_us for g in gpus])[at]  # the L2's DRAM time
        out = roofline_bound(fam, out, fd.roof[idx], l2)
        tw = np.zeros(len(idx), bool) if fd.twin is None else fd.twin[idx].copy()
        pairs = {(str(g), str(m)) for g, m in zip(fd.gpu[idx][tw], fd.method[idx][tw], strict=True)}
        for g, m in pairs:  # as Profile.predict: limits.twin_bounds
            if not twin_bounds(model.curve(g, fam, "half", m), model.curve(g, fam, "fp32", m), fam):
                tw &= ~((fd.gpu[idx] == g) & (fd.method[idx] == m))
        if tw.any():  # a half-precision op costs at most its float32 twin
            j = idx[tw]
            t32 = roofline_bound(fam, _predict_rows(model, fam, _twins(fd), j), fd.roof32[j],
                                 l2[tw])  # fmt: skip
            out[tw] = np.where(np.isnan(out[tw]), out[tw], np.fmin(out[tw], t32))
        if fd.bound is not None:  # a convolution's price is at least its bound, last
            out = np.where(np.isnan(out), out, np.maximum(out, fd.bound[idx]))
    for gpu in np.unique(fd.gpu[idx]) if floor else ():
        rows = fd.gpu[idx] == gpu
        fl = floor_of(model.floors, str(gpu), _arch())[0]
        kernel = ~np.isin(fd.method[idx][rows], list(FREE_OVERHEAD_METHODS))
        out[rows] = np.where(kernel, streaming_cap(fam, out[rows], fd.roof[idx][rows]),
                             out[rows])  # fmt: skip
        if fam.startswith("elementwise"):  # kernel times, as Profile.predict prices them
            cap = np.where(kernel, elementwise_cap(fd.roof[idx][rows], fl), np.inf)
            out[rows] = np.fmin(out[rows], cap)
        if fam in model.family_floors:
            fl = max(fl, floor_of(model.family_floors[fam], str(gpu), _arch())[0])
        out[rows] = apply_floor(out[rows], fl)
    return out


def fitted_on_traces(c: Mapping[str, Any]) -> bool:
    """Whether ``c`` is a GPU's own curve (or a sibling's) fitted on profiler (``cupti``)
    rows of that GPU (its ``shapes``, or ``profiler`` as a shipped curve states it;
    :func:`opsched.cost.boost.tree_method`). A pooled curve never is, though its rows may
    hold some GPU's profiler rows: it records no shapes."""
    return bool(c.get("profiler") or c.get("shapes", {}).get("profiler"))


def _twins(fd: FamilyData) -> FamilyData:
    """``fd`` with every row replaced by its float32 twin (meaningful on ``fd.twin`` rows)."""
    fp32 = np.full(len(fd.t), "fp32")
    return replace(fd, x=fd.x32, roof=fd.roof32, x_pads=fd.x32_pads, cls=fp32, tcls=fp32)


def _predict_rows(model: Model, fam: str, fd: FamilyData, idx: np.ndarray) -> np.ndarray:
    """Curve (and trees) predictions of rows ``idx`` of ``fd``: each row's least over its own
    features and its paddings' (``fd.x_pads``: a small op costs at most its paddings)."""
    classes = fd.cls[idx].astype(object)
    for i in np.nonzero(fd.tree_cls()[idx] == HALF_FP32_MATH)[0]:
        classes[i] = model.fp32_math_class(fd.gpu[idx[i]], fam, fd.method[idx[i]])
    groups: dict[tuple[Any, ...], list[int]] = {}
    for pos, key in enumerate(zip(fd.gpu[idx], classes, fd.method[idx], strict=True)):
        groups.setdefault(key, []).append(pos)
    plan = []  # (rows, beta, overhead) per (GPU, class, method) with a curve
    corrected = np.zeros(len(idx), bool)  # rows whose curve the trees correct
    read_as = np.full(len(idx), "", dtype=object)  # the method the trees read (tree_method)
    for key in sorted(groups):
        gpu, cls, method = key
        c = model.curve(gpu, fam, cls, method)
        if c is None:
            continue
        rows = np.array(groups[key])
        o = c["overheads"].get(method, 0.0) if method in FREE_OVERHEAD_METHODS else 0.0
        plan.append((rows, np.asarray(c["beta"]), o))
        corrected[rows] = corrects(fam, c.get("source"))
        read_as[rows] = tree_method(fam, method, fitted_on_traces(c)) or ""
    ens = model.trees.get(fam)
    use = (read_as != "") & corrected
    best = np.full(len(idx), np.nan)
    for x in (fd.x, *fd.x_pads):
        out = np.full(len(idx), np.nan)
        for rows, beta, o in plan:
            out[rows] = predict_curve(x[idx[rows]], beta, o)
        if ens is not None and use.any():
            j = idx[use]
            feats = tree_features(x[j], fd.gpu[j], fd.tree_cls()[j], read_as[use], _specs())
            out[use] *= np.exp(np.clip(ens.predict(feats), -3.0, 3.0))
        best = np.fmin(best, out)
    return best

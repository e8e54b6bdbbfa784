"""Held-out error of the cost-model fit: grouped k-fold and leave-one-GPU-out.

Both refit the whole procedure of :func:`opsched.cost.fit.fit_model` (pooled curves,
per-GPU curves, residual trees) without the rows they then predict.

Examples
--------
>>> from opsched.cost.fit import load_fit_data
>>> data = load_fit_data(files=["deepbench_conv.csv"], limit=60)
>>> folds = fold_of(data, k=3)
>>> fd, f = data.families["conv2d"], folds["conv2d"]
>>> all(len(set(f[fd.group == g])) == 1 for g in set(fd.group))   # a shape stays in one fold
True
"""

from __future__ import annotations

import zlib
from collections.abc import Collection, Iterable

import numpy as np

from opsched.cost.boost import POOLED_TREE_FAMILIES
from opsched.cost.fit import FamilyData, FitData, fit_model, predict_family
from opsched.cost.sibling import siblings
from opsched.cost.specs import load_specs

__all__ = ["crossval", "fold_of", "leave_one_gpu_out", "scored_families"]


def fold_of(data: FitData, k: int = 5, seed: int = 0) -> dict[str, np.ndarray]:
    """Fold index of every row, drawn per shape group, not per row.

    The groups are :func:`opsched.cost.fitdata.shape_key`.

    Rows of one shape (the same op on other GPUs, by other sources, or repeated in a trace)
    share a fold: a random split per row would score a model on shapes it was trained on.
    A shape's fold is a hash of its key and ``seed`` alone (CRC-32 modulo ``k``), so rows
    added for new shapes, in this family or another, move no existing shape to another fold:
    a before / after comparison of a data change scores the old rows on the same folds.
    (Drawing the folds in the order of the sorted keys, as before, redrew most of them when
    the H200's bfloat16 convolutions added new keys: conv backward data read 13.4 -> 15.2 %
    with its folds redrawn, 14.4 -> 14.2 % on folds that stayed put.)
    """
    out = {}
    for f, fd in sorted(data.families.items()):
        uniq, inverse = np.unique(fd.group, return_inverse=True)
        code = np.array([zlib.crc32(f"{seed}|{g}".encode()) % k for g in uniq], dtype=int)
        out[f] = code[inverse]
    return out


def scored_families(
    data: FitData, families: Collection[str] | None = None
) -> dict[str, FamilyData]:
    """The families a run scores: all of ``data``'s, or those of them named in ``families``."""
    return {f: fd for f, fd in data.families.items() if families is None or f in families}


def crossval(
    data: FitData,
    k: int = 5,
    seed: int = 0,
    trees: bool = True,
    drift: bool = True,
    families: Collection[str] | None = None,
) -> dict[str, np.ndarray]:
    """k-fold held-out predictions: family -> predicted time of every row (fold-wise fits).

    Folds are grouped by shape (:func:`fold_of`); ``trees`` adds the residual trees;
    ``drift=False`` fits drifting runs as measured; ``families``: only those families
    (:func:`~opsched.cost.fit.fit_model`).
    """
    folds = fold_of(data, k, seed)
    scored = scored_families(data, families)
    pred = {f: np.full(len(fd.t), np.nan) for f, fd in scored.items()}
    for i in range(k):
        train = {f: folds[f] != i for f in folds}
        model = fit_model(data, train, trees=trees, drift=drift, families=families)
        for f, fd in scored.items():
            sel = folds[f] == i
            pred[f][sel] = predict_family(model, f, fd, sel)
    return pred


def leave_one_gpu_out(
    data: FitData,
    gpus: Iterable[str],
    trees: bool = True,
    sibling: bool = True,
    drift: bool = True,
    families: Collection[str] | None = None,
) -> dict[str, dict[str, np.ndarray]]:
    """For each GPU: fit without its rows, predict them as a GPU without timings is priced.

    That is, through its specs: the curve of a same-chip GPU fitted on the same kind of
    timing where one exists (:mod:`opsched.cost.sibling`; with ``trees`` corrected by the
    residual trees, as that GPU's own curve would be), else the pooled curve (corrected by
    the trees of :data:`~opsched.cost.boost.POOLED_TREE_FAMILIES` too).
    ``sibling=False`` fits no per-GPU curves, so every left-out GPU gets the pooled curve
    (and ``trees`` then changes nothing). ``drift`` and ``families`` as in :func:`crossval`.

    Returns gpu -> family -> predictions of that GPU's rows (NaN for rows of other GPUs).
    """
    scored = scored_families(data, families)
    out: dict[str, dict[str, np.ndarray]] = {}
    for gpu in gpus:
        train = {f: fd.gpu != gpu for f, fd in data.families.items()}
        # without a same-chip GPU the per-GPU curves (and trees) would change nothing but the
        # convolutions' trees, which correct its pooled curve too; trees of a family the GPU
        # has no rows of price none of them
        held = {f for f, t in train.items() if not t.all()}
        near = bool(siblings(gpu, load_specs()))
        if not near:  # only the convolutions' trees would price its rows
            held &= POOLED_TREE_FAMILIES
        per_gpu = sibling and (near or bool(held))
        model = fit_model(data, train, per_gpu=per_gpu, trees=trees, tree_families=held,
                          drift=drift, families=families)  # fmt: skip
        out[gpu] = {}
        for f, fd in scored.items():
            pred = np.full(len(fd.t), np.nan)
            sel = fd.gpu == gpu
            if sel.any():
                pred[sel] = predict_family(model, f, fd, sel)
            out[gpu][f] = pred
    return out

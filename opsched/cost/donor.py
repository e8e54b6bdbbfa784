"""Memory-bound transfer: price families with few shapes from a shared memory-bound curve.

Pooling, reductions and batch norm are timed only in a few profiler traces (1, 58 and 12
distinct shapes): too few to fit a size curve of their own, and a held-out shape of a
family with one shape would get only the bare roofline. Embedding lookups have many shapes
but only two GPUs, too few for a curve that transfers to a third. They move data like the families
with thousands of shapes (elementwise, softmax, the norms), so their time is modelled as

``ln t = donor(gpu, generic features) + x . gamma(family)``

where the *donor* is one curve over the generic columns of
:func:`~opsched.cost.features.feature_matrix` (intercept, log roofline time and its hinges,
arithmetic intensity), fitted on the donor families' rows (pooled over GPUs, then per GPU,
pulled towards the pooled one), and ``gamma`` is the borrower family's correction, fitted on
its own rows with the donor as a fixed offset and a ridge pull towards zero. The generic
columns mean the same in every family, so ``donor + gamma`` is an ordinary curve
coefficient vector and ships like any other. A borrower with no rows at all is priced by
the donor alone, through each GPU's own donor curve where it has one.

Examples
--------
>>> import numpy as np
>>> from opsched.cost.fitdata import load_fit_data
>>> data = load_fit_data(files=["hta_ops.csv.gz"], limit=3000)
>>> donors = fit_donor(data, {f: np.ones(len(fd.t), bool) for f, fd in data.families.items()})
>>> sorted(str(cls) for g, cls in donors if g == "*"), len(donors[("*", "fp32")]["beta"])
(['fp32'], 8)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from opsched.cost.fitdata import FamilyData, FitData, fit_rows, median_overheads

__all__ = [
    "BORROWER_FAMILIES",
    "BORROW_RIDGE",
    "DONOR_FAMILIES",
    "N_GENERIC",
    "borrower_curves",
    "donor_offset",
    "fit_donor",
]

#: Memory-bound families with many shapes whose rows fit the donor curve.
DONOR_FAMILIES: tuple[str, ...] = (
    "elementwise_unary", "elementwise_binary", "softmax", "layernorm", "rmsnorm",
)  # fmt: skip
#: Families priced as the donor plus their own ridge-pulled correction. Their arithmetic
#: intensity (0.25-0.45 FLOP per byte) lies inside the donors' (0.1-1); ``copy`` (no FLOPs,
#: intensity clipped at e^-8) does not, and the donor extrapolated there fell to half the
#: roofline (L4, 2^20 fp32 elements: 13 us against a 28 us roofline); copy is priced as a
#: unary elementwise kernel instead (:func:`opsched.cost.features.family_of`).
#: ``embedding`` has thousands of shapes but on two GPUs only (Vidur's A100-SXM4-80GB and
#: H100-SXM5): its own pooled curve, fitted on one GPU when the other is left out, transferred
#: at 28.0 / 39.1 % (leave-one-GPU-out median); as a borrower 17.5 / 20.5 %, with the k-fold
#: median unchanged (3.9 %).
BORROWER_FAMILIES: tuple[str, ...] = ("pool", "reduce", "batchnorm", "embedding")
#: Generic feature columns shared by every family (intercept, u, 4 hinges, v, max(v, 0)).
#: Without the intensity terms the held-out pool shape rose from 12 to 37 %.
N_GENERIC = 8
DONOR_POOLED_RIDGE = 1.0
DONOR_GROUP_RIDGE = 3.0
#: Ridge of a borrower's correction towards zero (units of one row's squared log error).
BORROW_RIDGE = 10.0
#: Ridge of a GPU's own borrower curve towards donor + correction.
BORROW_GROUP_RIDGE = 1000.0

#: A donor fit: (gpu or "*" for pooled, dtype class) -> {"beta": ..., "overheads": ...}.
Donors = dict[tuple[str, str], dict[str, Any]]


def _stack(data: FitData, train: Mapping[str, np.ndarray]) -> FamilyData | None:
    parts = [(f, data.families[f]) for f in DONOR_FAMILIES if f in data.families]
    parts = [(f, fd) for f, fd in parts if train[f].any()]
    if not parts:
        return None
    cat = lambda name: np.concatenate([getattr(fd, name)[train[f]] for f, fd in parts])  # noqa: E731
    return FamilyData(
        x=np.concatenate([fd.x[train[f], :N_GENERIC] for f, fd in parts]), t=cat("t"),
        roof=cat("roof"), gpu=cat("gpu"), method=cat("method"), cls=cat("cls"),
        source=cat("source"), group=cat("group"),
    )  # fmt: skip


def fit_donor(data: FitData, train: Mapping[str, np.ndarray], per_gpu: bool = True) -> Donors:
    """Fit the donor curve per dtype class: pooled (key ``"*"``) and per GPU.

    Parameters
    ----------
    data
        All timing rows.
    train
        Family -> boolean mask of the rows the fit may use.
    per_gpu
        Also fit one curve per GPU with donor rows, pulled towards the pooled one.

    Returns
    -------
    dict
        ``(gpu or "*", class) -> {"beta": 8 coefficients, "overheads": {method: us}}``.
    """
    fd = _stack(data, train)
    out: Donors = {}
    if fd is None:
        return out
    prior = np.zeros(N_GENERIC)
    prior[1] = 1.0
    for cls in sorted(set(fd.cls)):
        sel = fd.cls == cls
        if sel.sum() < 3:
            continue
        beta, ovh = fit_rows(fd, sel, prior, DONOR_POOLED_RIDGE)
        pooled_ovh = median_overheads(ovh)
        out[("*", cls)] = {"beta": beta, "overheads": pooled_ovh}
        for gpu in sorted(set(fd.gpu[sel])) if per_gpu else ():
            gsel = sel & (fd.gpu == gpu)
            if gsel.sum() < 3:
                continue
            gbeta, govh = fit_rows(fd, gsel, beta, DONOR_GROUP_RIDGE)
            own = {m: o for (_, m), o in govh.items()}
            out[(gpu, cls)] = {"beta": gbeta, "overheads": pooled_ovh | own}
    return out


def donor_beta(donors: Donors, gpu: str, cls: str) -> dict[str, Any] | None:
    """The GPU's donor curve of ``cls``, else the pooled one, else the pooled one of any class."""
    for key in ((gpu, cls), ("*", cls), ("*", "fp32"), ("*", "half"), ("*", "int8")):
        if key in donors:
            return donors[key]
    return None


def donor_offset(donors: Donors, fd: FamilyData, sel: np.ndarray) -> np.ndarray:
    """The donor's log kernel time of every row of ``fd`` (0 outside ``sel``).

    Each row uses its own GPU's donor curve when there is one, else the pooled curve.

    Examples
    --------
    >>> fd = FamilyData(x=np.ones((2, 9)), t=np.ones(2), roof=np.ones(2),
    ...                 gpu=np.array(["T4", "P4"]), method=np.array(["cupti"] * 2),
    ...                 cls=np.array(["fp32"] * 2), source=np.array(["p"] * 2),
    ...                 group=np.array(["a", "b"]))
    >>> d = {("*", "fp32"): {"beta": np.full(8, 0.5)}, ("T4", "fp32"): {"beta": np.ones(8)}}
    >>> donor_offset(d, fd, np.array([True, True])).tolist()
    [8.0, 4.0]
    """
    out = np.zeros(len(fd.t))
    idx = np.nonzero(sel)[0]
    for gpu, cls in sorted(set(zip(fd.gpu[idx], fd.cls[idx], strict=True))):
        c = donor_beta(donors, str(gpu), str(cls))
        if c is None:
            continue
        rows = idx[(fd.gpu[idx] == gpu) & (fd.cls[idx] == cls)]
        out[rows] = fd.x[rows, :N_GENERIC] @ np.asarray(c["beta"])
    return out


def padded(beta: np.ndarray, width: int) -> np.ndarray:
    """A donor's generic coefficients extended with zeros to a family's ``width`` columns.

    Examples
    --------
    >>> padded(np.ones(8), 10).tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    """
    out = np.zeros(width)
    out[:N_GENERIC] = beta
    return out


def borrower_curves(
    fd: FamilyData | None,
    mask: np.ndarray | None,
    donors: Donors,
    width: int,
    per_gpu: bool = True,
) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]:
    """Curves of one borrower family: donor plus the family's fitted correction.

    Parameters
    ----------
    fd, mask
        The family's rows and the training mask (None: the family has no rows at all).
    donors
        :func:`fit_donor`'s curves.
    width
        The family's number of feature columns.
    per_gpu
        Also give every GPU with a donor curve (or own rows) its own curve.

    Returns
    -------
    pooled, groups
        ``class -> curve`` and ``(gpu, class) -> curve`` in the form of
        :class:`opsched.cost.fit.Model` (``beta``, ``overheads``, ``rows``, ``source``: ``pooled``;
        per GPU ``fitted`` with own rows, else ``donor``).
    """
    pooled: dict[str, dict[str, Any]] = {}
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for cls in sorted({c for g, c in donors if g == "*"}):
        base = donors[("*", cls)]
        sel = np.zeros(0, bool) if fd is None or mask is None else mask & (fd.cls == cls)
        gamma = pooled_gamma = np.zeros(width)
        if fd is not None and sel.sum() >= 3:
            # the pooled curve is what a GPU without memory-bound timings gets, the pooled
            # donor plus the correction: fitted against that same donor, while each GPU's
            # curve below starts from the correction against its own donor
            pooled_gamma, _ = fit_rows(
                fd, sel, gamma, BORROW_RIDGE, offset=donor_offset({("*", cls): base}, fd, sel)
            )
            if per_gpu:
                gamma, _ = fit_rows(fd, sel, gamma, BORROW_RIDGE,
                                    offset=donor_offset(donors, fd, sel))  # fmt: skip
        rows = int(sel.sum())
        pooled[cls] = {"beta": padded(base["beta"], width) + pooled_gamma, "rows": rows,
                       "overheads": dict(base["overheads"]), "source": "pooled"}  # fmt: skip
        if not per_gpu:
            continue
        own = set() if fd is None else set(fd.gpu[sel].tolist())
        for gpu in sorted(own | {g for g, c in donors if c == cls and g != "*"}):
            d = donors.get((gpu, cls), base)
            beta = padded(d["beta"], width) + gamma
            source, n = "donor", 0
            if fd is not None and gpu in own:
                gsel = sel & (fd.gpu == gpu)
                n = int(gsel.sum())
                if n >= 3:
                    beta, _ = fit_rows(fd, gsel, beta, BORROW_GROUP_RIDGE)
                    source = "fitted"
            groups[(gpu, cls)] = {"beta": beta, "overheads": dict(d["overheads"]), "rows": n,
                                  "source": source}  # fmt: skip
    return pooled, groups

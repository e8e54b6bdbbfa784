"""Run drift: a per-call overhead that grows along one long timing run.

NeuSight timed about 5,000 distinct convolutions per GPU in one process each, in the same
order on every GPU (CUDA events around one PyTorch call, ``cudnn.benchmark=True``). Its
per-call times carry a host-side cost that grows along that run:

- the fastest call among the first 500 of a GPU's run takes 59-108 us, among the last 500
  300-758 us (A100-PCIe-80GB ... P100-PCIe), though the shapes are drawn alike throughout;
- held out, the model's residuals rise steadily along the run by 270 us (A100-PCIe-80GB) to
  650 us (P100-PCIe), about as many microseconds for small convolutions as for large ones:
  an additive cost, not a factor (removing it as a factor gains nothing);
- the same shape's residuals on different GPUs are correlated (0.7-0.9), because it sits at
  the same place in every GPU's run; no feature of the shape predicts them;
- NeuSight's GEMM and norm runs show no such trend, nor do our H200's convolutions timed
  with NeuSight's shapes in a fresh process (a run of 186).

The drift is a property of that collection, not of the op, and a new timing's row says
nothing about its place in a run. The residual trees, which have the capacity to learn each
shape's own residual, learned it as a property of the shape. So the trees learn from the
times with the drift taken out, and predict the median place of the run: for each GPU's
run of a drifting kind (:data:`DRIFT_RUNS`), a curve is fitted on the run's training rows
alone, the residual ``measured - curve`` is summarised by its median in :data:`DRIFT_BINS`
equal slices of the run, interpolated between the slices' centres and shifted so that the
median slice is 0; each row's time minus that drift (kept to at least half the time,
:data:`MIN_KEPT`) is the trees' target. Held out (5-fold by shape), the forward
convolution's median error falls from 10.3 / 10.4 % to 9.7 / 9.7 % (fold seeds 0 / 1).

The curves keep fitting the times as measured. Fitted on the times without the drift as
well, they gave the same k-fold error but split per-call time into dispatch and kernel
differently, and the kernel times checked against kernel timings got worse: V100-SXM2's
profiler convolutions priced from the V100-PCIe's curve (leave-one-GPU-out) 24.5 -> 28.7 %,
the H200's kernel-timed convolutions from the pooled curve 31.4 -> 38.8 %
(docs/cost-model.md, twenty-first round, has these runs).

A fresh process calls a convolution faster than the model's ``events`` price says: the
drift at the start of a run is 90-290 us below its median (``opsched cost fit`` prints it
per GPU).

Examples
--------
>>> import numpy as np
>>> run_positions(np.array(["a", "a", "b", "a", "b"]))
array([0.        , 0.33333333, 0.        , 0.66666667, 0.5       ])
>>> pos = (np.arange(400) + 0.5) / 400
>>> resid = 100 * pos + np.where(np.arange(400) % 2 == 0, 5.0, -5.0)   # a steady rise
>>> centres, levels = drift_levels(pos, resid)
>>> [round(float(v)) for v in levels]            # 0 at the median slice (here between two)
[-45, -35, -25, -15, -5, 5, 15, 25, 35, 45]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np

from opsched.cost.curve import predict_curve
from opsched.cost.fitdata import FamilyData, FitData, fit_rows

__all__ = [
    "DRIFT_BINS",
    "DRIFT_RUNS",
    "MIN_DRIFT_ROWS",
    "MIN_KEPT",
    "dedrift",
    "drift_levels",
    "run_positions",
]

#: (timing table, family, timing method) whose runs drift (the evidence: module docstring).
#: A run is one table's rows of one GPU and method, in the table's order.
DRIFT_RUNS: frozenset[tuple[str, str, str]] = frozenset(
    {("neusight_ops.csv.gz", "conv2d", "events")}
)
#: Equal slices of a run whose median residuals trace its drift.
DRIFT_BINS = 10
#: Least training rows of a run for a drift to be estimated (fewer: left as measured).
MIN_DRIFT_ROWS = 20 * DRIFT_BINS
#: A time with its drift taken out keeps at least this share of the measured time.
MIN_KEPT = 0.5


def run_positions(run: np.ndarray) -> np.ndarray:
    """Each row's place in its run, in [0, 1): its rank among the rows of the same ``run``
    key (in the order given, the order timed) over the run's length."""
    pos = np.zeros(len(run))
    for key in np.unique(run):
        idx = np.nonzero(run == key)[0]
        pos[idx] = np.arange(idx.size) / idx.size
    return pos


def drift_levels(
    pos: np.ndarray, resid: np.ndarray, bins: int = DRIFT_BINS
) -> tuple[np.ndarray, np.ndarray]:
    """A run's drift as ``(centres, levels)``: the median of ``resid`` over each of ``bins``
    equal slices of the run, at the slice's mean position, minus the median of those medians
    (so the median place of the run is 0). ``np.interp(p, centres, levels)`` is the drift
    at any place ``p``."""
    b = np.minimum((pos * bins).astype(int), bins - 1)
    keep = [i for i in range(bins) if (b == i).any()]
    centres = np.array([pos[b == i].mean() for i in keep])
    medians = np.array([np.median(resid[b == i]) for i in keep])
    return centres, medians - float(np.median(medians))


def dedrift(
    data: FitData,
    masks: Mapping[str, np.ndarray],
    say: Callable[[str], None] | None = None,
) -> FitData:
    """``data`` with the drift of every drifting run (:data:`DRIFT_RUNS`) taken out of its
    times, estimated on the rows where ``masks[family]`` holds (the training rows).

    Families without drifting rows (or without run positions) are returned as they are; so
    is every row outside such runs. ``say`` gets one line per run: its drift over the first
    and the last slice, relative to the median place.
    """
    out = dict(data.families)
    for fam, fd in data.families.items():
        if fd.run_pos is None or not np.isfinite(fd.run_pos).any():
            continue
        drifting = np.isfinite(fd.run_pos)
        t = fd.t.copy()
        keys = zip(fd.gpu[drifting], fd.cls[drifting], fd.method[drifting], strict=True)
        for gpu, cls, method in sorted(set(keys)):
            run = drifting & (fd.gpu == gpu) & (fd.cls == cls) & (fd.method == method)
            t[run] = _dedrift_run(fd, run, run & masks[fam], gpu, fam, say)
        out[fam] = replace(fd, t=t)
    return FitData(out)


def _dedrift_run(
    fd: FamilyData,
    run: np.ndarray,
    train: np.ndarray,
    gpu: str,
    fam: str,
    say: Callable[[str], None] | None,
) -> np.ndarray:
    """The times of ``run``'s rows with the run's drift taken out (as measured when the run
    has fewer than :data:`MIN_DRIFT_ROWS` training rows)."""
    if train.sum() < MIN_DRIFT_ROWS or fd.run_pos is None:
        return fd.t[run]
    prior = np.zeros(fd.x.shape[1])
    prior[1] = 1.0  # the roofline term, as the pooled curves start from
    method = str(fd.method[run][0])
    beta, overheads = fit_rows(fd, train, prior, 1.0)  # the pooled curves' ridge
    resid = fd.t[train] - predict_curve(fd.x[train], beta, overheads.get((gpu, method), 0.0))
    centres, levels = drift_levels(fd.run_pos[train], resid)
    drift = np.interp(fd.run_pos[run], centres, levels)
    if say is not None:
        say(f"run drift of {fam} {method} on {gpu}: {levels[0]:+.0f} us over the run's first "
            f"tenth, {levels[-1]:+.0f} us over its last (0 at its median place)")  # fmt: skip
    return np.maximum(fd.t[run] - drift, MIN_KEPT * fd.t[run])

"""The calibrated curve: ``time = overhead(method) + exp(x . beta)``, fitted in log space.

``x`` are the features of :func:`opsched.cost.features.feature_matrix` (piecewise linear in the
log roofline time plus log-shape terms), so ``exp(x . beta)`` is the kernel time and
``beta`` encodes how far below the roofline the GPU runs at each size. ``overhead`` is a fixed
time added by the timing method: NeuSight's CUDA events around one PyTorch call include the
dispatch, DeepBench's wall clock some launch latency; Vidur and profiler (CUPTI) times are pure
kernel time and get none.

:func:`fit_curve` minimises a robust (soft-L1) loss of the log error, with a ridge pull of
``beta`` towards a prior (the curve pooled over all GPUs), so a group with few rows stays near
the pooled shape and a group with many rows follows its own data.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> x = np.column_stack([np.ones(200), rng.uniform(0, 6, 200)])
>>> t = 30.0 + np.exp(x @ np.array([0.5, 1.0]))   # 30 us overhead, kernel e^(0.5 + u)
>>> fit = fit_curve(x, t, np.zeros(200, dtype=int), free=[True], ridge=1e-9)
>>> np.round(fit.beta, 2).tolist(), round(fit.overheads[0], 1)
([0.5, 1.0], 30.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["FREE_OVERHEAD_METHODS", "CurveFit", "fit_curve", "predict_curve"]

#: Timing methods whose rows carry a fitted fixed overhead.
FREE_OVERHEAD_METHODS = frozenset({"events", "wallclock"})


@dataclass(frozen=True)
class CurveFit:
    """A fitted curve: ``beta`` and one overhead (us) per overhead slot."""

    beta: np.ndarray
    overheads: list[float]
    n: int


def predict_curve(
    x: np.ndarray, beta: np.ndarray, overhead: float | np.ndarray = 0.0
) -> np.ndarray:
    """``overhead + exp(x . beta)`` in microseconds (the exponent is clipped to stay finite)."""
    return overhead + np.exp(np.clip(x @ beta, -20.0, 25.0))


def fit_curve(
    x: np.ndarray,
    t: np.ndarray,
    slot: np.ndarray,
    free: Sequence[bool],
    prior: np.ndarray | None = None,
    ridge: float = 1.0,
    f_scale: float = 0.1,
    max_iter: int = 100,
    offset: np.ndarray | None = None,
) -> CurveFit:
    """Fit ``beta`` and the free overheads to times ``t`` (us, all > 0).

    Parameters
    ----------
    x
        Design matrix, one row per timing.
    t
        Measured times in microseconds.
    slot
        Overhead slot of each row (index into ``free``): one per (GPU, timing method).
    free
        Whether each slot has a fitted overhead (else 0).
    prior
        Ridge target for ``beta`` (zeros when None).
    ridge
        Ridge weight, in units of one row's squared log error.
    f_scale
        Soft-L1 scale of the log error (0.1 = errors beyond ~10 % count linearly).
    max_iter
        Most Levenberg-Marquardt iterations.
    offset
        Fixed log-time term per row (a donor curve's prediction): the kernel time is then
        ``exp(offset + x . beta)`` and ``beta`` is the correction to the donor.
    """
    n, d = x.shape
    off = np.zeros(n) if offset is None else np.asarray(offset, dtype=float)
    lt = np.log(t)
    b0 = np.zeros(d) if prior is None else np.asarray(prior, dtype=float)
    # Start: ridge least squares on the log times, overheads at a third of each slot's least time.
    beta = np.linalg.solve(x.T @ x + ridge * np.eye(d), x.T @ (lt - off) + ridge * b0)
    free_idx = [j for j, f in enumerate(free) if f]
    pos = {j: i for i, j in enumerate(free_idx)}
    theta = np.array(
        [np.log(max(0.3 * float(t[slot == j].min()), 0.05)) if (slot == j).any() else 0.0
         for j in free_idx]
    )  # fmt: skip
    q = len(free_idx)
    row_param = np.array([pos.get(int(s), -1) for s in slot], dtype=int)
    has = row_param >= 0
    onehot = np.zeros((n, q))
    onehot[np.nonzero(has)[0], row_param[has]] = 1.0

    def evaluate(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k = np.exp(np.clip(off + x @ p[:d], -20.0, 25.0))
        o = onehot @ np.exp(np.clip(p[d:], -10.0, 10.0)) if q else np.zeros(n)
        return k, o, np.log(o + k) - lt

    def cost(p: np.ndarray, r: np.ndarray) -> float:
        z = (r / f_scale) ** 2
        robust = 2.0 * f_scale**2 * float(np.sum(np.sqrt(1.0 + z) - 1.0))
        return robust + ridge * float(np.sum((p[:d] - b0) ** 2))

    # Levenberg-Marquardt on the soft-L1 loss by iteratively reweighted normal equations.
    p = np.concatenate([beta, theta])
    k, o, r = evaluate(p)
    c = cost(p, r)
    damping = 1e-3
    reg = np.zeros((d + q, d + q))
    reg[:d, :d] = ridge * np.eye(d)
    for _ in range(max_iter):
        pred = o + k
        jm = np.hstack([(k / pred)[:, None] * x, (o / pred)[:, None] * onehot])
        w = 1.0 / np.sqrt(1.0 + (r / f_scale) ** 2)
        a = jm.T @ (w[:, None] * jm) + reg
        g = jm.T @ (w * r)
        g[:d] += ridge * (p[:d] - b0)
        improved = False
        while damping < 1e8:
            step = np.linalg.solve(a + damping * np.diag(np.diag(a) + 1e-12), -g)
            p_new = p + step
            k_new, o_new, r_new = evaluate(p_new)
            c_new = cost(p_new, r_new)
            if c_new < c:
                improved = True
                break
            damping *= 10.0
        if not improved:
            break
        rel = (c - c_new) / max(c, 1e-300)
        p, k, o, r, c = p_new, k_new, o_new, r_new, c_new
        damping = max(damping / 10.0, 1e-9)
        if rel < 1e-9:
            break
    beta = p[:d]
    overheads = [0.0] * len(free)
    for j, i in pos.items():
        overheads[j] = float(np.exp(np.clip(p[d + i], -10.0, 10.0)))
    return CurveFit(beta=beta, overheads=overheads, n=n)

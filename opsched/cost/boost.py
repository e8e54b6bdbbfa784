"""The residual trees: gradient boosting on what the calibrated curve gets wrong.

The hybrid model is ``time = curve(op, gpu, method) * exp(r)``, where ``r`` is predicted by
boosted trees (one ensemble per op family, pooled over all GPUs) from :func:`tree_features`:
the curve's own features (log roofline time on the op's GPU, its hinges, intensity, log
dims, tile waves and SM fill, conv flags), the timing method, the dtype class and three
spec columns of the op's GPU (log SM count, log bandwidth, log FP32 peak). The curve
carries the physics and the extrapolation (to other GPUs through their specs, to sizes
outside the data); the trees learn bounded, shape-dependent corrections such as cuDNN's
algorithm switches, which differ by GPU generation, hence the spec columns. They correct
GPUs with timings of their own (or a same-chip sibling's): a GPU without them (or left out
in the leave-one-GPU-out benchmark) keeps the curve, so the spec columns cannot overfit a
transfer, except for the convolutions (:data:`POOLED_TREE_FAMILIES`), whose corrections
carry to other GPUs.
The trees minimise the absolute error of the log ratio (a median fit), which is what the
accuracy goal measures; the square loss let a few outliers (NeuSight's per-call dispatch
spikes) pull every leaf (docs/cost-model.md, seventh round).

Training needs scikit-learn (the ``ml`` extra); the fitted trees ship as JSON and are
evaluated with numpy (:mod:`opsched.cost.trees`).

Examples
--------
>>> import numpy as np
>>> from opsched.cost.specs import load_specs
>>> f = tree_features(np.ones((2, 4)), np.array(["T4", "H100-SXM5"]),
...                   np.array(["half", "fp32"]), np.array(["kernel", "events"]), load_specs())
>>> f.shape, f[:, 3].tolist()          # 3 curve columns, method, class, 3 spec columns
((2, 8), [0.0, 2.0])
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from opsched.cost.specs import GpuSpec
from opsched.cost.trees import TreeEnsemble, from_sklearn

__all__ = [
    "LARGE_TREE_ROWS",
    "METHOD_CODES",
    "POOLED_TREE_FAMILIES",
    "SMALL_TREE_PARAMS",
    "TREE_METHODS",
    "TREE_METHODS_BY_FAMILY",
    "TREE_PARAMS",
    "corrects",
    "fit_trees",
    "tree_features",
    "tree_method",
    "tree_methods",
]

#: Timing methods the trees are fitted on and applied to: the shape sweeps (NeuSight events,
#: DeepBench wall clock, Vidur kernel time). Profiler (``cupti``) rows, a few models' ops
#: repeated many times, keep the curve alone: with trees their held-out median error rose
#: (elementwise 19 -> 44 %) while the sweeps' fell (docs/cost-model.md). Exceptions:
#: :data:`TREE_METHODS_BY_FAMILY`.
TREE_METHODS = frozenset({"events", "wallclock", "kernel"})

#: Families with methods of their own. Convolution backward's trees also learn from, and
#: correct, profiler (``cupti``) rows: the sweeps hold only ~200 DeepBench shapes per
#: direction, and the profiler rows are ResNet-50's real layers (one V100 trace). Grouped
#: 5-fold, fold seeds 0 / 1 (docs/cost-model.md, fifth round): bwd data 16.7 / 17.4 ->
#: 13.5 / 14.9, bwd filter 12.5 / 13.7 -> 10.0 / 12.1; the forward convolution got no
#: better, so it keeps :data:`TREE_METHODS`.
TREE_METHODS_BY_FAMILY: Mapping[str, frozenset[str]] = {
    **{fam: TREE_METHODS | {"cupti"} for fam in ("conv2d_bwd_data", "conv2d_bwd_filter")},
    # fused attention: 216 timings of one GPU (36 shapes in each of fp16 / bf16 x causal),
    # too few for trees, and a k-fold training split (~170 rows) would fit none anyway
    "attention": frozenset(),
}


#: Families whose trees also correct a pooled curve, the price of a GPU without a curve of
#: its own (or a sibling's). Elsewhere the trees correct only fitted curves: on a pooled one
#: their splits on the GPU's specs extrapolate (A100-PCIe-40GB softmax left out: 11 -> 79 %).
#: A convolution's trees learn mostly where cuDNN switches algorithms with the shape, which
#: carries to other GPUs: each GPU left out in turn (docs/cost-model.md, thirtieth round),
#: forward P100 19.9 -> 14.8 %, T4 16.5 -> 14.3, A100-PCIe-80GB 18.9 -> 16.7; backward data /
#: filter V100-SXM2 32.9 / 34.8 -> 28.5 / 26.4, P100 30.0 / 32.5 -> 25.2 / 29.7, T4 19.1 /
#: 35.5 -> 19.8 / 36.1.
POOLED_TREE_FAMILIES = frozenset({"conv2d", "conv2d_bwd_data", "conv2d_bwd_filter"})


def corrects(family: str, source: str | None) -> bool:
    """Whether ``family``'s residual trees correct a curve of this ``source`` (``fitted``,
    ``sibling``, ``pooled``, ``donor``): fitted and sibling curves always, pooled ones for
    :data:`POOLED_TREE_FAMILIES`.

    >>> corrects("softmax", "pooled"), corrects("conv2d", "pooled"), corrects("matmul", "sibling")
    (False, True, True)
    """
    if source in ("fitted", "sibling"):
        return True
    return source == "pooled" and family in POOLED_TREE_FAMILIES


def tree_methods(family: str) -> frozenset[str]:
    """Timing methods whose rows ``family``'s trees are fitted on and applied to.

    Examples
    --------
    >>> sorted(tree_methods("matmul")), "cupti" in tree_methods("conv2d_bwd_data")
    (['events', 'kernel', 'wallclock'], True)
    """
    return TREE_METHODS_BY_FAMILY.get(family, TREE_METHODS)


def tree_method(family: str, method: str, traced: bool) -> str | None:
    """The timing method whose code the residual trees of ``family`` are read with for a
    price of ``method`` from a curve, or None where the trees do not correct it; ``traced``:
    the curve was fitted on its GPU's own profiler rows (``"profiler": true`` in a profile).

    :func:`tree_methods` are read as themselves. A profiler (``cupti``) price from a curve
    that saw no such rows (a GPU never traced, a pooled or a sibling's curve) is read as
    ``kernel``, both being pure kernel time, in every family whose trees read kernel time: a
    traced op had been priced by the curve alone, and curves fitted on the shape sweeps price
    a network's real layers less well (docs/cost-model.md, thirty-ninth round: the V100-SXM2
    left out, its 636 traced convolutions among its rows, 23.7 -> 19.8 %; our H200's held-out
    steps, all ops 23.2 / 22.2 / 27.8 -> 24.2 / 20.8 / 24.5 % against the rule on
    convolutions alone). A curve fitted on traced rows keeps the curve alone, as trees fitted
    on those rows did worse than none (fifth round).

    >>> tree_method("conv2d", "wallclock", False), tree_method("conv2d", "cupti", False)
    ('wallclock', 'kernel')
    >>> tree_method("conv2d", "cupti", True), tree_method("attention", "cupti", False)
    (None, None)
    """
    if method in tree_methods(family):
        return method
    if method == "cupti" and not traced and "kernel" in tree_methods(family):
        return "kernel"
    return None


#: Timing method -> feature code (kernel and cupti are both pure kernel time).
METHOD_CODES: Mapping[str, int] = {"kernel": 0, "cupti": 1, "events": 2, "wallclock": 3}
_CLASS_CODES = {"fp32": 0, "half": 1, "int8": 2, "half_fp32math": 3}

#: Boosting settings for a family with at least :data:`LARGE_TREE_ROWS` training rows (the
#: sweeps of GEMMs, convolutions, elementwise ops, norms: tens of thousands of shapes), chosen
#: by the grouped 5-fold comparisons in docs/cost-model.md (seventh and nineteenth rounds:
#: 600 trees of 63 leaves on every training row, against 300 of 31 on a sample of 3,000 rows
#: per GPU, method and class, took matmul from 4.6 to 3.0 % and bmm from 5.4 to 3.8 %).
#: Absolute loss on the log ratio: a median fit. Fixed seed and no early stopping, so a refit
#: on the same rows gives the same trees.
TREE_PARAMS: Mapping[str, Any] = {
    "loss": "absolute_error",
    "max_iter": 600,
    "learning_rate": 0.1,
    "max_leaf_nodes": 63,
    "min_samples_leaf": 20,
    "l2_regularization": 1.0,
    "early_stopping": False,
    "random_state": 0,
}

#: Settings for a smaller family (convolution backward: ~200 shapes per direction), where
#: the larger ensembles overfit (bwd data 13.0 -> 14.7 % on fold seed 0).
SMALL_TREE_PARAMS: Mapping[str, Any] = dict(TREE_PARAMS) | {
    "max_iter": 100,
    "max_leaf_nodes": 15,
    "min_samples_leaf": 40,
}

#: Training rows from which a family's trees use :data:`TREE_PARAMS`.
LARGE_TREE_ROWS = 4000


def tree_features(
    x: np.ndarray,
    gpus: np.ndarray,
    classes: np.ndarray,
    methods: np.ndarray,
    specs: Mapping[str, GpuSpec],
) -> np.ndarray:
    """Tree inputs: curve features without the intercept, timing method, dtype class, and
    the GPU's log SM count, log bandwidth (GB/s) and log FP32 peak (TFLOP/s).

    Parameters
    ----------
    x
        Curve design matrix (:func:`opsched.cost.features.feature_matrix`), intercept first.
    gpus, classes, methods
        Per row: canonical GPU key, dtype class (``fp32``/``half``/``int8``), timing method.
    specs
        GPU key -> :class:`GpuSpec` (every GPU in ``gpus`` must be known).
    """
    unknown = set(gpus.tolist()) - set(specs)
    if unknown:
        raise KeyError(f"no specs for {sorted(unknown)}")
    method = np.array([METHOD_CODES.get(str(m), 0) for m in methods], dtype=float)
    cls_code = np.array([_CLASS_CODES.get(str(c), 0) for c in classes], dtype=float)
    spec_cols = {
        g: (math.log(specs[g].sm_count), math.log(specs[g].mem_bw_gbps),
            math.log(specs[g].peak_tflops("float32")))
        for g in set(gpus.tolist())
    }  # fmt: skip
    gpu_cols = np.array([spec_cols[g] for g in gpus.tolist()], dtype=float).reshape(len(gpus), 3)
    return np.column_stack([x[:, 1:], method, cls_code, gpu_cols])


def fit_trees(features: np.ndarray, residual: np.ndarray) -> TreeEnsemble:
    """Boost trees on ``residual`` (log measured / log curve) and export them.

    :data:`TREE_PARAMS` from :data:`LARGE_TREE_ROWS` rows on, :data:`SMALL_TREE_PARAMS` below.

    Requires scikit-learn (``pip install opsched[ml]``). Runs on one thread: the trees are
    then bit-for-bit reproducible (a multi-threaded histogram sum may differ in the last
    bits) and a busy machine does not stall the OpenMP barriers.
    """
    from sklearn.ensemble import HistGradientBoostingRegressor
    from threadpoolctl import threadpool_limits

    params = TREE_PARAMS if len(residual) >= LARGE_TREE_ROWS else SMALL_TREE_PARAMS
    model = HistGradientBoostingRegressor(**params)
    with threadpool_limits(limits=1, user_api="openmp"):
        model.fit(features, residual)
    return from_sklearn(model)

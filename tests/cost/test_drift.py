"""The run drift of NeuSight's convolution calls (opsched.cost.drift)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from opsched.cost.drift import (
    DRIFT_BINS,
    DRIFT_RUNS,
    MIN_DRIFT_ROWS,
    MIN_KEPT,
    dedrift,
    drift_levels,
    run_positions,
)
from opsched.cost.features import feature_matrix, roofline_us
from opsched.cost.fit import fit_model, load_fit_data, predict_family
from opsched.cost.fitdata import FamilyData, FitData
from opsched.cost.specs import load_specs


def test_run_positions_count_each_run_in_its_own_order():
    pos = run_positions(np.array(["T4", "P4", "T4", "T4", "P4", "T4"]))
    assert pos.tolist() == [0.0, 0.0, 0.25, 0.5, 0.5, 0.75]


def test_drift_levels_are_slice_medians_centred_on_the_median_slice():
    pos = (np.arange(1000) + 0.5) / 1000
    rng = np.random.default_rng(0)
    # a steady rise of 200 us over the run, plus noise (a slice median moves by ~4 us)
    resid = 200 * pos + rng.normal(0.0, 30.0, size=1000)
    centres, levels = drift_levels(pos, resid)
    assert len(centres) == len(levels) == DRIFT_BINS
    assert np.allclose(centres, (np.arange(DRIFT_BINS) + 0.5) / DRIFT_BINS, atol=1e-3)
    assert np.all(np.diff(levels) > 0)
    assert np.median(levels) == pytest.approx(0.0)
    assert levels[-1] - levels[0] == pytest.approx(180.0, abs=25.0)  # slice centres 0.05..0.95


def _conv_run(n: int, drift_us: float, seed: int = 0) -> tuple[FamilyData, np.ndarray]:
    """NeuSight-like convolution calls on the T4: time = 3 x roofline + 200 us, plus a drift
    rising linearly by ``drift_us`` along the run. Returns the family and the drift-free times."""
    spec = load_specs()["T4"]
    rng = np.random.default_rng(seed)
    attrs = []
    for _ in range(n):
        c, k, h = (int(v) for v in rng.integers([8, 8, 7], [512, 512, 56]))
        attrs.append({"N": int(rng.integers(1, 64)), "C": c, "H": h, "W": h, "K": k, "R": 3,
                      "S": 3, "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 1,
                      "dtype": "float32"})  # fmt: skip
    roof = np.array([roofline_us("conv2d", a, spec) for a in attrs])
    clean = 3.0 * roof + 200.0
    pos = np.arange(n) / n
    fd = FamilyData(
        x=feature_matrix("conv2d", attrs, spec), t=clean + drift_us * (pos - 0.5), roof=roof,
        gpu=np.full(n, "T4"), method=np.full(n, "events"), cls=np.full(n, "fp32"),
        source=np.full(n, "neusight"), group=np.array([str(a) for a in attrs]), run_pos=pos,
    )  # fmt: skip
    return fd, clean


def test_dedrift_takes_an_additive_drift_out_of_a_run():
    fd, clean = _conv_run(800, drift_us=300.0)
    before = fd.t - clean
    out = dedrift(FitData({"conv2d": fd}), {"conv2d": np.ones(800, bool)}).families["conv2d"]
    after = out.t - clean
    first, last = slice(0, 80), slice(720, 800)
    # the rise was 270 us between the first and last tenth; what is left is under a tenth
    assert np.median(before[last]) - np.median(before[first]) == pytest.approx(270.0, abs=1.0)
    assert abs(np.median(after[last]) - np.median(after[first])) < 27.0
    assert np.median(np.abs(after)) < 0.2 * np.median(np.abs(before))
    assert (out.t >= MIN_KEPT * fd.t).all()
    assert fd.t is not out.t  # the input is left as it was
    assert np.allclose(fd.t - clean, before)


def test_dedrift_leaves_other_rows_and_short_runs_alone():
    fd, _ = _conv_run(400, drift_us=300.0)
    other = np.arange(400) >= 300  # rows of no drifting run (another table)
    fd.run_pos = np.where(other, np.nan, fd.run_pos)
    out = dedrift(FitData({"conv2d": fd}), {"conv2d": np.ones(400, bool)}).families["conv2d"]
    assert np.array_equal(out.t[other], fd.t[other])
    assert not np.array_equal(out.t[~other], fd.t[~other])
    # too few training rows to trace a drift: the run keeps its times
    few = np.arange(400) < MIN_DRIFT_ROWS - 1
    out = dedrift(FitData({"conv2d": fd}), {"conv2d": few}).families["conv2d"]
    assert np.array_equal(out.t, fd.t)


@pytest.fixture(scope="module")
def neusight() -> FitData:
    # NeuSight's convolutions alone: the features of its other 200k rows take half a minute
    return load_fit_data(files=["neusight_ops.csv.gz"], families=["conv2d"])


def test_neusight_convolution_calls_drift_along_their_runs(neusight: FitData) -> None:
    # the finding behind the module: on each of NeuSight's five GPUs the per-call time of a
    # convolution grows by hundreds of microseconds from the start to the end of its run
    # (the drifting runs are NeuSight's convolutions alone; the fixture reads no other family)
    assert {(t, f) for t, f, _ in DRIFT_RUNS} == {("neusight_ops.csv.gz", "conv2d")}
    fd = neusight.families["conv2d"]
    assert np.isfinite(fd.run_pos).all()
    lines: list[str] = []
    out = dedrift(neusight, {"conv2d": np.ones(len(fd.t), bool)}, lines.append).families
    assert len(lines) == 5
    for line in lines:
        start, end = (float(v) for v in re.findall(r"([+-]\d+) us", line))
        assert start < -50.0 and end > 100.0, line
    # the least time of the last tenth of every run falls by 40 % or more once the drift is
    # out (300-758 us measured there against 59-108 us in the first tenth; 160-417 after)
    t = out["conv2d"].t
    for gpu in np.unique(fd.gpu):
        run = np.nonzero(fd.gpu == gpu)[0]
        head, tail = run[: len(run) // 10], run[-len(run) // 10 :]
        assert fd.t[tail].min() > 2.5 * fd.t[head].min()
        assert t[tail].min() <= 0.6 * fd.t[tail].min()
    # an additive drift: hardly any call is held at MIN_KEPT of its time
    assert np.isclose(t, MIN_KEPT * fd.t).sum() < 0.01 * len(t)


def test_only_the_trees_learn_from_the_times_without_drift(neusight: FitData) -> None:
    pytest.importorskip("sklearn")
    conv = FitData({"conv2d": neusight.families["conv2d"]})
    with_drift = fit_model(conv)
    as_measured = fit_model(conv, drift=False)
    # the curves fit the measured times either way
    assert with_drift.groups.keys() == as_measured.groups.keys()
    for key, c in with_drift.groups.items():
        assert np.array_equal(c["beta"], as_measured.groups[key]["beta"])
        assert c["overheads"] == as_measured.groups[key]["overheads"]
    # the trees learn from the times without the drift: in-sample, the calls of each run's
    # last tenth (drift +130-370 us) are priced lower than by trees fitted on the measured
    # times, those of its first tenth (drift -90-290 us) higher (measured: 0.92 and 1.06)
    fd = conv.families["conv2d"]
    head, tail = np.zeros(len(fd.t), bool), np.zeros(len(fd.t), bool)
    for gpu in np.unique(fd.gpu):
        run = np.nonzero(fd.gpu == gpu)[0]
        head[run[: len(run) // 10]] = True
        tail[run[-len(run) // 10 :]] = True
    for rows, low, high in ((tail, 0.0, 0.97), (head, 1.03, np.inf)):
        ratio = predict_family(with_drift, "conv2d", fd, rows) / predict_family(
            as_measured, "conv2d", fd, rows
        )
        assert low < np.median(ratio) < high

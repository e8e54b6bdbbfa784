"""The H200 rows we timed ourselves: what the fit takes from them, and held-out real traces."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from opsched.cost import load_profile
from opsched.cost.data import read_table
from opsched.cost.evaluate import predict_table
from opsched.cost.fitdata import FIT_FILES
from opsched.datasets import dataset_path
from opsched.importers.trace import import_trace

TIMINGS = dataset_path("kernel-timings")


def test_float32_rows_are_fitted_and_half_rows_are_not() -> None:
    assert "opsched_h200.csv.gz" in FIT_FILES and "opsched_h200_half.csv.gz" not in FIT_FILES
    f32, half = (
        read_table(TIMINGS / "opsched_h200.csv.gz"),
        read_table(TIMINGS / "opsched_h200_half.csv.gz"),
    )
    assert set(f32["dtype"]) == {"float32"} and set(half["dtype"]) == {"float16", "bfloat16"}
    assert set(f32["gpu"]) == set(half["gpu"]) == {"NVIDIA H200"}
    both = pd.concat([f32, half])
    assert not both.duplicated(["op", "dtype", "shape"]).any()
    k = both["kernel_time_us"]
    assert k.notna().sum() == 1530 and (k.dropna() < both.loc[k.notna(), "measured_time_us"]).all()
    p = load_profile("H200")
    for fam in ("matmul", "bmm", "conv2d", "softmax"):
        assert p.curves[fam]["fp32"]["source"] == "fitted", fam
    assert p.curves["matmul"]["half"]["source"] == "pooled"  # transferred through the specs


def test_kernel_rows_without_the_dispatch_of_their_calls() -> None:
    # in-sample sanity: the fitted H200 curve prices its own kernel-timed rows closely, and
    # the same shapes as PyTorch calls (events) at least their kernels' time
    rows = read_table(TIMINGS / "opsched_h200.csv.gz")
    rows = rows[rows["kernel_time_us"].notna()]
    pred = predict_table(rows)
    k, pk = rows["kernel_time_us"].to_numpy(), pred["predicted_kernel_time_us"].to_numpy()
    assert np.median(np.abs(pk - k) / k) < 0.15
    assert (pred["predicted_time_us"] > pk).mean() > 0.99


@pytest.mark.parametrize(
    ("trace", "lo", "hi"),
    [("resnet50_h200_torch2110_step.pt.trace.json.gz", 0.65, 1.05),
     ("transformer_h200_torch2110_step.pt.trace.json.gz", 0.75, 1.1)],
)  # fmt: skip
def test_held_out_h200_traces_total_kernel_time(trace: str, lo: float, hi: float) -> None:
    """Two real training steps never used in the fit (benchmarks/bench_trace_vs_model.py):
    the model's summed kernel time against the measured one (0.82 and 0.91 when written)."""
    rows = import_trace(dataset_path("traces") / trace).rows
    pred = predict_table(rows, where=trace)
    ok = np.isfinite(pred["predicted_time_us"]) & (pred["gpu_time_us"] > 0)
    ratio = pred.loc[ok, "predicted_time_us"].sum() / pred.loc[ok, "gpu_time_us"].sum()
    assert lo < ratio < hi
    assert ok.mean() > 0.8  # most ops get a price

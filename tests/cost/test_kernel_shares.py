"""Kernel-level profiler rows take their kernel's share of their op's price."""

from __future__ import annotations

import pandas as pd
import pytest

from opsched.cost.data import read_table
from opsched.cost.evaluate import predict_table
from opsched.cost.kernel_shares import fit_shares, kernel_key, kernel_weights, load_shares
from opsched.datasets import dataset_path


def test_shares_are_fractions_of_the_op_measured_per_kernel_name() -> None:
    df = pd.DataFrame({
        "op": ["aten::conv"] * 6 + ["fbgemm::x"] * 3,
        "kernel": ["void offsets<int>(int)", "void implicit_gemm<float>(float)"] * 3
        + ["k"] * 3,
        "op_instance": [1, 1, 2, 2, 3, 3, 4, 4, 4],
        "kernel_dur_us": [2, 98, 1, 99, 3, 97, 1, 1, 1],
    })  # fmt: skip
    shares = fit_shares([df])
    # the non-aten op keeps the equal split: no share of its own
    assert shares == {"aten::conv | implicit_gemm": 0.98, "aten::conv | offsets": 0.02}
    w = kernel_weights(df["op"], df["kernel"], df["op_instance"], shares)
    assert w[:2].tolist() == pytest.approx([0.02, 0.98])
    assert w[6:].tolist() == pytest.approx([1 / 3] * 3)
    # a kernel never seen takes the median share, then the instance is scaled to 1
    w = kernel_weights(["aten::conv"] * 2, ["offsets", "new_kernel"], [9, 9], shares)
    assert w.sum() == pytest.approx(1.0) and w[0] < w[1]


def test_the_shipped_shares_split_a_convolution_by_its_kernels() -> None:
    # the V100 ResNet-50 stem: a 2 us offsets kernel beside its ~605 us convolution kernel
    # had each been priced at half the op
    assert load_shares(), "opsched cost fit writes kernel_shares.json beside the profiles"
    df = read_table(dataset_path("kernel-timings") / "kineto_resnet50_v100_kernels.csv.gz")
    first = df[df["op_instance"] == df["op_instance"].iloc[0]]
    assert kernel_key(first["op"].iloc[0], first["kernel"].iloc[0]) == (
        "aten::cudnn_convolution | cask_cudnn::computeOffsetsKernel"
    )
    pred = predict_table(first.reset_index(drop=True), None, "stem")["predicted_time_us"]
    assert pred[0] < 0.05 * pred[1]

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
    # a kernel never seen takes the median share (0.5); shares adding up to less than 1 are
    # kept (the op's other kernels are not in the table), more than 1 scaled down to 1
    w = kernel_weights(["aten::conv"] * 2, ["offsets", "new_kernel"], [9, 9], shares)
    assert w.tolist() == pytest.approx([0.02, 0.5])
    w = kernel_weights(["aten::conv"] * 3, ["implicit_gemm", "new", "new"], [9] * 3, shares)
    assert w.sum() == pytest.approx(1.0) and w[0] == pytest.approx(0.98 / 1.98)


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


def test_a_kernel_row_is_priced_alike_with_or_without_its_siblings() -> None:
    # a held-out file may hold only some of an op's kernel rows: the 2 us offsets kernel alone
    # had taken its convolution's whole price (the shares were scaled up to 1)
    df = read_table(dataset_path("kernel-timings") / "kineto_resnet50_v100_kernels.csv.gz")
    first = df[df["op_instance"] == df["op_instance"].iloc[0]].reset_index(drop=True)
    both = predict_table(first, None, "stem")["predicted_time_us"]
    alone = predict_table(first.iloc[:1].reset_index(drop=True), None, "one")["predicted_time_us"]
    assert alone[0] == pytest.approx(both[0], rel=0.01)  # (the op's kernel count differs)
    # shares above 1 in all are still scaled down; below 1 they are kept
    w = kernel_weights(["aten::mm"] * 2, ["a", "a"], [1, 1], {"aten::mm | a": 0.9})
    assert w.tolist() == pytest.approx([0.5, 0.5])
    assert kernel_weights(["aten::mm"], ["a"], [1], {"aten::mm | a": 0.9}).tolist() == [0.9]


def test_an_elementwise_kernel_of_a_compiled_region_is_priced_from_its_launch() -> None:
    # CompiledFunction has no shape rule: its kernels had split an opaque guess at the whole
    # region (median error 1,779 %); an elementwise kernel's grid gives its own size
    df = read_table(dataset_path("kernel-timings") / "hta_kernels.csv.gz")
    rows = df[(df["op"] == "CompiledFunction")
              & df["kernel"].str.contains("vectorized_elementwise_kernel")].head(50)  # fmt: skip
    rows = rows.reset_index(drop=True)
    out = predict_table(rows, None, "compiled")
    pred, meas = out["predicted_time_us"], rows["kernel_dur_us"].astype(float)
    assert out["predicted_time_us"].notna().all()
    ape = ((pred - meas).abs() / meas).median()
    assert ape < 0.5, ape  # within 50 % at the median (the opaque split: ~18x)
    alone = predict_table(rows.iloc[:1].reset_index(drop=True), None, "one")["predicted_time_us"]
    assert alone[0] == pytest.approx(pred[0])  # its own price, whatever else is in the file

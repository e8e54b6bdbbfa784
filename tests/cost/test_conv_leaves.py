"""The cuDNN backward leaves of a kernel-level table are paired into their convolutions."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from opsched.cost.aten import aten_kind
from opsched.cost.conv_leaves import leaf_shapes, op_table_shapes
from opsched.cost.data import read_table
from opsched.cost.evaluate import predict_table
from opsched.cost.fitdata import with_leaf_shapes
from opsched.datasets import dataset_path

DATA = "aten::cudnn_convolution_backward_input"
FILTER = "aten::cudnn_convolution_backward_weight"


def _table(rows: list[tuple[str, str | None, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["op", "op_instance", "op_input_dims"])


def test_each_half_takes_its_partner_in_run_order() -> None:
    df = _table([
        # a stride-2 1x1 convolution: data half, then filter half (two kernels)
        (DATA, "1:2:100", "[[], [8, 32, 7, 7], [32, 16, 1, 1]]"),
        (FILTER, "1:2:150", "[[], [8, 32, 7, 7], [8, 16, 14, 14]]"),
        (FILTER, "1:2:150", "[[], [8, 32, 7, 7], [8, 16, 14, 14]]"),
        # the next convolution has the same grad_output, a 3x3 filter, stride 1
        (DATA, "1:2:200", "[[], [8, 32, 7, 7], [32, 32, 3, 3]]"),
        (FILTER, "1:2:250", "[[], [8, 32, 7, 7], [8, 32, 7, 7]]"),
    ])  # fmt: skip
    got = leaf_shapes(df)
    first = "dy=[8,32,7,7] w=[32,16,1,1] x=[8,16,14,14] stride~2"
    assert got[0] == got[1] == got[2] == first
    assert got[3] == got[4] == "dy=[8,32,7,7] w=[32,32,3,3] x=[8,32,7,7] stride~1"


D_DIMS = "[[], [8, 32, 7, 7], [32, 16, 1, 1]]"
F_DIMS = "[[], [8, 32, 7, 7], [8, 16, 14, 14]]"


@pytest.mark.parametrize(
    "rows",
    [
        # each pair fails one guard: the first conv's filter half alone (no data half)
        [(FILTER, "1:2:50", "[[], [8, 64, 7, 7], [8, 3, 14, 14]]")],
        # the filter half first: PyTorch runs the data half first
        [(FILTER, "1:2:50", F_DIMS), (DATA, "1:2:100", D_DIMS)],
        # adjacent in time, another thread
        [(DATA, "1:2:100", D_DIMS), (FILTER, "1:3:101", F_DIMS)],
        # another grad_output
        [(DATA, "1:2:100", D_DIMS), (FILTER, "1:2:150", F_DIMS.replace("7, 7]", "8, 8]", 1))],
        # the weight's 32 filters against a grad_output of 64 channels
        [(DATA, "1:2:100", "[[], [8, 64, 7, 7], [32, 16, 1, 1]]"),
         (FILTER, "1:2:150", "[[], [8, 64, 7, 7], [8, 16, 14, 14]]")],
        # 8 input channels, the weight takes 16
        [(DATA, "1:2:100", D_DIMS), (FILTER, "1:2:150", "[[], [8, 32, 7, 7], [8, 8, 14, 14]]")],
        # another batch
        [(DATA, "1:2:100", D_DIMS), (FILTER, "1:2:150", "[[], [8, 32, 7, 7], [4, 16, 14, 14]]")],
        # no stride up to 8 sweeps 1 x 1 filters over 100 rows to 7
        [(DATA, "1:2:100", D_DIMS), (FILTER, "1:2:150", "[[], [8, 32, 7, 7], [8, 16, 100, 100]]")],
        # unreadable dims, and a blank instance
        [(DATA, "1:2:100", "not json"), (FILTER, "1:2:150", F_DIMS)],
        [(DATA, None, D_DIMS), (FILTER, "1:2:150", F_DIMS)],
    ],
)  # fmt: skip
def test_no_partner_no_shape(rows: list[tuple[str, str | None, str]]) -> None:
    assert leaf_shapes(_table(rows)) == {}  # type: ignore[arg-type]


def test_each_source_is_its_own_trace() -> None:
    df = _table([(DATA, "1:2:100", D_DIMS), (FILTER, "1:2:150", F_DIMS)])
    assert len(leaf_shapes(df)) == 2
    assert leaf_shapes(df.assign(source=["a", "b"])) == {}


def test_strides_read_with_padding_and_along_a_1d_width() -> None:
    # a 7 x 7 filter at stride 1 without padding: 14 -> 8 (input over output reads 2)
    df = _table([(DATA, "1:2:1", "[[], [2, 8, 8, 8], [8, 4, 7, 7]]"),
                 (FILTER, "1:2:2", "[[], [2, 8, 8, 8], [2, 4, 14, 14]]")])  # fmt: skip
    assert leaf_shapes(df)[0].endswith("stride~1")
    # a 1-D convolution run as 2-D (height 1): stride 2 along the width
    df = _table([(DATA, "1:2:1", "[[], [2, 8, 1, 50], [8, 4, 1, 3]]"),
                 (FILTER, "1:2:2", "[[], [2, 8, 1, 50], [2, 4, 1, 100]]")])  # fmt: skip
    assert leaf_shapes(df)[0].endswith("stride~2")


def test_both_halves_of_a_grouped_convolution_read_the_same_convolution() -> None:
    # 32 groups of 4 channels: the data half takes C and groups from the paired input
    df = _table([(DATA, "1:2:1", "[[], [8, 128, 7, 7], [128, 4, 3, 3]]"),
                 (FILTER, "1:2:2", "[[], [8, 128, 7, 7], [8, 128, 14, 14]]")])  # fmt: skip
    texts = leaf_shapes(df)
    kinds = [aten_kind(op, [], [], texts[i]) for i, op in enumerate([DATA, FILTER])]
    (k0, a0), (k1, a1) = kinds  # type: ignore[misc]
    assert (k0, k1) == ("conv2d_bwd_data", "conv2d_bwd_filter")
    common = ("N", "C", "H", "W", "K", "R", "S", "stride_h", "pad_h", "groups")
    assert {k: a0[k] for k in common} == {k: a1[k] for k in common}
    assert (a0["C"], a0["groups"], a0["H"], a0["stride_h"]) == (128, 32, 14, 2)


def test_the_v100_kernel_tables_backward_leaves_price_as_convolutions() -> None:
    # they had been opaque (bench_kernel_shares.py: median 80.5 % with the equal split,
    # 49.9 % with the kernel shares); paired, both
    # halves price within a few per cent in sum (these shapes are in the calibration data)
    df = read_table(dataset_path("kernel-timings") / "kineto_resnet50_v100_kernels.csv.gz")
    assert len(leaf_shapes(df)) == 3102  # of 3,114 leaf rows
    pred = predict_table(df, None, "v100 kernels")
    fam = pred.attrs["_opsched"]["family"]
    for op, half in ((DATA, "conv2d_bwd_data"), (FILTER, "conv2d_bwd_filter")):
        sel = (df["op"] == op).to_numpy() & (fam == half)
        assert sel.sum() > 1400
        p, t = pred["predicted_time_us"][sel].to_numpy(), df["kernel_dur_us"][sel].to_numpy(float)
        assert 0.8 < p.sum() / t.sum() < 1.25


def _ops(rows: list[tuple[str, str, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["op", "input_dims", "gpu_time_us"])


def test_a_per_op_row_takes_the_shape_of_the_instance_with_its_time() -> None:
    # two convolutions share grad_output and weight dims in the per-op table's eyes
    # (the data half records no input size): stride 1 at 40 us, stride 2 at 90 us
    kern = _table([
        (DATA, "1:2:100", "[[], [8, 32, 7, 7], [32, 32, 3, 3]]"),
        (FILTER, "1:2:150", "[[], [8, 32, 7, 7], [8, 32, 7, 7]]"),
        (DATA, "1:2:200", "[[], [8, 32, 7, 7], [32, 32, 3, 3]]"),
        (FILTER, "1:2:250", "[[], [8, 32, 7, 7], [8, 32, 14, 14]]"),
    ])  # fmt: skip
    kern["kernel_dur_us"] = [40.0, 30.0, 90.0, 60.0]
    ops = _ops([
        (DATA, "[[], [8, 32, 7, 7], [32, 32, 3, 3]]", 90.0),
        (DATA, "[[],[8,32,7,7],[32,32,3,3]]", 40.0),  # the same dims, spelt tighter
        (DATA, "[[], [8, 32, 7, 7], [32, 32, 3, 3]]", 41.0),  # no instance took 41 us
        (FILTER, "[[], [8, 32, 7, 7], [8, 32, 14, 14]]", 60.0),
        ("aten::mm", "[[4, 4], [4, 4]]", 90.0),
    ])  # fmt: skip
    got = op_table_shapes(ops, kern)
    assert got == {
        0: "dy=[8,32,7,7] w=[32,32,3,3] x=[8,32,14,14] stride~2",
        1: "dy=[8,32,7,7] w=[32,32,3,3] x=[8,32,7,7] stride~1",
        3: "dy=[8,32,7,7] w=[32,32,3,3] x=[8,32,14,14] stride~2",
    }
    # instances of one time that pair differently leave the row as it was
    both = kern.copy()
    both.loc[2, "kernel_dur_us"] = 40.0
    assert 1 not in op_table_shapes(ops, both)
    # a kernel without a time leaves its instance unmatched, not matched by the rest's sum:
    # the stride-2 data half in two kernels (50 + 40 us), one without a time, would
    # otherwise match the 40 us row and give it stride 2
    gap = kern.copy()
    gap["kernel_dur_us"] = gap["kernel_dur_us"].astype(object)
    gap.loc[0, "kernel_dur_us"] = 41.0  # the stride-1 instance no longer takes 40 us
    split = pd.concat([gap.iloc[[2]], gap.iloc[[2]], gap.iloc[[3]]], ignore_index=True)
    split.loc[[0, 1], "kernel_dur_us"] = ["", 40.0]
    both_parts = pd.concat([gap.iloc[[0, 1]], split], ignore_index=True)
    assert 1 not in op_table_shapes(ops, both_parts)
    split.loc[0, "kernel_dur_us"] = 50.0
    assert op_table_shapes(ops, pd.concat([gap.iloc[[0, 1]], split], ignore_index=True))[0] == (
        "dy=[8,32,7,7] w=[32,32,3,3] x=[8,32,14,14] stride~2")  # fmt: skip


def _strided_pair() -> pd.DataFrame:
    """A kernel table of one stride-2 3x3 convolution's two leaves: 90 us and 60 us."""
    kern = _table([
        (DATA, "1:2:100", "[[], [8, 32, 7, 7], [32, 32, 3, 3]]"),
        (FILTER, "1:2:150", "[[], [8, 32, 7, 7], [8, 32, 14, 14]]"),
    ])  # fmt: skip
    return kern.assign(kernel_dur_us=[90.0, 60.0])


def test_per_op_rows_match_instances_of_their_own_source_only() -> None:
    kern = _strided_pair()
    kern["source"] = ["a.json", "a.json"]
    ops = _ops([(DATA, "[[], [8, 32, 7, 7], [32, 32, 3, 3]]", 90.0)] * 3)
    ops["source"] = ["a.json", "b.json", " a.json "]
    assert sorted(op_table_shapes(ops, kern)) == [0, 2]  # spaces around a source ignored
    # blank sources on both sides match each other (pandas reads an empty column as NaN)
    kern["source"], ops["source"] = float("nan"), float("nan")
    assert sorted(op_table_shapes(ops, kern)) == [0, 1, 2]
    # a source on one side only is not compared
    assert sorted(op_table_shapes(ops.drop(columns="source"), kern)) == [0, 1, 2]


@pytest.mark.parametrize("shape", ["missing", "float", "text"])
def test_with_leaf_shapes_reads_the_kernel_table_beside_the_op_table(
    tmp_path: Path, shape: str
) -> None:
    kern = _strided_pair()
    kern.to_csv(tmp_path / "x_kernels.csv", index=False)
    ops = _ops([("aten::mm", "[[4, 4], [4, 4]]", 1.0),
                (DATA, "[[], [8, 32, 7, 7], [32, 32, 3, 3]]", 90.0)])  # fmt: skip
    if shape == "float":
        ops["shape"] = float("nan")
    elif shape == "text":
        ops["shape"] = ["M=4 N=4 K=4", "dy=[8,32,7,7] w=[32,32,3,3] (dgrad)"]
    ops.index = [10, 20]  # positions, not labels
    got = with_leaf_shapes(ops, tmp_path / "x_ops.csv")
    assert got["shape"].iloc[1] == "dy=[8,32,7,7] w=[32,32,3,3] x=[8,32,14,14] stride~2"
    assert shape != "text" or got["shape"].iloc[0] == "M=4 N=4 K=4"
    # no kernel table beside it: the table as it is
    assert with_leaf_shapes(ops, tmp_path / "y_ops.csv") is ops


def test_the_v100_op_tables_leaves_are_relabelled_from_the_kernel_table() -> None:
    # the curated shape column reads 72 stride-2 data halves as stride 1 and 12 filter
    # halves of 1x1 convolutions as 3x3; the fit reads them from the kernel table
    base = dataset_path("kernel-timings")
    ops = read_table(base / "kineto_resnet50_v100_ops.csv.gz")
    got = op_table_shapes(ops, read_table(base / "kineto_resnet50_v100_kernels.csv.gz"))
    leaves = ops["op"].isin([DATA, FILTER]).to_numpy()
    assert len(got) == leaves.sum() - 12  # the first convolution's filter half has no pair
    data = [t for p, t in got.items() if ops["op"].iat[p] == DATA]
    assert sum(t.endswith("stride~2") for t in data) == 72
    relabelled = [
        p for p, t in got.items()
        if ops["op"].iat[p] == FILTER and "w=[64,64,1,1]" in t and "3,3]" in ops["shape"].iat[p]
    ]  # fmt: skip
    assert len(relabelled) == 12
    # the fit sees the same rows with the corrected shapes: 3x3 stride-2 data halves
    fixed = with_leaf_shapes(ops, base / "kineto_resnet50_v100_ops.csv.gz")
    kinds = [aten_kind(DATA, [], [], s) for s in fixed["shape"][leaves & (ops["op"] == DATA)]]
    strided = [a for _, a in kinds if a["R"] == 3 and a["stride_h"] == 2]
    assert len(strided) == 36  # 12 steps of the three 3x3 stride-2 convolutions
    assert sorted({(a["C"], a["H"]) for a in strided}) == [(128, 56), (256, 28), (512, 14)]

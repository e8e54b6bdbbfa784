"""The cuDNN backward leaves of a kernel-level table are paired into their convolutions."""

from __future__ import annotations

import pandas as pd

from opsched.cost.conv_leaves import leaf_shapes
from opsched.cost.data import read_table
from opsched.cost.evaluate import predict_table
from opsched.datasets import dataset_path

DATA = "aten::cudnn_convolution_backward_input"
FILTER = "aten::cudnn_convolution_backward_weight"


def _table(rows: list[tuple[str, str, str]]) -> pd.DataFrame:
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


def test_no_partner_no_shape() -> None:
    df = _table([
        (FILTER, "1:2:50", "[[], [8, 64, 7, 7], [8, 3, 14, 14]]"),  # the first conv: no data half
        (DATA, "1:2:100", "[[], [8, 32, 7, 7], [32, 16, 1, 1]]"),
        (FILTER, "1:3:150", "[[], [8, 32, 7, 7], [8, 16, 14, 14]]"),  # another thread
        (DATA, "1:2:300", "[[], [8, 32, 7, 7], [32, 16, 1, 1]]"),
        (FILTER, "1:2:350", "[[], [8, 32, 7, 7], [8, 8, 14, 14]]"),  # 8 channels, w takes 16
        (DATA, "1:2:400", "not json"),
    ])  # fmt: skip
    assert leaf_shapes(df) == {}


def test_the_v100_kernel_tables_backward_leaves_price_as_convolutions() -> None:
    # they had been opaque (median error 80.5 %, bench_kernel_shares.py); paired, both
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

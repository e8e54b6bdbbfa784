"""``opsched cost collect`` on the CPU with a tiny grid."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.cost.collect import COLUMNS, collect, default_grid, op_counts
from opsched.cost.data import canonical_rows
from opsched.cost.evaluate import errors, predict_table
from opsched.datasets import dataset_path
from opsched.errors import InputError


def test_counts_follow_the_neusight_conventions() -> None:
    # values of rows of neusight_ops.csv.gz, worked by hand from their shapes
    assert op_counts({"op": "linear", "B": 1, "M": 58, "N": 13, "K": 141}, 4) == (220806, 43624)
    assert op_counts({"op": "bmm", "B": 6, "M": 27, "N": 21, "K": 390}, 4) == (2653560, 462888)
    conv = {
        "op": "conv",
        "B": 38,
        "Cin": 893,
        "Cout": 326,
        "kernel": 3,
        "H": 5,
        "W": 5,
        "stride": 1,
        "pad": 1,
    }
    assert op_counts(conv, 4) == (4978117800, 15112448)
    assert op_counts({"op": "add", "B": 127, "H_dim": 168}, 4) == (21336, 256032)
    assert op_counts({"op": "addu", "B": 127, "H_dim": 168}, 4) == (21336, 170688)
    assert op_counts({"op": "ln", "B": 60, "H_dim": 272}, 4) == (130560, 132736)
    assert op_counts({"op": "softmax", "B": 127, "H_dim": 168}, 4) == (106680, 170688)


def test_collect_cpu_tiny_grid() -> None:
    specs = [s for s in default_grid(quick=True) if s["op"] in ("linear", "conv", "add", "ln")]
    df = collect("cpu", specs=specs, warmup=1, repeats=3, flush_bytes=1 << 20, threads=1)
    assert list(df.columns) == list(COLUMNS) and len(df) == len(specs)
    assert (df["measured_time_us"] > 0).all() and df["gpu"].str.startswith("CPU").all()
    assert set(df["split"]) == {"collect"} and set(df["dtype"]) == {"float32"}
    conv = df[df["op"] == "conv"].iloc[0]  # 16x16, 3x3, stride 1, pad 1
    assert conv["out_hw"] == 16 and conv["shape"].startswith("x=[2,8,16,16] w=[16,8,3,3]")
    assert (df["flops"] / (df["measured_time_us"] * 1e6) - df["achieved_tflops"]).abs().max() < 1e-3
    assert df["kernel_time_us"].isna().all()  # kernel times only on CUDA
    # NeuSight's columns, then kernel_time_us
    ref = pd.read_csv(dataset_path("kernel-timings") / "neusight_ops.csv.gz", nrows=5)
    assert [*ref.columns, "kernel_time_us"] == list(df.columns)


def test_collect_rejects_bad_options() -> None:
    with pytest.raises(InputError, match="only timed on cuda"):
        collect("cpu", dtype="float16", specs=[])
    with pytest.raises(InputError, match="unknown op 'gemm'"):
        collect("cpu", specs=[{"op": "gemm"}])


def test_cli_collect_and_missing_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "rows.csv"
    res = CliRunner().invoke(
        main,
        [
            "cost",
            "collect",
            "--device",
            "cpu",
            "--quick",
            "-o",
            str(out),
            "--repeats",
            "3",
            "--warmup",
            "0",
            "--threads",
            "1",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    df = pd.read_csv(out)
    assert len(df) == len(default_grid(quick=True)) and (df["measured_time_us"] > 0).all()
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    out2 = tmp_path / "rows2.csv"
    res = CliRunner().invoke(main, ["cost", "collect", "-o", str(out2)])
    assert res.exit_code == 2 and "pip install torch==2.13.0" in res.output
    assert not out2.exists()


def test_shapes_from_a_table_spread_over_sizes() -> None:
    from opsched.cost.shapes import specs_from_rows

    bmm = [{"op": "bmm", "B": 1, "M": m, "N": 4, "K": 4} for m in range(10, 0, -1)]
    rows = pd.DataFrame([*bmm, bmm[0], {"op": "lstm", "B": 1}, {"op": "relu", "B": 3, "H_dim": 5}])
    specs, skipped = specs_from_rows(rows)
    assert skipped == 1 and len(specs) == 11  # the repeated shape once, lstm left out
    assert [s["M"] for s in specs if s["op"] == "bmm"] == list(range(1, 11))  # by FLOPs
    two, _ = specs_from_rows(rows, per_op=2)
    # ten shapes by size, two picks at the middles of the halves: the 3rd and 8th smallest
    assert [s["M"] for s in two if s["op"] == "bmm"] == [3, 8]
    assert [s["op"] for s in two] == ["bmm", "bmm", "relu"]
    bad = pd.DataFrame([{"op": "add", "B": 2.5, "H_dim": 4}])
    with pytest.raises(InputError, match=r"row 2: column B is 2\.5, not a non-negative integer"):
        specs_from_rows(bad, source="t.csv")
    with pytest.raises(InputError, match="no 'op' column"):
        specs_from_rows(pd.DataFrame({"M": [1]}))
    with pytest.raises(InputError, match="op conv needs column"):
        specs_from_rows(pd.DataFrame([{"op": "conv", "B": 1}]))


def test_cli_collect_times_the_shapes_of_a_table(tmp_path: Path) -> None:
    src = tmp_path / "shapes.csv"
    pd.DataFrame(
        [
            {"gpu": "Tesla T4", "op": "add", "B": 8, "H_dim": 16, "measured_time_us": 30.0},
            {"gpu": "Tesla P4", "op": "add", "B": 8, "H_dim": 16, "measured_time_us": 31.0},
            {"gpu": "Tesla T4", "op": "linear", "B": 1, "M": 4, "N": 8, "K": 16},
        ]
    ).to_csv(src, index=False)
    out = tmp_path / "rows.csv"
    args = ["cost", "collect", "--shapes", str(src), "-o", str(out), "--repeats", "3"]
    res = CliRunner().invoke(main, [*args, "--warmup", "0", "--threads", "1"])
    assert res.exit_code == 0, res.output
    df = pd.read_csv(out)
    assert sorted(df["shape"]) == ["x=[1,4,8] W=[16,8] bias", "x=[8,16] y=[same]"]
    one = CliRunner().invoke(main, [*args, "--per-op", "1", "--quick"])
    assert one.exit_code == 2 and "--quick and --shapes exclude each other" in one.output
    res = CliRunner().invoke(main, ["cost", "collect", "--per-op", "1", "-o", str(out)])
    assert res.exit_code == 2 and "--per-op needs --shapes" in res.output


def test_kernel_time_column_is_a_second_kernel_timed_row() -> None:
    rows = pd.DataFrame(
        [{"gpu": "NVIDIA H200", "op": "relu", "dtype": "float32", "B": 4096, "H_dim": 4096,
          "Cin": None, "measured_time_us": 60.0, "kernel_time_us": 25.0},
         {"gpu": "NVIDIA H200", "op": "relu", "dtype": "float32", "B": 64, "H_dim": 64,
          "Cin": None, "measured_time_us": 38.0, "kernel_time_us": None}]
    )  # fmt: skip
    recs = canonical_rows(rows, "neusight")
    got = [(r["row"], r["target"], r["method"], r["time_us"]) for r in recs]
    assert got[:3] == [
        (0, "", "events", 60.0),
        (0, "kernel", "kernel", 25.0),
        (1, "", "events", 38.0),
    ]
    pred = predict_table(rows)
    # the kernel-only prediction drops PyTorch's per-call overhead
    assert (pred["predicted_kernel_time_us"] < pred["predicted_time_us"]).all()
    table = errors(pred)
    assert list(table["family"]) == ["elementwise_unary", "elementwise_unary (kernel)"]
    assert list(table["rows"]) == [2, 1]  # no kernel time on the second row


def _deepbench_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    conv = pd.DataFrame({"N": [2, 2, 1], "C": [3, 3, 4], "H": [9, 9, 8], "W": [7, 7, 8],
                         "K": [4, 4, 2], "R": [3, 3, 1], "S": [3, 3, 1], "pad_h": [1, 1, 0],
                         "pad_w": [0, 0, 0], "stride_h": [2, 2, 1], "stride_w": [1, 1, 1],
                         "fwd_time_us": [1.0, 2.0, 3.0]})  # fmt: skip
    gemm = pd.DataFrame({"M": [16, 32], "N": [8, 8], "K": [24, 24], "transA": ["N", "T"],
                         "transB": ["T", "N"], "time_us": [1.0, 1.0]})  # fmt: skip
    return conv, gemm


def test_collect_deepbench_shapes_on_cpu() -> None:
    from opsched.cost.collect_deepbench import collect_deepbench

    conv, gemm = _deepbench_tables()
    c = collect_deepbench(conv, "deepbench_conv", "cpu", "float32", warmup=1, replay_us=200)
    assert len(c) == 2  # the repeated shape is timed once
    # out = (H + 2 pad - R) // stride + 1: (9 + 2 - 3) // 2 + 1 = 5 and (7 - 3) // 1 + 1 = 5
    assert c[["out_h", "out_w"]].iloc[0].tolist() == [5, 5]
    assert c["fwd_flops"].iloc[0] == 2 * 2 * 4 * 5 * 5 * 3 * 3 * 3
    for col in ("fwd_time_us", "bwd_data_time_us", "bwd_filter_time_us"):
        assert (c[col] > 0).all(), col
    assert set(c["dtype"]) == {"fp32"} and set(c["suite"]) == {"opsched collect"}
    g = collect_deepbench(gemm, "deepbench_gemm", "cpu", "tf32", warmup=1, replay_us=200)
    assert g["flops"].tolist() == [2 * 16 * 8 * 24, 2 * 32 * 8 * 24]
    assert (g["time_us"] > 0).all() and set(g["dtype"]) == {"tf32"}
    # the rows read back as the schema they were timed from, every timing a record
    recs = canonical_rows(c.assign(gpu="H200"), "deepbench_conv")
    assert sorted({r["kind"] for r in recs}) == ["conv2d", "conv2d_bwd_data", "conv2d_bwd_filter"]
    assert len(recs) == 6
    with pytest.raises(InputError, match="only timed on cuda"):
        collect_deepbench(gemm, "deepbench_gemm", "cpu", "bfloat16")
    with pytest.raises(InputError, match="--dtype must be one of"):
        collect_deepbench(gemm, "deepbench_gemm", "cpu", "int8")
    with pytest.raises(InputError, match="lacks column"):
        collect_deepbench(gemm.drop(columns="transB"), "deepbench_gemm", "cpu")


def test_cli_collect_deepbench_shapes(tmp_path: Path) -> None:
    conv, _ = _deepbench_tables()
    src, out = tmp_path / "conv.csv", tmp_path / "rows.csv.gz"
    conv.to_csv(src, index=False)
    r = CliRunner().invoke(main, ["cost", "collect", "--shapes", str(src), "-o", str(out),
                                  "--per-op", "1", "--warmup", "1"])  # fmt: skip
    assert r.exit_code == 0, r.output
    rows = pd.read_csv(out)
    assert len(rows) == 1 and (rows["bwd_filter_time_us"] > 0).all()
    r = CliRunner().invoke(main, ["cost", "collect", "--shapes", str(src), "-o",
                                  str(tmp_path / "h.csv"), "--dtype", "float16"])  # fmt: skip
    assert r.exit_code != 0 and "only timed on cuda" in r.output
    assert not (tmp_path / "h.csv").exists()


def test_cli_collect_checks_the_output_folder_before_timing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a GPU run takes hours: a typo in -o's folder had been found only when the rows were
    # written, after every shape was timed
    import opsched.cost.collect as collect_mod

    def timed(*args: object, **kwargs: object) -> None:
        raise AssertionError("timing started before the output was checked")

    monkeypatch.setattr(collect_mod, "collect", timed)
    out = tmp_path / "no_such_dir" / "rows.csv"
    res = CliRunner().invoke(main, ["cost", "collect", "--quick", "-o", str(out)])
    assert res.exit_code == 2, res.output
    assert "no such folder" in res.output and "Traceback" not in res.output
    assert "[1/" not in res.output  # no progress line: nothing was timed


def test_deepbench_times_on_cpu_are_the_median_of_the_replays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch

    import opsched.cost.collect_deepbench as cdb

    _, gemm = _deepbench_tables()
    loops: list[tuple[int, int]] = []  # (calls in the loop, torch threads while timing)
    # the estimate (3 calls at 1 us each: 200 calls a replay), then loops of 10, 1000 and
    # 20 us a call: their median is 20, the first loop's mean 10
    per_call = iter([1.0, 10.0, 1000.0, 20.0] * 2)

    def fake_loop(torch_: object, call: object, cuda: bool, n: int) -> float:
        loops.append((n, torch.get_num_threads()))
        return next(per_call) * n

    monkeypatch.setattr(cdb, "_loop_us", fake_loop)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        g = cdb.collect_deepbench(gemm.iloc[:1], "deepbench_gemm", "cpu", warmup=0,
                                  replays=3, replay_us=200, threads=1)  # fmt: skip
        assert torch.get_num_threads() == 2  # restored
    finally:
        torch.set_num_threads(before)
    assert g["time_us"].tolist() == [20.0]
    assert [n for n, _ in loops] == [3, 200, 200, 200]
    assert {t for _, t in loops} == {1}  # timed on the thread count asked for


def test_cli_collect_deepbench_passes_repeats_and_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import opsched.cost.collect_deepbench as cdb

    _, gemm = _deepbench_tables()
    src = tmp_path / "gemm.csv"
    gemm.iloc[:1].to_csv(src, index=False)
    seen: list[dict[str, object]] = []
    real = cdb.collect_deepbench

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(kwargs)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cdb, "collect_deepbench", spy)
    base = ["cost", "collect", "--shapes", str(src), "--warmup", "0"]
    r = CliRunner().invoke(main, [*base, "-o", str(tmp_path / "a.csv"), "--repeats", "3",
                                  "--threads", "1"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert seen[-1]["replays"] == 3 and seen[-1]["threads"] == 1
    r = CliRunner().invoke(main, [*base, "-o", str(tmp_path / "b.csv")])
    assert r.exit_code == 0, r.output
    assert "replays" not in seen[-1] and seen[-1]["threads"] is None  # the collector's own

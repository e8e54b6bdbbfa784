"""``opsched cost collect`` on the CPU with a tiny grid."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.cost.collect import COLUMNS, collect, default_grid, op_counts
from opsched.errors import InputError

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "kernel-timings"


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
    if (SHARED / "neusight_ops.csv.gz").exists():  # same columns as the shared table
        ref = pd.read_csv(SHARED / "neusight_ops.csv.gz", nrows=5)
        assert list(ref.columns) == list(df.columns)


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

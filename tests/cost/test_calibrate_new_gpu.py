"""Calibrating a card of one's own: `cost fit --data --add -o` and OPSCHED_PROFILES."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.cost import known_gpus, load_profile
from opsched.cost.fitdata import FIT_FILES
from opsched.cost.gpu_names import resolve_gpu
from opsched.cost.specs import PROFILES_ENV
from opsched.datasets import dataset_path
from opsched.errors import InputError

SPEC_ROW = "RTX-4090,PCIe,Ada sm_89,128,24,GDDR6X,1008,82.6,82.6,165.2,165.2,330.3,660.6,450,test,"


def _small_data(tmp: Path) -> Path:
    """The built-in tables cut to their first 400 rows, and a spec table with one more GPU."""
    src, data = dataset_path("kernel-timings"), tmp / "data"
    data.mkdir()
    for name in FIT_FILES:
        comp = "gzip" if name.endswith(".gz") else None
        pd.read_csv(src / name, nrows=400, low_memory=False).to_csv(
            data / name, index=False, compression=comp
        )
    shutil.copy(src / "gpu_specs.csv", data / "gpu_specs.csv")
    with (data / "gpu_specs.csv").open("a", encoding="utf-8") as f:
        f.write(SPEC_ROW + "\n")
    return data


def _card_rows(tmp: Path) -> Path:
    """T4 NeuSight rows renamed to the new card as torch names it, 3x faster."""
    src = dataset_path("kernel-timings") / "neusight_ops.csv.gz"
    all_rows = pd.read_csv(src)
    t4 = all_rows[all_rows["gpu"] == "Tesla T4"]
    t4 = pd.concat([t4[t4["op"] == "bmm"].head(200), t4[t4["op"] == "add"].head(100)])
    t4["gpu"] = "NVIDIA GeForce RTX 4090"
    t4["measured_time_us"] = t4["measured_time_us"] / 3
    path = tmp / "rtx4090.csv"
    t4.to_csv(path, index=False)
    return path


def test_fit_a_new_card_and_use_its_profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    data, rows, out = _small_data(tmp_path), _card_rows(tmp_path), tmp_path / "profiles"
    with pytest.raises(InputError, match="unknown GPU"):
        resolve_gpu("NVIDIA GeForce RTX 4090")  # not in the shipped spec table
    args = ["cost", "fit", "--data", str(data), "--add", str(rows), "-o", str(out)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert (out / "RTX-4090-PCIe.json").exists() and (out / "gpus.json").exists()
    # progress on stderr, a line per stage (the whole fit takes ~60 s); the result on stdout
    assert res.stdout.strip() == f"wrote {len(list(out.iterdir()))} files to {out}"
    lines = res.stderr.splitlines()
    assert any(line.endswith("read rtx4090.csv: 300 rows (neusight)") for line in lines)
    assert lines[0].endswith(f"reading {len(FIT_FILES) + 1} timing tables from {data}")
    assert any("fitting the curves of" in line for line in lines)
    quiet = CliRunner().invoke(main, [*args, "--quiet"])
    assert quiet.exit_code == 0 and quiet.stderr == ""
    monkeypatch.setenv(PROFILES_ENV, str(out))
    assert "RTX-4090-PCIe" in known_gpus()
    p = load_profile("NVIDIA GeForce RTX 4090")
    assert p.gpu == "RTX-4090-PCIe"
    assert p.curves["bmm"]["fp32"]["source"] == "fitted"  # its own rows
    assert p.curves["conv2d"]["fp32"]["source"] == "pooled"  # none: transferred
    # the fitted card prices its rows' shapes near their (made-up) times
    t = pd.read_csv(rows)
    ours = [p.predict("matmul", {"B": int(r.B), "M": int(r.M), "N": int(r.K), "K": int(r.N)},
                      method="events") for r in t[t["op"] == "bmm"].itertuples()]  # fmt: skip
    bmm = t.loc[t["op"] == "bmm", "measured_time_us"].to_numpy()
    assert np.median(np.abs(np.array(ours) - bmm) / bmm) < 0.25
    monkeypatch.delenv(PROFILES_ENV)
    assert "RTX-4090-PCIe" not in known_gpus()  # the shipped profiles again


def test_failed_fit_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("gpu,op,measured_time_us\nT4\n", encoding="utf-8")
    out = tmp_path / "profiles"
    res = CliRunner().invoke(main, ["cost", "fit", "--add", str(bad), "-o", str(out)])
    assert res.exit_code == 2 and "bad.csv" in res.output
    assert not out.exists()


def test_profiles_env_pointing_nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROFILES_ENV, str(tmp_path))
    with pytest.raises(InputError, match=r"no gpus\.json in the profiles folder"):
        load_profile("T4")


def test_fit_names_every_missing_table_before_reading(tmp_path: Path) -> None:
    # a folder with the spec table and one timing table: the eleven others are named at
    # once (it had read the tables in turn and stopped at the first one missing)
    src, data = dataset_path("kernel-timings"), tmp_path / "data"
    data.mkdir()
    shutil.copy(src / "gpu_specs.csv", data / "gpu_specs.csv")
    shutil.copy(src / FIT_FILES[0], data / FIT_FILES[0])
    out = tmp_path / "profiles"
    res = CliRunner().invoke(main, ["cost", "fit", "--data", str(data), "-o", str(out)])
    assert res.exit_code == 2, res.output
    line = res.stderr.strip()
    assert "\n" not in line and line.startswith(f"opsched: error: {data}: ")
    n = len(FIT_FILES)
    assert f"{n - 1} of the {n} timing tables the fit reads are missing" in line
    assert all(f in line for f in FIT_FILES[1:]) and FIT_FILES[0] + "," not in line
    assert not out.exists()

"""The quick study (the README's main job) on a few instances."""

from __future__ import annotations

import csv
from pathlib import Path

from opsched.bench import run_quick
from opsched.bench.quick import HEURISTICS
from opsched.datasets import psplib_optima


def test_quick_study_small(tmp_path: Path) -> None:
    summary = run_quick(tmp_path, limit=2, progress=False)
    with open(tmp_path / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    # 2 STG graphs x 4 processor counts + 2 J30 + up to 2 x 3 capped graphs, every heuristic
    h = len(HEURISTICS)
    assert h == 7
    stg = [r for r in rows if r["set"] == "stg50"]
    j30 = [r for r in rows if r["set"] == "j30"]
    assert len(stg) == 2 * 4 * h and len(j30) == 2 * h
    assert summary["runs"] == len(rows)
    # a dead end has nothing to validate: its validity is empty, not True
    assert all(r["valid"] == ("" if r["makespan"] == "" else "True") for r in rows)
    # rand0000 on 4 processors: the published optimum is 66 and no heuristic beats it
    r0 = [r for r in stg if r["instance"] == "rand0000" and r["units"] == "4"]
    assert {r["optimum"] for r in r0} == {"66"}
    assert all(float(r["makespan"]) >= 66 for r in r0)
    # the serial schedule of rand0000 takes the whole work, 262: gap (262 - 66) / 66
    serial = next(r for r in r0 if r["solver"] == "serial")
    assert float(serial["makespan"]) == 262
    assert abs(float(serial["gap_percent"]) - 100 * (262 - 66) / 66) < 1e-9
    # J30 rows carry the table's optimum, and no heuristic beats it
    table = psplib_optima()
    for r in j30:
        assert int(r["optimum"]) == table[r["instance"]]
        assert float(r["makespan"]) >= table[r["instance"]]
    # the portfolio is never worse than list scheduling, its first candidate
    for inst in {(r["instance"], r["units"]) for r in stg}:
        by = {r["solver"]: float(r["makespan"]) for r in stg if (r["instance"], r["units"]) == inst}
        assert by["portfolio"] <= by["list"] <= by["serial"]
    report = (tmp_path / "report.md").read_text()
    assert "| stg50 | 4 | greedy-blevel |" in report
    assert "layered24 cap 80%" in report
    # the set sizes described are the ones run, not the full sets
    assert "the first 2 of 180 random 50-task graphs" in report
    assert "the first 2 of 480 instances" in report and "seeds 0..1)" in report


def test_the_optimal_share_counts_a_dead_end_as_not_optimal() -> None:
    # 10 instances with proven optima, 6 schedules at the optimum, 2 above it, 2 dead ends:
    # 60 % (over the 8 schedules alone it read 75 %)
    from opsched.bench.quick import _summarise

    rows = [{"set": "s", "units": 2, "solver": "h", "optimum_proven": True, "valid": True,
             "makespan": 10.0, "gap_percent": 0.0} for _ in range(6)]  # fmt: skip
    rows += [dict(rows[0], makespan=11.0, gap_percent=10.0) for _ in range(2)]
    rows += [dict(rows[0], makespan=None, gap_percent=None, valid=None) for _ in range(2)]
    (s,) = _summarise(rows)
    assert (s["instances"], s["with_proven_optimum"], s["no_schedule"]) == (10, 10, 2)
    assert s["share_optimal"] == 0.6 and s["mean_gap_percent"] == 2.5 and s["all_valid"]


def test_quick_checks_its_outputs_before_the_study(tmp_path: Path) -> None:
    import time

    import pytest

    from opsched.errors import InputError

    (tmp_path / "report.md").mkdir()
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=r"report\.md: is a directory"):
        run_quick(tmp_path, limit=1, progress=False)
    assert time.perf_counter() - t0 < 5 and not (tmp_path / "results.csv").exists()


def test_quick_refuses_a_folder_under_a_file_before_the_study(tmp_path: Path) -> None:
    import time

    import pytest

    from opsched.errors import InputError

    (tmp_path / "f.txt").write_text("x")
    out = tmp_path / "f.txt" / "sub" / "quick"
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=r"f\.txt' is a file, not a folder"):
        run_quick(out, limit=1, progress=False)
    assert time.perf_counter() - t0 < 5
    assert (tmp_path / "f.txt").read_text() == "x"

"""Report numbers against a tiny store whose gaps are worked out by hand."""

from __future__ import annotations

import math

import pytest

from opsched.experiments import load_results, parse_config
from opsched.experiments.jobs import expand_jobs, load_graphs
from opsched.experiments.store import ResultStore
from opsched.report import stats

# Instances (2 units unless said):
#   A = gnp s0:   cpsat OPTIMAL 10 (peak 100), greedy 12 (peak 150), serial 15 (peak 100)
#   B = gnp s1:   cpsat FEASIBLE 20 (not proven), greedy 22, serial ERROR
#   C = rand0000 on 4 units: published optimum 66; greedy 70, serial 70, cpsat UNKNOWN
#   D = rand0000 on 2 units: published 131, but cpsat claims OPTIMAL 130 -> conflict
# Gaps by hand (only A and C have a usable proven optimum):
#   cpsat:  A 0                      -> mean 0, optimal share 1/2 (no schedule on C)
#   greedy: A 20 %, C 400/66 = 6.0606 % -> mean 13.0303, max 20, share 0
#   serial: A 50 %, C 6.0606 %        -> mean 28.0303, share 0
TOML = """
[experiment]
name = "hand"
[[graphs]]
generate = "gnp"
ops = 5
count = 2
[[graphs]]
dataset = "stg/50/rand0000.stg"
[machines]
units = [2, 4]
[schedulers]
names = ["cpsat", "greedy", "serial"]
"""

RESULTS = {  # (graph, units, scheduler): (status, makespan, peak)
    ("gnp-5-p0.1-s0", 2, "cpsat"): ("OPTIMAL", 10, 100),
    ("gnp-5-p0.1-s0", 2, "greedy"): ("FEASIBLE", 12, 150),
    ("gnp-5-p0.1-s0", 2, "serial"): ("FEASIBLE", 15, 100),
    ("gnp-5-p0.1-s1", 2, "cpsat"): ("FEASIBLE", 20, 10),
    ("gnp-5-p0.1-s1", 2, "greedy"): ("FEASIBLE", 22, 10),
    ("gnp-5-p0.1-s1", 2, "serial"): ("ERROR", None, None),
    ("rand0000", 4, "cpsat"): ("UNKNOWN", None, None),
    ("rand0000", 4, "greedy"): ("FEASIBLE", 70, 0),
    ("rand0000", 4, "serial"): ("FEASIBLE", 70, 0),
    ("rand0000", 2, "cpsat"): ("OPTIMAL", 130, 0),
    ("rand0000", 2, "greedy"): ("FEASIBLE", 140, 0),
    ("rand0000", 2, "serial"): ("FEASIBLE", 262, 0),
}


def make_hand_db(path):
    cfg = parse_config(TOML, "hand.toml")
    graphs = load_graphs(cfg)
    jobs = expand_jobs(cfg, graphs)
    with ResultStore(path) as store:
        store.register(cfg, jobs, graphs)
        for j in jobs:
            key = (j.graph, j.units, j.scheduler)
            if key not in RESULTS:  # gnp graphs on 4 units: not run
                continue
            status, ms, peak = RESULTS[key]
            store.record(j.job_id, "hand", {
                "status": status, "valid": ms is not None if status != "ERROR" else False,
                "makespan": ms, "peak_memory": peak, "wall_time_s": 0.5,
                "error": "boom" if status == "ERROR" else None, "host": "h"})  # fmt: skip
    return load_results(path)


@pytest.fixture
def df(tmp_path):
    return make_hand_db(tmp_path / "hand.sqlite")


def test_optima(df) -> None:
    opt = stats.instance_optima(df)
    by_graph = {
        (g, u): opt.loc[i] for g, u, i in df[["graph", "units", "instance_id"]].drop_duplicates()
        .itertuples(index=False)
    }  # fmt: skip
    assert by_graph[("gnp-5-p0.1-s0", 2)]["optimum"] == 10
    assert by_graph[("gnp-5-p0.1-s0", 2)]["source"] == "solver"
    assert math.isnan(by_graph[("gnp-5-p0.1-s1", 2)]["optimum"])
    assert by_graph[("rand0000", 4)]["optimum"] == 66
    assert by_graph[("rand0000", 4)]["source"] == "table"
    d = by_graph[("rand0000", 2)]
    assert math.isnan(d["optimum"]) and d["source"] == "conflict" and "130" in d["conflict"]


def test_gaps_by_hand(df) -> None:
    t = stats.gap_table(df).set_index("scheduler")
    assert t.loc["cpsat", "with_optimum"] == 2 and t.loc["cpsat", "no_schedule"] == 1
    assert t.loc["cpsat", "mean_gap_percent"] == 0 and t.loc["cpsat", "optimal_share"] == 0.5
    assert t.loc["greedy", "mean_gap_percent"] == pytest.approx((20 + 400 / 66) / 2)
    assert t.loc["greedy", "max_gap_percent"] == pytest.approx(20)
    assert t.loc["greedy", "median_gap_percent"] == pytest.approx((20 + 400 / 66) / 2)
    assert t.loc["serial", "mean_gap_percent"] == pytest.approx((50 + 400 / 66) / 2)
    assert t.loc["serial", "optimal_share"] == 0
    assert (t["jobs"] == 4).all()


def test_wins_profile_time_and_peaks(df) -> None:
    w = stats.win_table(df).set_index("scheduler")
    # A, B, D: cpsat alone; C: greedy and serial tie
    assert w["wins"].to_dict() == {"cpsat": 3, "greedy": 1, "serial": 1}
    assert w["sole_wins"].to_dict() == {"cpsat": 3, "greedy": 0, "serial": 0}
    p = stats.performance_profile(df)
    steps = {s: list(zip(g["tau"].round(4), g["rho"], strict=True))
             for s, g in p.groupby("scheduler")}  # fmt: skip
    # ratios: greedy A 1.2, B 1.1, C 1.0, D 140/130; serial A 1.5, B inf, C 1.0, D 262/130
    assert steps["greedy"] == [(1.0, 0.25), (1.0769, 0.5), (1.1, 0.75), (1.2, 1.0)]
    assert steps["serial"] == [(1.0, 0.25), (1.5, 0.5), (2.0154, 0.75)]
    assert steps["cpsat"] == [(1.0, 0.75)]  # no schedule on C
    t = stats.time_table(df).set_index("scheduler")
    assert t.loc["serial", "errors"] == 1 and t.loc["cpsat", "unknown"] == 1
    assert t.loc["greedy", "mean_s"] == 0.5
    pk = stats.peak_memory_table(df).set_index("scheduler")
    # A: least 100 -> greedy 50 %; B: 10 vs 10; C, D: all zero -> 0
    assert pk.loc["greedy", "max_peak_gap_percent"] == 50
    assert pk.loc["greedy", "mean_peak_gap_percent"] == pytest.approx(50 / 4)
    assert pk.loc["serial", "least_peak_share"] == 1.0


def test_results_against_an_open_instance_s_table_bounds() -> None:
    # an STG instance left open: bounds 100 .. 110, no optimum
    import pandas as pd

    def one(makespans: list[float], statuses: list[str]) -> pd.Series:
        n = len(makespans)
        df = pd.DataFrame({"instance_id": "i", "exact": [s == "OPTIMAL" for s in statuses],
                           "status": statuses, "valid": True, "objective": "makespan",
                           "makespan": makespans, "known_lb": [100.0] * n,
                           "known_ub": [110.0] * n})  # fmt: skip
        return stats.instance_optima(df).loc["i"]

    ok = one([105.0, 108.0], ["OPTIMAL", "FEASIBLE"])
    assert ok["optimum"] == 105 and ok["source"] == "solver" and not ok["conflict"]
    low = one([98.0, 108.0], ["FEASIBLE", "FEASIBLE"])
    assert low["source"] == "conflict" and "below the table's lower bound 100" in low["conflict"]
    high = one([112.0], ["OPTIMAL"])
    assert high["source"] == "conflict" and "above the table's best 110" in high["conflict"]
    assert math.isnan(high["optimum"])


def test_a_valid_schedule_of_an_instance_proved_infeasible_is_a_conflict() -> None:
    # a capped instance CP-SAT calls INFEASIBLE while greedy's schedule passes the validator:
    # one of them is wrong, and the report had said nothing (no optimum, no conflict)
    import pandas as pd

    df = pd.DataFrame({
        "instance_id": ["i", "i", "j", "j"], "scheduler": ["cpsat", "greedy"] * 2,
        "exact": [True, False] * 2, "status": ["INFEASIBLE", "FEASIBLE", "INFEASIBLE", "UNKNOWN"],
        "valid": [None, True, None, None], "objective": "makespan",
        "makespan": [math.nan, 12.0, math.nan, math.nan], "known_lb": None, "known_ub": None,
    })  # fmt: skip
    opt = stats.instance_optima(df)
    assert opt.loc["i", "source"] == "conflict"
    assert opt.loc["i", "conflict"] == "a valid schedule (12) exists, but cpsat proved none does"
    # no schedule anywhere: the proof stands, nothing to flag
    assert opt.loc["j", "source"] == "none" and not opt.loc["j", "conflict"]
    # a heuristic's INFEASIBLE proves nothing
    heur = df.assign(exact=False)
    assert (stats.instance_optima(heur)["source"] == "none").all()


def test_a_lexicographic_optimum_proves_the_makespan_and_only_makespan_first() -> None:
    import pandas as pd

    def one(objective: str) -> float:
        df = pd.DataFrame({"instance_id": ["i", "i"], "scheduler": ["cpsat", "greedy"],
                           "exact": [True, False], "status": ["OPTIMAL", "FEASIBLE"],
                           "valid": True, "objective": objective, "makespan": [10.0, 12.0],
                           "known_lb": None, "known_ub": None})  # fmt: skip
        return float(stats.instance_optima(df).loc["i", "optimum"])

    # makespan first: its OPTIMAL had been ignored, so a lex study reported no optimum
    assert one("makespan") == one("makespan_then_memory") == 10
    # the least makespan at the least peak, or the least peak alone, proves no makespan
    assert math.isnan(one("memory_then_makespan")) and math.isnan(one("peak_memory"))


def test_zero_optimum_and_zero_least_peak_are_no_division_by_zero() -> None:
    import pandas as pd

    # zero-time ops a -> c and a 5-unit op d on one unit: every order ends at 5, but serial
    # runs c after d, so a's 100 bytes stay live over [0, 5) while the others free them at 0
    df = pd.DataFrame({
        "instance_id": ["i", "i", "j", "j", "j"], "scheduler": ["cpsat", "serial"] * 2 + ["x"],
        "exact": [True, False, True, False, False], "status": "FEASIBLE", "valid": True,
        "objective": "makespan", "makespan": [5.0, 5.0, 0.0, 3.0, 0.0],
        "peak_memory": [0, 100, 0, 0, 0], "memory_cap": None, "known_lb": None,
        "known_ub": [None, None, 0.0, 0.0, 0.0]})  # fmt: skip
    df["known_lb"] = df["known_ub"]
    g = stats.with_gaps(df)
    # j has the table optimum 0: a schedule of 3 is infinitely off, not "no schedule"
    assert g["gap_percent"].tolist()[2:] == [0.0, math.inf, 0.0]
    assert g["is_optimal"].tolist()[2:] == [True, False, True]
    t = stats.gap_table(df).set_index("scheduler")
    assert t.loc["serial", "no_schedule"] == 0 and t.loc["serial", "max_gap_percent"] == math.inf
    p = stats.with_peak_gaps(df)
    assert p["peak_gap_percent"].tolist() == [0.0, math.inf, 0.0, 0.0, 0.0]
    pk = stats.peak_memory_table(df).set_index("scheduler")
    assert pk.loc["serial", "least_peak_share"] == 0.5  # least on j only
    assert pk.loc["cpsat", "least_peak_share"] == 1.0
    from opsched.report.figures import plotly_box

    boxes = {t.name: list(t.y) for t in plotly_box(p, "peak_gap_percent", "peaks").data}
    assert boxes["serial"] == [0.0] and boxes["cpsat"] == [0.0, 0.0]  # inf has no place

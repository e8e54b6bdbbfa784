"""The numbers of a report, computed from a results table (:func:`load_results`).

Definitions (all makespans are the ones recomputed from validated schedules):

- **Proven optimum** of an instance (one graph on one machine): the makespan of a valid job of
  an exact scheduler with status ``OPTIMAL`` and objective ``makespan`` or
  ``makespan_then_memory`` (whose first stage proves the makespan), or a known optimum
  from the built-in tables (``known_lb == known_ub``). Where the two disagree, a valid
  schedule is shorter than the optimum, or an exact scheduler proved infeasible an instance
  that has a valid schedule, the instance is listed as a *conflict* and left out.
- **Gap** of a job: ``100 * (makespan - optimum) / optimum``, only over instances with a
  proven optimum and jobs with a valid schedule (against an optimum of 0: 0, or infinite
  for a longer schedule); *optimal share* counts a job without a schedule as not optimal.
- **Wins**: per instance, the schedulers whose makespan equals the best one found (ties all
  win; *sole wins* count instances won alone).
- **Performance profile** (Dolan and More, 2002): ``rho_s(tau)``, the share of instances on
  which scheduler ``s`` is within a factor ``tau`` of the best makespan found, over the
  instances every scheduler ran on; no schedule counts as never.
- **Peak-memory gap**: ``100 * (peak - least peak) / least peak``, the least peak being the
  lowest any scheduler reached on the instance (a positive peak above a least peak of 0:
  infinite).

Examples
--------
>>> import pandas as pd
>>> df = pd.DataFrame({
...     "instance_id": ["i", "i"], "scheduler": ["cpsat", "greedy"], "exact": [True, False],
...     "status": ["OPTIMAL", "FEASIBLE"], "valid": [True, True], "objective": "makespan",
...     "makespan": [10.0, 12.0], "known_lb": None, "known_ub": None})
>>> with_gaps(df)["gap_percent"].tolist()
[0.0, 20.0]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "gap_table",
    "instance_optima",
    "peak_memory_table",
    "performance_profile",
    "profile_title",
    "time_table",
    "timed",
    "win_table",
    "with_gaps",
    "with_peak_gaps",
]

_EPS = 1e-9


def _valid(df: pd.DataFrame) -> pd.Series:
    return df["valid"].map(lambda v: v is True or v == 1) & df["makespan"].notna()


#: Objectives whose OPTIMAL proves the makespan: the makespan alone, and the lexicographic
#: makespan-then-memory (its first stage; its second keeps that makespan). Peak memory, and
#: memory-then-makespan (the least makespan at the least peak), prove nothing of it.
MAKESPAN_PROOFS = ("makespan", "makespan_then_memory")


def instance_optima(df: pd.DataFrame) -> pd.DataFrame:
    """Per instance: ``optimum`` (NaN if none is proven), ``source`` and ``conflict`` text.

    Examples
    --------
    A table optimum of 9 contradicted by a proven CP-SAT optimum of 10 is a conflict:

    >>> import pandas as pd
    >>> df = pd.DataFrame({"instance_id": ["a", "b"], "exact": True, "status": "OPTIMAL",
    ...     "valid": True, "objective": "makespan", "makespan": [10.0, 7.0],
    ...     "known_lb": [9.0, 7.0], "known_ub": [9.0, 7.0]})
    >>> instance_optima(df)[["optimum", "source"]].to_dict("index")
    {'a': {'optimum': nan, 'source': 'conflict'}, 'b': {'optimum': 7.0, 'source': 'solver+table'}}

    So is a valid schedule below a table's lower bound (an open instance's), a proven
    optimum above a table's best known makespan, or a valid schedule of an instance an exact
    scheduler proved infeasible: the table, or the solver, is wrong.
    """
    rows: list[dict[str, Any]] = []
    ok = _valid(df)
    for inst, g in df.groupby("instance_id", sort=True):
        v = g[ok.loc[g.index]]
        exact = v[
            v["exact"].astype(bool)
            & (v["status"] == "OPTIMAL")
            & v["objective"].isin(MAKESPAN_PROOFS)
        ]["makespan"].unique()
        lb, ub = g["known_lb"].iloc[0], g["known_ub"].iloc[0]
        table = float(lb) if pd.notna(lb) and pd.notna(ub) and lb == ub else None
        sources: list[str] = []
        values: list[float] = []
        if len(exact):
            sources.append("solver")
            values.extend(float(x) for x in exact)
        if table is not None:
            sources.append("table")
            values.append(table)
        conflict = ""
        opt = math.nan
        shortest = v["makespan"].min() if len(v) else math.inf
        # whatever the objective, an exact scheduler's INFEASIBLE is a proof no schedule
        # exists: a valid one beside it means that scheduler (or the validator) is wrong
        proof = g[g["exact"].astype(bool) & (g["status"] == "INFEASIBLE")]
        if len(proof) and len(v):
            who = ", ".join(sorted(map(str, proof["scheduler"].unique()))) if (
                "scheduler" in proof) else "an exact scheduler"  # fmt: skip
            conflict = f"a valid schedule ({shortest:g}) exists, but {who} proved none does"
        elif pd.notna(lb) and shortest < float(lb) - _EPS:
            conflict = f"a valid schedule ({shortest:g}) is below the table's lower bound {lb:g}"
        elif pd.notna(ub) and len(exact) and max(exact) > float(ub) + _EPS:
            conflict = f"a proven optimum ({max(exact):g}) is above the table's best {ub:g}"
        if values and not conflict:
            if max(values) - min(values) > _EPS:
                conflict = f"proven optima disagree: {sorted(set(values))}"
            else:
                opt = values[0]
                if shortest < opt - _EPS:
                    conflict = f"a valid schedule ({shortest:g}) beats the optimum {opt:g}"
        rows.append(
            {
                "instance_id": inst,
                "optimum": math.nan if conflict else opt,
                "source": "conflict" if conflict else "+".join(sources) or "none",
                "conflict": conflict,
            }
        )
    cols = ["instance_id", "optimum", "source", "conflict"]
    return pd.DataFrame(rows, columns=cols).set_index("instance_id")


def with_gaps(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` plus ``optimum``, ``gap_percent`` (NaN where undefined) and ``is_optimal``."""
    opt = instance_optima(df)["optimum"]
    out = df.copy()
    out["optimum"] = out["instance_id"].map(opt).astype(float)
    ms = out["makespan"].where(_valid(out)).astype(float)
    o = out["optimum"]
    gap = 100.0 * (ms - o) / o.where(o > 0)
    # an optimum of 0: a schedule of 0 is optimal, a longer one infinitely far off (NaN had
    # counted it among the jobs without a schedule)
    gap = gap.where(~(o == 0), np.where(ms > 0, math.inf, 0.0))
    gap = gap.where(ms.notna())
    out["gap_percent"] = gap
    out["is_optimal"] = (gap.abs() <= _EPS) & gap.notna()
    return out


def gap_table(df: pd.DataFrame, by: tuple[str, ...] = ("scheduler",)) -> pd.DataFrame:
    """Gap to the proven optimum per group: counts, mean / median / max gap, optimal share."""
    d = with_gaps(df)
    rows = []
    for key, g in d.groupby(list(by), sort=True, dropna=False):
        proven = g[g["optimum"].notna()]
        gaps = proven["gap_percent"].dropna()
        rows.append(
            dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
            | {
                "jobs": len(g),
                "with_optimum": len(proven),
                "no_schedule": int(proven["gap_percent"].isna().sum()),
                "mean_gap_percent": gaps.mean() if len(gaps) else math.nan,
                "median_gap_percent": gaps.median() if len(gaps) else math.nan,
                "max_gap_percent": gaps.max() if len(gaps) else math.nan,
                "optimal_share": proven["is_optimal"].mean() if len(proven) else math.nan,
            }
        )
    return pd.DataFrame(rows)


def win_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per scheduler: instances where it found the best makespan (``wins``) and alone."""
    v = df[_valid(df)]
    schedulers = sorted(df["scheduler"].unique())
    wins = dict.fromkeys(schedulers, 0)
    sole = dict.fromkeys(schedulers, 0)
    ran = df.groupby("scheduler")["instance_id"].nunique().to_dict()
    for _, g in v.groupby("instance_id"):
        best = g["makespan"].min()
        winners = set(g.loc[g["makespan"] <= best + _EPS, "scheduler"])
        for s in winners:
            wins[s] += 1
        if len(winners) == 1:
            sole[next(iter(winners))] += 1
    return pd.DataFrame(
        {
            "scheduler": schedulers,
            "instances": [ran.get(s, 0) for s in schedulers],
            "wins": [wins[s] for s in schedulers],
            "sole_wins": [sole[s] for s in schedulers],
        }
    )


def timed(df: pd.DataFrame) -> pd.DataFrame:
    """The jobs whose wall time is a time to solution: all but errors (a scheduler that
    fails at once is not fast). A job killed at its deadline keeps the deadline."""
    return df[df["status"] != "ERROR"]


def time_table(df: pd.DataFrame) -> pd.DataFrame:
    """Wall time per scheduler (mean / median / max) and how runs ended. A job killed at
    its deadline counts the deadline (a lower bound of its time); errors count none."""
    rows = []
    for s, g in df.groupby("scheduler", sort=True):
        t = timed(g)["wall_time_s"].dropna()
        st = g["status"]
        rows.append(
            {
                "scheduler": s,
                "jobs": len(g),
                "mean_s": t.mean() if len(t) else math.nan,
                "median_s": t.median() if len(t) else math.nan,
                "max_s": t.max() if len(t) else math.nan,
                "optimal": int((st == "OPTIMAL").sum()),
                "feasible": int((st == "FEASIBLE").sum()),
                "infeasible": int((st == "INFEASIBLE").sum()),
                "unknown": int((st == "UNKNOWN").sum()),
                "errors": int((st == "ERROR").sum()),
                "timeouts": int((st == "TIMEOUT").sum()),
            }
        )
    return pd.DataFrame(rows)


def performance_profile(df: pd.DataFrame) -> pd.DataFrame:
    """Dolan-More profile of makespans: rows ``scheduler, tau, rho`` (a step function).

    It is taken over the instances every scheduler of ``df`` ran on (and some scheduler
    solved); ``attrs["instances"]`` and ``attrs["of"]`` count those and all instances, so a
    caption can say what was left out (an unfinished run, or ``downsets`` on uncapped
    machines, takes instances out of everyone's profile).

    Examples
    --------
    Two instances; ``a`` is best on both, ``b`` is 1.5x off on one:

    >>> import pandas as pd
    >>> df = pd.DataFrame({"instance_id": ["x", "x", "y", "y"], "scheduler": ["a", "b"] * 2,
    ...     "valid": True, "makespan": [2.0, 2.0, 4.0, 6.0]})
    >>> p = performance_profile(df)
    >>> p[p.scheduler == "b"][["tau", "rho"]].values.tolist()
    [[1.0, 0.5], [1.5, 1.0]]
    >>> p.attrs
    {'instances': 2, 'of': 2}
    """
    keys = ["instance_id", "scheduler"]
    ran = df.groupby(keys).size().unstack()
    table = df.assign(_v=df["makespan"].where(_valid(df))).groupby(keys)["_v"].min().unstack()
    table = table[ran.notna().all(axis=1) & table.notna().any(axis=1)]
    best = table.min(axis=1).to_numpy()[:, None]
    vals = table.to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(best > 0, vals / best, np.where(vals == 0, 1.0, np.inf))
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    rows = []
    n = len(table)
    for j, s in enumerate(table.columns):
        r = ratio[:, j]
        finite = np.unique(r[np.isfinite(r)])
        for tau in finite:
            rows.append({"scheduler": s, "tau": float(tau), "rho": float((r <= tau).sum() / n)})
        if not len(finite):  # never produced a schedule: flat at 0
            rows.append({"scheduler": s, "tau": 1.0, "rho": 0.0})
    out = pd.DataFrame(rows, columns=["scheduler", "tau", "rho"])
    out.attrs.update(instances=n, of=int(df["instance_id"].nunique()))
    return out


def profile_title(profile: pd.DataFrame) -> str:
    """The profile's title, with how many instances it covers when that is not all.

    >>> import pandas as pd
    >>> p = pd.DataFrame(); p.attrs.update(instances=4, of=8); profile_title(p)
    'Performance profile (makespan), 4 of 8 instances: those every scheduler ran'
    """
    n, of = profile.attrs.get("instances"), profile.attrs.get("of")
    title = "Performance profile (makespan)"
    if n is not None and of is not None and n != of:
        title += f", {n} of {of} instances: those every scheduler ran"
    return title


def with_peak_gaps(df: pd.DataFrame) -> pd.DataFrame:
    """The valid jobs of ``df`` plus ``peak_gap_percent`` (above the instance's least peak).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"instance_id": ["i", "i"], "valid": True, "makespan": [5.0, 4.0],
    ...     "peak_memory": [100, 150]})
    >>> with_peak_gaps(df)["peak_gap_percent"].tolist()
    [0.0, 50.0]
    """
    v = df[_valid(df) & df["peak_memory"].notna()].copy()
    least = v.groupby("instance_id")["peak_memory"].transform("min").astype(float)
    peak = v["peak_memory"].astype(float)
    gap = 100.0 * (peak - least) / least.where(least > 0)
    # a least peak of 0 (zero-time ops whose outputs die at once): any positive peak is
    # infinitely above it; 0 had made it count as the least peak
    v["peak_gap_percent"] = gap.where(least > 0, np.where(peak > 0, math.inf, 0.0))
    return v


def peak_memory_table(df: pd.DataFrame) -> pd.DataFrame:
    """Peak memory per scheduler against the least peak found on each instance."""
    v = with_peak_gaps(df)
    v["cap_use"] = v["peak_memory"] / v["memory_cap"].where(v["memory_cap"] > 0)
    rows = []
    for s, g in v.groupby("scheduler", sort=True):
        rows.append(
            {
                "scheduler": s,
                "schedules": len(g),
                "mean_peak_gap_percent": g["peak_gap_percent"].mean(),
                "max_peak_gap_percent": g["peak_gap_percent"].max(),
                "least_peak_share": float((g["peak_gap_percent"] <= _EPS).mean()),
                "mean_cap_use": g["cap_use"].mean() if g["cap_use"].notna().any() else math.nan,
            }
        )
    cols = ["scheduler", "schedules", "mean_peak_gap_percent", "max_peak_gap_percent",
            "least_peak_share", "mean_cap_use"]  # fmt: skip
    return pd.DataFrame(rows, columns=cols)

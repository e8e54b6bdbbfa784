"""CP-SAT on the standard sets: how many instances it proves optimal, and how fast.

Prints a table per set and processor count: instances, proven optimal, matching the published
optimum, beyond it (a bug if ever > 0), times. Every schedule is re-checked by the validator.

Reproduce (2 cores):
    python benchmarks/bench_cpsat.py --set stg50 --time-limit 10
    python benchmarks/bench_cpsat.py --set stg100 --time-limit 10
    python benchmarks/bench_cpsat.py --set j30 --time-limit 30
    python benchmarks/bench_cpsat.py --set stg50 --open-only --time-limit 60
    python benchmarks/bench_cpsat.py --set stg50 --edge-finding off   # 713 / 720, 2026-12-07
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from opsched.datasets import dataset_path, psplib_optima, stg_optima
from opsched.importers import read_psplib, read_stg
from opsched.problem import Machine, Problem
from opsched.solver import solve_cpsat
from opsched.solver.cpsat import Params
from opsched.solver.defaults import DEFAULT_SUBSOLVERS, DEFAULT_WORKERS
from opsched.validate import validate

#: ``--edge-finding``: ``Params.edge_finding`` (auto: off where named resources have
#: cumulatives, as shipped)
EDGE_FINDING = {"auto": None, "on": True, "off": False}


def _row(label: str, sel: list) -> str:
    """One table row: counts and times of the (units, name, schedule, known) rows in ``sel``."""
    t = [r[2].wall_time_s for r in sel]
    proven = sum(r[2].status.value == "OPTIMAL" for r in sel)
    match = sum(1 for r in sel if r[3] and r[3][0] == r[3][1] and r[2].makespan == r[3][0])
    below = sum(1 for r in sel if r[3] and r[2].makespan is not None and r[2].makespan < r[3][0])
    return (
        f"| {label} | {len(sel)} | {proven} | {match} | {below} | {statistics.mean(t):.3f} | "
        f"{statistics.median(t):.3f} | {max(t):.2f} |"
    )


def instances(name: str, limit: int | None, open_only: bool):
    if name == "j30":
        opt = psplib_optima()
        for f in sorted(dataset_path("psplib/j30").glob("*.sm"))[:limit]:
            g = read_psplib(f)
            o = opt.get(g.name)
            yield "-", Problem(g, Machine(units=None)), (o, o) if o is not None else None
        return
    size = name.removeprefix("stg")
    for k in (2, 4, 8, 16):
        opt = stg_optima(k) if size == "50" else {}
        for f in sorted(dataset_path(f"stg/{size}").glob("rand*.stg"))[:limit]:
            known = opt.get(Path(f).stem)
            if open_only and (known is None or known[0] == known[1]):
                continue
            yield k, Problem(read_stg(f), Machine(units=k)), known


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="stg50", choices=["stg50", "stg100", "stg300", "j30"])
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    ap.add_argument("--limit", type=int, default=None, help="first N files only")
    ap.add_argument(
        "--subsolvers",
        default=",".join(DEFAULT_SUBSOLVERS),
        help="CP-SAT worker strategies, comma-separated ('': CP-SAT's choice)",
    )
    ap.add_argument("--no-full-search", action="store_true",
                    help="let CP-SAT give threads to neighbourhood searches (the old default, "
                         "with --workers 4 --subsolvers '')")  # fmt: skip
    ap.add_argument("--no-nested", action="store_true",
                    help="without the nested heads (opsched.analysis.ramp.nested_heads), to "
                         "compare")  # fmt: skip
    ap.add_argument("--edge-finding", choices=list(EDGE_FINDING), default="auto",
                    help="CP-SAT's timetable edge finding (Params.edge_finding; auto: on "
                         "unless named resources have cumulatives)")  # fmt: skip
    ap.add_argument("--open-only", action="store_true", help="only instances the table leaves open")
    ap.add_argument("--csv", type=Path, default=None, help="also write one row per instance")
    ap.add_argument(
        "--write-table",
        type=Path,
        default=None,
        help="write CaseN_P_CPSAT.csv optimum tables (the STG format) into this folder",
    )
    a = ap.parse_args()

    rows = []
    t0 = time.perf_counter()
    for k, p, known in instances(a.set, a.limit, a.open_only):
        params = Params(num_workers=a.workers, full_search=not a.no_full_search,
                        nested=not a.no_nested, edge_finding=EDGE_FINDING[a.edge_finding],
                        subsolvers=tuple(x for x in a.subsolvers.split(",") if x))  # fmt: skip
        r = solve_cpsat(p, time_limit=a.time_limit, params=params)
        rep = validate(p, r)
        if r.has_schedule and not rep.valid:
            sys.exit(f"INVALID schedule on {p.graph.name} k={k}: {rep.violations[0]}")
        rows.append((k, p.graph.name, r, known))
        done = len(rows)
        print(f"\r{done} solved, {time.perf_counter() - t0:.0f} s", end="", file=sys.stderr)
    print(file=sys.stderr)

    print(f"\nCP-SAT on {a.set}, time limit {a.time_limit:g} s, {a.workers} workers"
          f"{', without the nested heads' if a.no_nested else ''}\n")  # fmt: skip
    print(
        "| units | instances | proven optimal | = published opt | < published LB | "
        "mean s | median s | max s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for k in sorted({r[0] for r in rows}, key=str):
        print(_row(str(k), [r for r in rows if r[0] == k]))
    if len({r[0] for r in rows}) > 1:
        print(_row("all", rows))
    known = [r for r in rows if r[3] and r[3][0] == r[3][1]]
    if known:
        t = [r[2].wall_time_s for r in known]
        ok = sum(r[2].status.value == "OPTIMAL" and r[2].makespan == r[3][0] for r in known)
        print(f"\npublished optima: {ok}/{len(known)} matched and proven, "
              f"mean {statistics.mean(t):.3f} s, max {max(t):.2f} s")  # fmt: skip
    if a.csv:
        import csv

        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(
                [
                    "instance",
                    "units",
                    "status",
                    "makespan",
                    "lower_bound",
                    "wall_time_s",
                    "published_lb",
                    "published_ub",
                ]
            )
            for k, name, r, known in rows:
                w.writerow(
                    [
                        name,
                        k,
                        r.status.value,
                        r.makespan,
                        r.lower_bound,
                        f"{r.wall_time_s:.3f}",
                        *(known or ("", "")),
                    ]
                )
    print(
        f"\nreproduce: python benchmarks/bench_cpsat.py --set {a.set} "
        f"--time-limit {a.time_limit:g} --workers {a.workers}"
        + (" --open-only" if a.open_only else "")
        + (
            f" --subsolvers '{a.subsolvers}'"
            if a.subsolvers != ",".join(DEFAULT_SUBSOLVERS)
            else ""
        )
        + (" --no-full-search" if a.no_full_search else "")
        + (f" --edge-finding {a.edge_finding}" if a.edge_finding != "auto" else "")
    )


if __name__ == "__main__":
    main()

"""Make the STG 300 (or 100) optimum tables: no optima were ever published for these sets.

Phase 1 solves all 720 (graph, p) pairs with CP-SAT at a short time limit; phase 2 re-solves
the unproven ones at a longer limit. Every schedule is re-checked by the validator. The
result is written as ``Case300_P_CPSAT.csv`` in the STG table format: ``300/randNNNN.stg,P,OPT``
for a proven optimum, ``300/randNNNN.stg,P,LB,UB`` for an open one (LB proven by CP-SAT, UB
the best schedule found).

Reproduce (2 cores; about 20 minutes for phase 1 and up to an hour for phase 2):
    python benchmarks/stg300_table.py --short 10 --long 60 --out datasets/stg/optimal
    python benchmarks/stg300_table.py --size 100 --short 10 --long 30   # the 100-task set
    # or reuse a phase-1 run: --phase1-csv stg300.csv (written by bench_cpsat.py --csv)
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

from opsched.datasets import dataset_path
from opsched.importers import read_stg
from opsched.problem import Machine, Problem
from opsched.solver import solve_cpsat
from opsched.validate import validate

PROCS = (2, 4, 8, 16)


def solve(name: str, k: int, limit: float, size: int = 300) -> tuple[str, int, int]:
    p = Problem(read_stg(dataset_path(f"stg/{size}/{name}.stg")), Machine(units=k))
    r = solve_cpsat(p, time_limit=limit)
    if r.makespan is None or not validate(p, r).valid:
        sys.exit(f"no valid schedule for {name} on {k}")
    return r.status.value, int(r.lower_bound or 0), int(r.makespan)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, choices=(100, 300), default=300)
    ap.add_argument("--short", type=float, default=10.0)
    ap.add_argument("--long", type=float, default=60.0)
    ap.add_argument("--phase1-csv", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=Path("datasets/stg/optimal"))
    a = ap.parse_args()
    results: dict[tuple[str, int], tuple[str, int, int]] = {}
    if a.phase1_csv:
        with open(a.phase1_csv, newline="") as f:
            for row in csv.DictReader(f):
                results[(row["instance"], int(row["units"]))] = (
                    row["status"],
                    int(float(row["lower_bound"])),
                    int(float(row["makespan"])),
                )
    names = sorted(p.stem for p in dataset_path(f"stg/{a.size}").glob("rand*.stg"))
    t0 = time.perf_counter()
    for k in PROCS:
        for name in names:
            if (name, k) not in results:
                results[(name, k)] = solve(name, k, a.short, a.size)
    open_pairs = [key for key, v in results.items() if v[0] != "OPTIMAL"]
    print(f"phase 1: {len(results) - len(open_pairs)}/{len(results)} proven at {a.short:g} s")
    for i, (name, k) in enumerate(open_pairs):
        results[(name, k)] = solve(name, k, a.long, a.size)
        print(f"\rphase 2: {i + 1}/{len(open_pairs)}, {time.perf_counter() - t0:.0f} s", end="",
              file=sys.stderr)  # fmt: skip
    print(file=sys.stderr)
    a.out.mkdir(parents=True, exist_ok=True)
    print(f"\n| p | proven at {a.short:g} s + {a.long:g} s | open |\n|---|---|---|")
    for k in PROCS:
        lines = []
        proven = 0
        for name in names:
            status, lb, ub = results[(name, k)]
            if status == "OPTIMAL":
                proven += 1
                lines.append(f"{a.size}/{name}.stg,{k},{ub}")
            else:
                lines.append(f"{a.size}/{name}.stg,{k},{lb},{ub}")
        (a.out / f"Case{a.size}_{k}_CPSAT.csv").write_text("\n".join(lines) + "\n")
        print(f"| {k} | {proven}/{len(names)} | {len(names) - proven} |")
    print(
        f"\nreproduce: python benchmarks/stg300_table.py --size {a.size} "
        f"--short {a.short:g} --long {a.long:g}"
    )


if __name__ == "__main__":
    main()

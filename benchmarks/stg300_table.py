"""Make the STG 300 (or 100) optimum tables: no optima were ever published for these sets.
With ``--size 50``: solve the pairs the published 50-task table leaves open.

Phase 1 solves all 720 (graph, p) pairs with CP-SAT at a short time limit; phase 2 re-solves
the unproven ones at a longer limit. Every schedule is re-checked by the validator. The
result is written as ``Case300_P_CPSAT.csv`` in the STG table format: ``300/randNNNN.stg,P,OPT``
for a proven optimum, ``300/randNNNN.stg,P,LB,UB`` for an open one (LB proven by CP-SAT, UB
the best schedule found).

Reproduce (2 cores; about 20 minutes for phase 1 and up to an hour for phase 2):
    python benchmarks/stg300_table.py --short 10 --long 60 --out datasets/stg/optimal
    python benchmarks/stg300_table.py --size 100 --short 10 --long 30   # the 100-task set
    # or reuse a phase-1 run: --phase1-csv stg300.csv (written by bench_cpsat.py --csv)
    # or only re-solve the pairs an existing table leaves open (at --long), keeping the
    # better of the old and new bounds:
    python benchmarks/stg300_table.py --reprove --long 60 --workers 4
    # only the open pairs within 2 of their bound, 300 s each:
    python benchmarks/stg300_table.py --reprove --long 300 --max-gap 2
    # the 51 pairs the published STG 50 table leaves open, 60 s each, then 600 s for any
    # still open; writes Case50_open_CPSAT.csv (read by stg_optima(p, closures=True)):
    python benchmarks/stg300_table.py --size 50 --short 60 --long 600
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

from opsched._files import write_text_atomic
from opsched.datasets import STG50_CLOSURES, dataset_path, stg_optima
from opsched.importers import read_stg
from opsched.problem import Machine, Problem
from opsched.solver import solve_cpsat
from opsched.solver.defaults import DEFAULT_WORKERS
from opsched.validate import validate

PROCS = (2, 4, 8, 16)


def solve(
    name: str, k: int, limit: float, size: int = 300, workers: int = DEFAULT_WORKERS
) -> tuple[str, int, int]:
    p = Problem(read_stg(dataset_path(f"stg/{size}/{name}.stg")), Machine(units=k))
    r = solve_cpsat(p, time_limit=limit, num_workers=workers)
    if r.makespan is None or not validate(p, r).valid:
        sys.exit(f"no valid schedule for {name} on {k}")
    return r.status.value, int(r.lower_bound or 0), int(r.makespan)


def reprove(out: Path, size: int, limit: float, workers: int, max_gap: int | None = None) -> None:
    """Re-solve the open ``LB,UB`` rows of the tables in ``out``; keep the best bounds.

    ``max_gap``: only the rows with ``UB - LB`` at most this (the others are left as they are).

    A new proven lower bound and a new validated schedule are both valid whatever run found
    them, so a row keeps ``max(LB)`` and ``min(UB)`` and becomes ``OPT`` when they meet.
    """
    t0 = time.perf_counter()
    for k in PROCS:
        path = out / f"Case{size}_{k}_CPSAT.csv"
        lines = path.read_text().splitlines()
        closed = still = 0
        for i, line in enumerate(lines):
            cells = line.split(",")
            if len(cells) != 4:
                continue
            if max_gap is not None and int(cells[3]) - int(cells[2]) > max_gap:
                continue
            name = Path(cells[0]).stem
            status, lb, ub = solve(name, k, limit, size, workers)
            lb, ub = max(lb, int(cells[2])), min(ub, int(cells[3]))
            if status == "OPTIMAL" or lb >= ub:
                lines[i] = f"{cells[0]},{k},{ub}"
                closed += 1
            else:
                lines[i] = f"{cells[0]},{k},{lb},{ub}"
                still += 1
            print(f"\rp={k}: {closed} closed, {still} open, {time.perf_counter() - t0:.0f} s",
                  end="", file=sys.stderr)  # fmt: skip
        write_text_atomic("\n".join(lines) + "\n", path)
        print(file=sys.stderr)
        print(f"| {k} | {closed} closed | {still} still open |")
    gap = "" if max_gap is None else f" --max-gap {max_gap}"
    print(f"\nreproduce: python benchmarks/stg300_table.py --size {size} --reprove "
          f"--long {limit:g} --workers {workers}{gap}")  # fmt: skip


def close_published_open(out: Path, short: float, long: float, workers: int) -> None:
    """Solve the STG 50 pairs the published table leaves open; write :data:`STG50_CLOSURES`.

    Each pair gets ``short`` seconds, then ``long`` if still open. A row keeps the better of
    the published and the new bounds (both valid), so it never contradicts the table.
    """
    lines = []
    print("| instance | p | published | opsched | status | time s |\n|---|---|---|---|---|---|")
    for k in PROCS:
        for name, (lb0, ub0) in sorted(stg_optima(k, 50).items()):
            if lb0 == ub0:
                continue
            t0 = time.perf_counter()
            status, lb, ub = solve(name, k, short, 50, workers)
            if status != "OPTIMAL" and long > short:
                status, lb, ub = solve(name, k, long, 50, workers)
            lb, ub = max(lb, lb0), min(ub, ub0)
            wall = time.perf_counter() - t0
            cell = f"{ub}" if lb >= ub else f"{lb},{ub}"
            lines.append(f"50/{name}.stg,{k},{cell}")
            print(f"| {name} | {k} | {lb0}..{ub0} | {cell.replace(',', '..')} | "
                  f"{'OPTIMAL' if lb >= ub else status} | {wall:.1f} |", flush=True)  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic("\n".join(lines) + "\n", out / STG50_CLOSURES)
    closed = sum(1 for line in lines if line.count(",") == 2)
    print(f"\n{closed} of {len(lines)} closed; reproduce: python benchmarks/stg300_table.py "
          f"--size 50 --short {short:g} --long {long:g} --workers {workers}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, choices=(50, 100, 300), default=300,
                    help="50: only the pairs the published table leaves open")  # fmt: skip
    ap.add_argument("--short", type=float, default=10.0)
    ap.add_argument("--long", type=float, default=60.0)
    ap.add_argument("--phase1-csv", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=Path("datasets/stg/optimal"))
    ap.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    ap.add_argument("--reprove", action="store_true",
                    help="read the tables in --out and re-solve only their open pairs")  # fmt: skip
    ap.add_argument("--max-gap", type=int, default=None,
                    help="with --reprove: only open pairs with UB - LB at most this")  # fmt: skip
    a = ap.parse_args()
    results: dict[tuple[str, int], tuple[str, int, int]] = {}
    if a.size == 50:
        close_published_open(a.out, a.short, a.long, a.workers)
        return
    if a.reprove:
        reprove(a.out, a.size, a.long, a.workers, a.max_gap)
        return
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
                results[(name, k)] = solve(name, k, a.short, a.size, a.workers)
    open_pairs = [key for key, v in results.items() if v[0] != "OPTIMAL"]
    print(f"phase 1: {len(results) - len(open_pairs)}/{len(results)} proven at {a.short:g} s")
    for i, (name, k) in enumerate(open_pairs):
        results[(name, k)] = solve(name, k, a.long, a.size, a.workers)
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

"""The CP-SAT solve's starting schedule: greedy alone against the list schedules after it.

:mod:`opsched.solver.cpsat.hint` starts a solve without a memory cap or named resources from
the best of the greedy schedules and the portfolio's list schedules; ``Params(lists=False)``
keeps the greedy start alone. Each instance is solved both ways, one after the other (the
order alternating from one instance to the next), every schedule is validated, and the
table gives the proven count and the times of each. Instances where one way is more than a
second slower are listed.

Reproduce (2 cores):
    python benchmarks/bench_start.py --size 300 --procs 4 --first 40      # about 3 minutes
    python benchmarks/bench_start.py --size 50 --procs 4                  # about 1 minute

With ``--counts``, no solve: over the whole STG set of ``--size`` on 2 / 4 / 8 / 16
processors, the pairs whose lower bound (nested heads, as in the model's domain) equals the
known optimum, those whose greedy start and whose best list schedule (the portfolio's 32)
meet it, and those whose list start ends one tick above it (where the start goes on with
more perturbed b-levels; "already optimal" when that start is the known optimum):
    python benchmarks/bench_start.py --counts --size 300                   # about 2 minutes
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

from opsched.analysis import lower_bounds
from opsched.datasets import dataset_path, stg_optima
from opsched.importers import read_stg
from opsched.problem import Machine, Problem
from opsched.solver import solve_cpsat
from opsched.solver.cpsat import Params
from opsched.solver.cpsat.hint import heuristic_start
from opsched.validate import validate

PROCS = (2, 4, 8, 16)


def _problem(size: int, name: str, procs: int) -> Problem:
    return Problem(read_stg(dataset_path(f"stg/{size}/{name}.stg")), Machine(units=procs))


def _optima(size: int, procs: int) -> dict[str, tuple[int, int]]:
    return stg_optima(procs, size=size, closures=size == 50)


def counts(size: int) -> None:
    print(f"STG {size}: lower bound (nested heads) against the known optimum, and the starts")
    print(
        "| p | pairs | bound = optimum | greedy meets it | list schedules meet it | "
        "list start = bound + 1 | of which already optimal |"
    )
    print("|---|---|---|---|---|---|---|")
    for k in PROCS:
        row = [0] * 6
        for name, (lo, hi) in sorted(_optima(size, k).items()):
            p = _problem(size, name, k)
            bound = math.ceil(lower_bounds(p.graph, k, nested=True).value - 1e-9)
            greedy_ms = heuristic_start(p).makespan
            listed = heuristic_start(p, seconds=None, target=bound).makespan
            one_above = listed == bound + 1
            new = [
                1,
                lo == hi == bound,
                greedy_ms <= bound,
                listed <= bound,
                one_above,
                one_above and lo == hi == listed,
            ]
            row = [a + b for a, b in zip(row, new, strict=True)]
        print(f"| {k} | " + " | ".join(str(int(x)) for x in row) + " |", flush=True)
    print(f"\nreproduce: python benchmarks/bench_start.py --counts --size {size}")


def side_by_side(size: int, procs: int, first: int | None, limit: float) -> None:
    names = sorted(_optima(size, procs))[:first]
    ways = {"greedy start": Params(lists=False), "list schedules": Params()}
    rows: dict[str, list[tuple[str, bool, float]]] = {w: [] for w in ways}
    t0 = time.perf_counter()
    for i, name in enumerate(names):
        p = _problem(size, name, procs)
        order = list(ways) if i % 2 == 0 else list(reversed(ways))
        for way in order:
            t = time.perf_counter()
            r = solve_cpsat(p, time_limit=limit, params=ways[way])
            wall = time.perf_counter() - t
            if r.has_schedule and not validate(p, r).valid:
                sys.exit(f"INVALID schedule: {name} on {procs}, {way}")
            rows[way].append((name, r.status.value == "OPTIMAL", wall))
        print(f"\r{i + 1}/{len(names)}, {time.perf_counter() - t0:.0f} s", end="", file=sys.stderr)
    print(file=sys.stderr)
    print(f"STG {size} on {procs} processors, {len(names)} graphs, {limit:g} s each (2 cores)\n")
    print("| start | proven | mean s | median s | max s | all s |\n|---|---|---|---|---|---|")
    for way, got in rows.items():
        ts = [t for _, _, t in got]
        print(f"| {way} | {sum(ok for _, ok, _ in got)} / {len(got)} | {statistics.mean(ts):.3f} "
              f"| {statistics.median(ts):.3f} | {max(ts):.2f} | {sum(ts):.0f} |")  # fmt: skip
    a, b = rows["greedy start"], rows["list schedules"]
    pairs = [(x[0], round(x[2], 2), round(y[2], 2)) for x, y in zip(a, b, strict=True)]
    slower = [r for r in pairs if r[2] > r[1] + 1]
    faster = [r for r in pairs if r[1] > r[2] + 1]
    print(f"\nmore than 1 s slower from the list schedules (greedy s, list s): {slower}")
    print(f"more than 1 s faster: {faster}")
    first_arg = f" --first {first}" if first else ""
    print(f"\nreproduce: python benchmarks/bench_start.py --size {size} --procs {procs}"
          f"{first_arg} --time-limit {limit:g}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, choices=(50, 100, 300), default=300)
    ap.add_argument("--procs", type=int, choices=PROCS, default=4)
    ap.add_argument("--first", type=int, default=None, help="the first N graphs only")
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--counts", action="store_true", help="count the bounds and starts only")
    a = ap.parse_args()
    if a.counts:
        counts(a.size)
    else:
        side_by_side(a.size, a.procs, a.first, a.time_limit)


if __name__ == "__main__":
    main()

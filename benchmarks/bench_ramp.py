"""The ramp bound on the STG 300 pairs CP-SAT had left open: with and without it, side by side.

The 28 (graph, P) pairs below were still open in ``datasets/stg/optimal/Case300_P_CPSAT.csv``
before the ramp bound (:mod:`opsched.analysis.ramp`) was added: every run, up to 600 s each,
had ended above the work bound. Each is solved twice with the same time limit, once with the
solver's defaults and once with ``Params(ramp=False)``, and every schedule is validated.
Prints the ramp bound, the other bounds, and per run the status, CP-SAT's bound, the
makespan and the time; last, how long ``lower_bounds`` took per graph.

Reproduce (2 cores, about 10 minutes):
    python benchmarks/bench_ramp.py --time-limit 10

With ``--raised`` it only counts, over STG 50 / 100 / 300 on 2-16 processors and J30, the
instances whose bound the ramp bound raises above every other bound, and checks that it lies
at or below every known optimum or best schedule (about 15 s):
    python benchmarks/bench_ramp.py --raised
"""

from __future__ import annotations

import argparse
import sys
import time

from opsched.analysis import lower_bounds
from opsched.datasets import dataset_path, psplib_optima, stg_optima
from opsched.importers import read_psplib, read_stg
from opsched.problem import Machine, Problem
from opsched.solver import solve_cpsat
from opsched.solver.cpsat import Params
from opsched.solver.defaults import DEFAULT_WORKERS
from opsched.validate import validate

#: (graph, processors) pairs open in the STG 300 table before the ramp bound
OPEN_BEFORE = (
    [("rand0013", 2)]
    + [
        (f"rand{i:04d}", 4)
        for i in (0, 4, 11, 18, 24, 28, 75, 78, 122, 125, 130, 132, 133, 143, 152, 156, 159)
    ]
    + [(f"rand{i:04d}", 8) for i in (26, 52, 54, 80, 92, 96, 99, 100, 145, 146)]
)


def raised() -> None:
    """Per set: instances, those the ramp bound raises, and a check against every optimum."""
    print("| set | instances | raised by the ramp bound |\n|---|---|---|")
    for size in (50, 100, 300):
        n = up = 0
        for k in (2, 4, 8, 16):
            for name, (_, best) in sorted(stg_optima(k, size=size).items()):
                g = read_stg(dataset_path(f"stg/{size}/{name}.stg"))
                lb = lower_bounds(g, units=k)
                if lb.value > best:
                    sys.exit(f"ramp bound {lb.value:g} above {best} for {name} on {k}")
                n += 1
                up += lb.value > max(lb.critical_path, lb.work, lb.serial)
        print(f"| STG {size}, p = 2/4/8/16 | {n} | {up} |")
    n = up = 0
    for name, opt in sorted(psplib_optima().items()):
        lb = lower_bounds(read_psplib(dataset_path(f"psplib/j30/{name}.sm")))
        if lb.value > opt:
            sys.exit(f"ramp bound {lb.value:g} above the optimum {opt} of {name}")
        n += 1
        up += lb.value > max(lb.critical_path, *lb.energy.values())
    print(f"| J30 | {n} | {up} |")
    print("\nno bound above a known optimum or best schedule")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    ap.add_argument("--raised", action="store_true",
                    help="only count the instances whose bound it raises (no solving)")  # fmt: skip
    a = ap.parse_args()
    if a.raised:
        raised()
        return
    print("| graph | P | other bounds | ramp bound | with: status, bound..makespan, time | "
          "without: status, bound..makespan, time |\n|---|---|---|---|---|---|")  # fmt: skip
    proven = {True: 0, False: 0}
    took: list[float] = []  # lower_bounds, ramp bound included, per graph
    for name, k in OPEN_BEFORE:
        g = read_stg(dataset_path(f"stg/300/{name}.stg"))
        t0 = time.perf_counter()
        lb = lower_bounds(g, units=k)
        took.append(time.perf_counter() - t0)
        cells = []
        for ramp in (True, False):
            p = Problem(g, Machine(units=k))
            r = solve_cpsat(p, params=Params(time_limit=a.time_limit, num_workers=a.workers,
                                             ramp=ramp))  # fmt: skip
            if not r.has_schedule or not validate(p, r).valid:
                sys.exit(f"no valid schedule for {name} on {k}")
            ok = r.status.value == "OPTIMAL"
            proven[ramp] += ok
            # CP-SAT's own bound (the reported lower bound also holds the ramp bound)
            own = r.info["stages"][0].get("objective_bound")
            shown = f"{own:g}" if own is not None else "-"
            cells.append(f"{r.status.value} {shown}..{r.makespan:g} {r.wall_time_s:.1f} s")
        others = max(lb.critical_path, lb.work, lb.serial)
        print(f"| {name} | {k} | {others:g} | {lb.ramp['units']:g} | {cells[0]} | {cells[1]} |",
              flush=True)  # fmt: skip
    n = len(OPEN_BEFORE)
    print(f"\nproven within {a.time_limit:g} s: with the ramp bound {proven[True]} / {n}, "
          f"without {proven[False]} / {n}; lower_bounds took {1e3 * min(took):.0f}-"
          f"{1e3 * max(took):.0f} ms a graph")  # fmt: skip


if __name__ == "__main__":
    main()

"""The ramp bound on the STG 300 pairs CP-SAT had left open: with and without it, side by side.

The 28 (graph, P) pairs below were still open in ``datasets/stg/optimal/Case300_P_CPSAT.csv``
before the ramp bound (:mod:`opsched.analysis.ramp`) was added: every run, up to 600 s each,
had ended above the work bound. Each is solved twice with the same time limit, once with the
solver's defaults and once with ``Params(ramp=False)``, and every schedule is validated.
Prints the ramp bound, the other bounds, and per run the status, CP-SAT's bound, the
makespan and the time; last, how long ``lower_bounds`` took per graph.

Reproduce (2 cores, about 10 minutes):
    python benchmarks/bench_ramp.py --time-limit 10

With ``--nested``, the same for the 9 pairs still open with the ramp bound and its energy
heads, with the solver's defaults and with ``Params(nested=False)`` (the nested heads,
:func:`opsched.analysis.ramp.nested_heads`, in the makespan's bound, and their tails in the
start domains); the last line also says what the nesting adds to ``lower_bounds``' time
(about 3 minutes):
    python benchmarks/bench_ramp.py --nested --time-limit 10

With ``--raised`` it only counts, over STG 50 / 100 / 300 on 2-16 processors and J30, the
instances whose bound the ramp bound raises above every other bound, and those the nested
heads raise further, and checks that it lies at or below every known optimum or best
schedule (about 3 minutes):
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

#: pairs still open with the energy heads, before the nested heads (ramp.nested_heads)
OPEN_BEFORE_NESTED = [(f"rand{i:04d}", 4) for i in (0, 4, 18, 24, 28, 122, 133)] + [
    ("rand0052", 8),
    ("rand0054", 8),
]


def raised() -> None:
    """Per set: instances, those the ramp bound raises (and the nested heads raise further),
    and a check of both against every optimum or best schedule known."""
    print("| set | instances | raised by the ramp bound | raised further by nesting |\n"
          "|---|---|---|---|")  # fmt: skip
    for size in (50, 100, 300):
        n = up = more = 0
        for k in (2, 4, 8, 16):
            for name, (_, best) in sorted(stg_optima(k, size=size).items()):
                g = read_stg(dataset_path(f"stg/{size}/{name}.stg"))
                lb, nested = lower_bounds(g, units=k), lower_bounds(g, units=k, nested=True)
                if nested.value > best:
                    sys.exit(f"ramp bound {nested.value:g} above {best} for {name} on {k}")
                n += 1
                up += lb.value > max(lb.critical_path, lb.work, lb.serial)
                more += nested.value > lb.value
        print(f"| STG {size}, p = 2/4/8/16 | {n} | {up} | {more} |", flush=True)
    n = up = more = 0
    for name, opt in sorted(psplib_optima().items()):
        g = read_psplib(dataset_path(f"psplib/j30/{name}.sm"))
        lb, nested = lower_bounds(g), lower_bounds(g, nested=True)
        if nested.value > opt:
            sys.exit(f"ramp bound {nested.value:g} above the optimum {opt} of {name}")
        n += 1
        up += lb.value > max(lb.critical_path, *lb.energy.values())
        more += nested.value > lb.value
    print(f"| J30 | {n} | {up} | {more} |")
    print("\nno bound above a known optimum or best schedule")


def side_by_side(pairs: list[tuple[str, int]], off: Params, label: str, limit: float,
                 workers: int) -> None:  # fmt: skip
    """Solve each pair with the defaults and with ``off``; print both and the counts."""
    head = "| graph | P | other bounds | ramp bound | nested | with: status, bound..makespan, time"
    print(f"{head} | {label}: status, bound..makespan, time |\n|---|---|---|---|---|---|---|")
    proven = {True: 0, False: 0}
    took: list[float] = []  # lower_bounds, ramp bound included, per graph
    nesting: list[float] = []  # what nested=True adds (the energy heads kept from the first)
    for name, k in pairs:
        g = read_stg(dataset_path(f"stg/300/{name}.stg"))
        t0 = time.perf_counter()
        lb = lower_bounds(g, units=k)
        took.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        nested = lower_bounds(g, units=k, nested=True).ramp["units"]
        nesting.append(time.perf_counter() - t0)
        cells = []
        for on in (True, False):
            p = Problem(g, Machine(units=k))
            params = Params(time_limit=limit, num_workers=workers) if on else off
            r = solve_cpsat(p, params=params)
            if not r.has_schedule or not validate(p, r).valid:
                sys.exit(f"no valid schedule for {name} on {k}")
            ok = r.status.value == "OPTIMAL"
            proven[on] += ok
            # CP-SAT's own bound (the reported lower bound also holds the ramp bound)
            own = r.info["stages"][0].get("objective_bound")
            shown = f"{own:g}" if own is not None else "-"
            cells.append(f"{r.status.value} {shown}..{r.makespan:g} {r.wall_time_s:.1f} s")
        others = max(lb.critical_path, lb.work, lb.serial)
        print(f"| {name} | {k} | {others:g} | {lb.ramp['units']:g} | {nested:g} | {cells[0]} | "
              f"{cells[1]} |", flush=True)  # fmt: skip
    n = len(pairs)
    print(f"\nproven within {limit:g} s: with the defaults {proven[True]} / {n}, {label} "
          f"{proven[False]} / {n}; lower_bounds (without nesting) took {1e3 * min(took):.0f}-"
          f"{1e3 * max(took):.0f} ms a graph, the nesting {1e3 * min(nesting):.0f}-"
          f"{1e3 * max(nesting):.0f} ms more")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    ap.add_argument("--raised", action="store_true",
                    help="only count the instances whose bound it raises (no solving)")  # fmt: skip
    ap.add_argument("--nested", action="store_true",
                    help="the 9 pairs open before nesting, with and without it")  # fmt: skip
    a = ap.parse_args()
    if a.raised:
        raised()
    elif a.nested:
        off = Params(time_limit=a.time_limit, num_workers=a.workers, nested=False)
        side_by_side(OPEN_BEFORE_NESTED, off, "without nesting", a.time_limit, a.workers)
    else:
        off = Params(time_limit=a.time_limit, num_workers=a.workers, ramp=False)
        side_by_side(OPEN_BEFORE, off, "without the ramp", a.time_limit, a.workers)


if __name__ == "__main__":
    main()

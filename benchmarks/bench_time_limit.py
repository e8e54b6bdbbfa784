"""How far past its time limit ``solve_cpsat`` ends, on an idle or a loaded machine.

The tight zoo pieces of ``bench_zoo_memory.py`` (the cap at 60 % of the uncapped peak, or
the least one-unit peak if higher), where the down-set search runs, are solved with
``time_limit``; ``--load N`` starts N busy processes first (on 2 cores, 6 of them put the
load average near 7). Printed per run: the wall time outside the call minus the limit, the
status and the seconds the down-set search took against its share (0.4 of the limit).

The search's budgets are counts; before it also stopped by the clock, RandWire stage4 on 2
units with a 10 s limit under ``--load 6`` took 17.4 s (the search 14.8 s against its 4),
now 10.0 s with the search stopped after 4.2 s (one run each, the old code from a scratch
copy).

    python benchmarks/bench_time_limit.py --load 6          # about 1 minute
    python benchmarks/bench_time_limit.py --time-limit 2 --load 0
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from bench_zoo_memory import cap_floor, piece_graphs, uncapped_peak

from opsched.problem import Machine, Problem
from opsched.solver import solve_cpsat
from opsched.validate import validate

RUNS = [("cell_0..cell_3", 2), ("cell_1..cell_5 + reduction_0", 4), ("stage4", 2), ("stage4", 4)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--load", type=int, default=0, help="busy processes to start first")
    a = ap.parse_args()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(a.load)]  # fmt: skip
    try:
        time.sleep(1.0 if busy else 0.0)
        print(f"time limit {a.time_limit:g} s, {a.load} busy processes\n")
        print("| piece | units | over the limit s | status | down-set search s | valid |")
        print("|---|---|---|---|---|---|")
        pieces = {label: g for _, label, g in piece_graphs(None, 1.0)}
        for label, k in RUNS:
            g = pieces[label]
            base = Problem(g, Machine(units=k))
            p = base.with_machine(memory_cap=max(cap_floor(g), int(0.6 * uncapped_peak(base))))
            t = time.perf_counter()
            r = solve_cpsat(p, time_limit=a.time_limit)
            over = time.perf_counter() - t - a.time_limit
            search = r.info.get("downsets", {}).get("seconds", "")
            print(f"| {label} | {k} | {over:+.2f} | {r.status.value} | {search} | "
                  f"{validate(p, r).valid} |", flush=True)  # fmt: skip
    finally:
        for b in busy:
            b.kill()


if __name__ == "__main__":
    main()

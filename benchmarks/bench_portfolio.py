"""The portfolio's 32 list candidates on arrays against the same run with a Schedule per
candidate (the path noise and memory caps still take), side by side in one process.

Without noise or a cap, ``portfolio`` keeps each list candidate as start and unit arrays,
ranks them by makespan, computes a peak memory only where makespans tie, and builds a
Schedule for the winner alone. The other path builds one per candidate (and a second for
each forward-backward improvement). Both give the same winner and schedule (checked here
and in ``tests/heuristics/test_portfolio.py``). Layered random DAGs on 8 units; the first
size also loads the compiled kernels, so it runs once before the timed runs.

    python benchmarks/bench_portfolio.py                       # 10k, 30k, 100k ops
    python benchmarks/bench_portfolio.py --sizes 10000 100000
"""

from __future__ import annotations

import argparse
import time

import opsched.heuristics.portfolio as pf
from opsched.heuristics.portfolio import portfolio
from opsched.problem import Machine, Problem
from opsched.zoo.generators import layered


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    ap.add_argument("--units", type=int, default=8)
    a = ap.parse_args()
    portfolio(Problem(layered(300, seed=9), Machine(units=a.units)))  # compile the kernels
    on_arrays = pf._on_arrays
    print(f"{'ops':>8} {'schedules (s)':>14} {'arrays (s)':>11} {'ratio':>6}  same result")
    for n in a.sizes:
        p = Problem(layered(n, seed=1), Machine(units=a.units))
        pf._on_arrays = lambda problem: False  # type: ignore[assignment]
        t = time.perf_counter()
        slow = portfolio(p)
        slow_s = time.perf_counter() - t
        pf._on_arrays = on_arrays  # type: ignore[assignment]
        t = time.perf_counter()
        fast = portfolio(p)
        fast_s = time.perf_counter() - t
        same = (
            fast.info["winner"] == slow.info["winner"]
            and fast.starts() == slow.starts()
            and fast.peak_memory == slow.peak_memory
        )
        print(f"{n:>8} {slow_s:>14.2f} {fast_s:>11.2f} {slow_s / fast_s:>5.1f}x  {same}")


if __name__ == "__main__":
    main()

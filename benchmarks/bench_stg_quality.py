"""Heuristics against the STG optimum tables (50 tasks: published; 100 and 300: CP-SAT's).

For every (graph, processors) pair with a proven optimum: the gap of ``list`` (Graham,
b-level), ``heft`` (insertion) and ``portfolio``; mean, max and share optimal per processor
count.

    python benchmarks/bench_stg_quality.py --size 100        # about a minute
    python benchmarks/bench_stg_quality.py --size 50 --size 100
"""

from __future__ import annotations

import argparse

import numpy as np

from opsched.datasets import dataset_path, stg_optima
from opsched.heuristics.listsched import list_schedule
from opsched.heuristics.portfolio import portfolio
from opsched.importers import read_graph
from opsched.problem import Machine, Problem
from opsched.validate import validate

SOLVERS = {
    "list": lambda p: list_schedule(p),
    "heft": lambda p: list_schedule(p, "heft", "insertion"),
    "portfolio": portfolio,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, action="append", choices=(50, 100, 300))
    args = ap.parse_args()
    print(f"{'set':>7} {'p':>3} {'solver':>10} {'n':>4} {'mean gap %':>11} {'max gap %':>10} "
          f"{'optimal':>8}")  # fmt: skip
    for size in args.size or [100]:
        for procs in (2, 4, 8, 16):
            gaps: dict[str, list[float]] = {k: [] for k in SOLVERS}
            for name, (lb, ub) in sorted(stg_optima(procs, size).items()):
                if lb != ub:
                    continue
                p = Problem(
                    read_graph(dataset_path(f"stg/{size}/{name}.stg")), Machine(units=procs)
                )
                for k, fn in SOLVERS.items():
                    s = fn(p)
                    assert validate(p, s).valid, (name, k)
                    gaps[k].append((s.makespan - ub) / ub * 100)
            for k, v in gaps.items():
                a = np.array(v)
                print(f"{'STG' + str(size):>7} {procs:>3} {k:>10} {len(a):>4} {a.mean():>11.3f} "
                      f"{a.max():>10.2f} {np.mean(a < 1e-9) * 100:>7.0f}%")  # fmt: skip


if __name__ == "__main__":
    main()

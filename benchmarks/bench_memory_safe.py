"""Memory-capped list schedules on wide graphs: which ones reach a dead end, and how long the
rest are.

Random layered DAGs (``opsched.zoo.generators.layered``) on 8 units under caps of 1.0 / 1.1 /
1.3 / 2.0 times the peak of the one-unit min-memory order. Each cell: makespan over the lower
bound (``dead end`` when the schedule stops with nothing running and nothing fitting) and
seconds, side by side in one process:

- ``list, order``: the min-memory order as list priority, memory-feasible non-delay placement;
- ``list, b-level``: b-level priority, same placement (``list-memory``);
- ``in order``: ops strictly in the one-unit order (never a dead end);
- ``safe, order`` / ``safe, b-level``: :func:`opsched.heuristics.safe_list.safe_list`, the
  in-order schedule plus early starts the cap provably allows.

``memory-list`` keeps the shortest of all five. Every schedule is validated. With
``--memory-list``, each size also times the whole ``memory-list`` (its own order search
included) at a cap of greedy's uncapped peak, and prints its makespan over the bound.

    python benchmarks/bench_memory_safe.py [--sizes 2000 10000] [--units 8]
    python benchmarks/bench_memory_safe.py --sizes 40000 --fractions 1.0
    python benchmarks/bench_memory_safe.py --sizes 100000 --fractions --memory-list
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from opsched.analysis.bounds import lower_bounds
from opsched.heuristics.greedy import greedy
from opsched.heuristics.listsched import list_schedule
from opsched.heuristics.memory import min_memory_order
from opsched.heuristics.memory.common import order_peak
from opsched.heuristics.memory_list import in_order, memory_list
from opsched.heuristics.safe_list import safe_list
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule, Status
from opsched.validate import validate
from opsched.zoo.generators import layered


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 10000])
    ap.add_argument("--units", type=int, default=8)
    ap.add_argument("--fractions", type=float, nargs="*", default=[1.0, 1.1, 1.3, 2.0])
    ap.add_argument("--memory-list", action="store_true", help="also time memory-list whole")
    args = ap.parse_args()
    cols = ["list, order", "list, b-level", "in order", "safe, order", "safe, b-level"]
    print("| ops | cap / order peak | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for n in args.sizes:
        g = layered(n, seed=1)
        if args.memory_list:
            p0 = Problem(g, Machine(units=args.units))
            cap = validate(p0, greedy(p0)).peak_memory
            p = Problem(g, Machine(units=args.units, memory_cap=cap))
            t = time.perf_counter()
            s = memory_list(p)
            secs = time.perf_counter() - t
            assert s.status == Status.FEASIBLE and validate(p, s).valid
            lb = lower_bounds(g, args.units).value
            print(f"<!-- {n} ops: memory-list at greedy's peak {cap:,} B: {secs:.1f} s, makespan "
                  f"{s.makespan:g} against the bound {lb:g} ({s.info['priority']}) -->",
                  flush=True)  # fmt: skip
        if not args.fractions:
            continue
        t = time.perf_counter()
        order = np.asarray(min_memory_order(g))
        secs = time.perf_counter() - t
        peak = order_peak(g, order)
        lb = lower_bounds(g, args.units).value
        print(f"<!-- {n} ops: min-memory order {secs:.1f} s, peak {peak:,} B, bound {lb:g} -->")
        prio = np.empty(n)
        prio[order] = np.arange(n, 0, -1, dtype=np.float64)
        for f in args.fractions:
            p = Problem(g, Machine(units=args.units, memory_cap=int(peak * f)))
            runs: list[Callable[[], Schedule]] = [
                lambda p=p, q=prio: list_schedule(p, q, "memory"),
                lambda p=p: list_schedule(p, "b-level", "memory"),
                lambda p=p, o=order: in_order(p, o),
                lambda p=p, o=order: safe_list(p, o, "order"),
                lambda p=p, o=order: safe_list(p, o, "b-level"),
            ]
            cells = []
            for run in runs:
                t = time.perf_counter()
                s = run()
                secs = time.perf_counter() - t
                if s.status != Status.FEASIBLE:
                    cells.append(f"dead end, {secs:.2f} s")
                    continue
                assert validate(p, s).valid, s.solver
                cells.append(f"{(s.makespan or 0) / lb:.3f}, {secs:.2f} s")
            print(f"| {n:,} | {f:.1f} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()

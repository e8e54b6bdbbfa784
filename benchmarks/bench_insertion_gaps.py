"""Insertion placement (``heft``, ``list-*-insertion``, ``portfolio``) on graphs that leave
a trail of idle gaps.

A chain of unit-time ops with a side op hanging off every second one, on 2 units: the chain
fills one unit, the side ops land on the other one each just after its input, so every
side op leaves a gap of one tick behind it that nothing can use again. The placement keeps
each unit's gaps in a list; it used to walk all of them for every op (quadratic), and now
drops the gaps no op can use any more from the front of the list (every op still to place
is ready no earlier than the earliest ready op waiting, so a gap that ends before that
plus the shortest duration is dead). Schedules are the same (3,000 random graphs, keys and
unit counts, compared op by op with a scratch copy of the old kernel).

Measured side by side with that copy, the kernel alone with b-level keys at 15,000 / 60,000 /
240,000 ops: 0.039 / 0.598 / 9.50 s before, 0.003 / 0.014 / 0.057 s after; ``portfolio``
(22 candidates and forward-backward passes) at 15,000 / 30,000 / 60,000 ops: 7.7 / 27.9 /
108.8 s before, 3.1 / 4.6 / 12.3 s after. This script prints the current code's times (the
kernel alone with b-level keys, ``heft`` with its ranks and the schedule built around it,
``portfolio``) and the growth exponent between sizes (1 is linear).

    python benchmarks/bench_insertion_gaps.py [--sizes 15000 60000 240000] [--portfolio-max 60000]
        [--layered-sizes 30000 100000 300000]

A second table times the kernel alone on layered DAGs with ``random``, ``perturbed`` and
``b-level`` priorities (the gap index's case, :mod:`opsched.heuristics._insertion`).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from opsched.analysis.ranks import priority
from opsched.heuristics._insertion import insertion
from opsched.heuristics.listsched import list_schedule
from opsched.heuristics.portfolio import portfolio
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.validate import validate
from opsched.zoo.generators import layered


def staircase(n: int) -> Problem:
    m = n // 3
    ops = [Op(f"c{i}", 1, deps=(f"c{i - 1}",) if i else ()) for i in range(2 * m)]
    ops += [Op(f"x{i}", 1, deps=(f"c{2 * i}",)) for i in range(m)]
    return Problem(OpGraph(tuple(ops)), Machine(units=2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[15000, 60000, 240000])
    ap.add_argument("--portfolio-max", type=int, default=60000)
    ap.add_argument("--layered-sizes", type=int, nargs="+", default=[30000, 100000, 300000])
    a = ap.parse_args()
    list_schedule(staircase(30), "heft", "insertion")  # load the compiled kernels
    print("| ops | kernel s | growth | heft s | growth | portfolio s | growth | makespan | valid |")
    print("|---|---|---|---|---|---|---|---|---|")
    last: dict[str, tuple[int, float]] = {}

    def grow(name: str, n: int, secs: float) -> str:
        prev = last.get(name)
        last[name] = (n, secs)
        if prev is None or prev[1] <= 0:
            return ""
        return f"{math.log(secs / prev[1]) / math.log(n / prev[0]):.2f}"

    for n in a.sizes:
        p = staircase(n)
        g = p.graph
        key = -np.asarray(priority(g, "b-level"), dtype=float)
        args = (2, g.durations, np.ones(g.num_ops, dtype=np.int64), key, g.pred_ptr, g.pred_idx,
                g.succ_ptr, g.succ_idx)  # fmt: skip
        t = time.perf_counter()
        insertion(*args)
        k = time.perf_counter() - t
        kg = grow("kernel", n, k)
        t = time.perf_counter()
        s = list_schedule(p, "heft", "insertion")
        h = time.perf_counter() - t
        hg = grow("heft", n, h)
        ps, pg = "", ""
        if n <= a.portfolio_max:
            t = time.perf_counter()
            portfolio(p)
            secs = time.perf_counter() - t
            ps, pg = f"{secs:.2f}", grow("portfolio", n, secs)
        print(f"| {n:,} | {k:.3f} | {kg} | {h:.3f} | {hg} | {ps} | {pg} | {s.makespan:g} | "
              f"{validate(p, s).valid} |", flush=True)  # fmt: skip

    # priorities far from topological order leave usable gaps behind: the gap index's case
    print("\nKernel alone on layered DAGs, 8 units (growth: exponent between sizes)\n")
    print("| ops | random s | growth | perturbed s | growth | b-level s | growth |")
    print("|---|---|---|---|---|---|---|")
    for n in a.layered_sizes:
        g = layered(n, seed=0)
        cells = []
        for rule in ("random", "perturbed", "b-level"):
            if rule == "random":
                key = np.random.default_rng(0).random(n)
            else:
                key = -np.asarray(priority(g, rule), dtype=float)
            args = (8, g.durations, np.ones(n, dtype=np.int64), key, g.pred_ptr, g.pred_idx,
                    g.succ_ptr, g.succ_idx)  # fmt: skip
            t = time.perf_counter()
            insertion(*args)
            secs = time.perf_counter() - t
            cells += [f"{secs:.3f}", grow(rule, n, secs)]
        print(f"| {n:,} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()

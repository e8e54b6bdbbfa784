"""The down-set table on its own: compile time, rows per second, and how far rows sit from
their hash slot.

First the search's kernels are compiled (or loaded from numba's cache: run it in a fresh
checkout for the compile time). Then the table of a graph whose down-sets far outnumber
any budget (``layered(50, seed=4)`` on 2 units at its 80 % cap, as in
``bench_memory.py``) is built at growing row budgets, side by side in one run: seconds,
rows per second, and the mean and largest distance of a row from its hash slot (linear
probing walks that far). Rows per second that fall as the budget grows mean probing has
gone quadratic; that is what the table's first hash did (docs/cpsat-model.md, "The
table's hash"). To measure that hash, run this file against commit 7ba6546.

Reproduce (2 cores, under a minute once compiled):
    python benchmarks/bench_downset_table.py
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from opsched.problem import Machine, Problem
from opsched.solver import _downset_table as dt
from opsched.solver.cpsat.model import tick_problem
from opsched.solver.downsets import _arrays, compile_kernels, kernels_ready
from opsched.solver.scaling import choose_scaling
from opsched.zoo import layered


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    budgets = [100_000, 200_000, 400_000, 1_000_000, 2_000_000, 4_000_000]
    ap.add_argument("--rows", type=int, nargs="+", default=budgets)
    a = ap.parse_args()
    cold = not kernels_ready()
    seconds = compile_kernels()
    print(f"\nkernels {'compiled' if cold else 'loaded from the cache'} in {seconds:.1f} s")
    p = Problem(layered(50, seed=4), Machine(units=2, memory_cap=193_986_560))
    tick = tick_problem(p, choose_scaling(p.graph, p.memory_cap))
    arr = _arrays(tick, 1)
    free = int(tick.memory_cap or 0) - tick.graph.persistent_bytes
    print("\n| row budget | rows | seconds | rows per second | mean distance | max distance |")
    print("|---|---|---|---|---|---|")
    for budget in a.rows:
        t0 = time.perf_counter()
        keys, table, rows, *_ = dt.downset_table(
            tick.graph.num_ops, 1, arr["pm"], arr["rm"], arr["pred_ptr"], arr["pred_idx"],
            arr["dur"], arr["out"], arr["need"], arr["kept"], arr["held"], free, budget, math.inf,
        )  # fmt: skip
        wall = time.perf_counter() - t0
        mask = len(table) - 1
        slot = np.full(rows, -1, dtype=np.int64)
        used = np.flatnonzero(table >= 0)
        slot[table[used]] = used
        sample = range(0, rows, max(1, rows // 20_000))
        home = np.array([dt._row_hash(keys[r], 1, mask) for r in sample])
        moved = (slot[list(sample)] - home) & mask
        print(f"| {budget:,} | {rows:,} | {wall:.2f} | {rows / wall:,.0f} | "
              f"{moved.mean():.2f} | {moved.max():,} |")  # fmt: skip


if __name__ == "__main__":
    main()

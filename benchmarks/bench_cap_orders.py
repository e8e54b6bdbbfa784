"""The orders a memory cap forces (``opsched.analysis.cap_orders``): how many, and their cost.

Two tables. First, the zoo pieces of ``bench_zoo_memory.py`` at their tightest caps (60 %
of the uncapped greedy peak, never below the best one-unit order's peak; placeholder
durations): the orders found (not counting those the others imply) and how many of them the
started test found (an op that cannot run once another has started), the maximum flows run,
the time, and the critical path without and with the orders. Second, with ``--layered``,
random layered graphs at three caps (the memory bound with its cut, 60 % and 80 % of the
uncapped greedy peak, never below that bound) without a flow budget: what the search costs
as graphs grow, and the time per flow that ``opsched.analysis.cap_orders.flow_budget`` is
built from.

Reproduce (2 cores): ``python benchmarks/bench_cap_orders.py`` (about a minute, most of it
building the zoo pieces' caps) and ``python benchmarks/bench_cap_orders.py --skip-zoo
--layered 100 200 300`` (about a minute; add 500 700 for the slow end, several minutes).
"""

from __future__ import annotations

import argparse
import time

from bench_zoo_memory import cap_floor, piece_graphs, uncapped_peak

from opsched.analysis import min_memory_bound
from opsched.analysis.cap_orders import cap_orders, ordered_critical_path
from opsched.problem import Machine, Problem
from opsched.zoo import layered

NO_BUDGET = 10**9


def zoo_table(units: int) -> None:
    print(f"Zoo pieces at their tightest caps, {units} units\n")
    print(
        "| model | piece | ops | cap | orders | of them started | flows | time s | critical path |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for model, label, g in piece_graphs(None, 1.0):
        base = Problem(g, Machine(units=units))
        peak0 = uncapped_peak(base)
        cap = max(cap_floor(g), int(0.6 * peak0))
        t0 = time.perf_counter()
        r = cap_orders(g, cap - g.persistent_bytes, NO_BUDGET)
        took = time.perf_counter() - t0
        cp0, cp1 = ordered_critical_path(g, ()), ordered_critical_path(g, r.edges)
        print(f"| {model} | {label} | {g.num_ops} | {cap / peak0:.0%} | {len(r.edges)} | "
              f"{r.started} | {r.flows} | {took:.2f} | {cp0:g} -> {cp1:g} |")  # fmt: skip


def layered_table(sizes: list[int], seeds: int) -> None:
    print("\nRandom layered graphs, no flow budget\n")
    print(
        "| ops | seed | cap (of greedy peak) | orders | of them started | refuted | flows | "
        "time s | ms per flow |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        for seed in range(seeds):
            g = layered(n, seed=seed)
            peak0 = uncapped_peak(Problem(g, Machine(units=2)))
            need = min_memory_bound(g)[0]
            for cap in sorted({need, max(need, int(0.6 * peak0)), max(need, int(0.8 * peak0))}):
                t0 = time.perf_counter()
                r = cap_orders(g, cap - g.persistent_bytes, NO_BUDGET)
                took = time.perf_counter() - t0
                per = 1000 * took / max(r.flows, 1)
                refuted = "yes" if r.conflict else "no"
                print(f"| {n} | {seed} | {cap / peak0:.0%} | {len(r.edges)} | {r.started} | "
                      f"{refuted} | {r.flows} | {took:.2f} | {per:.2f} |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=2, help="units of the zoo caps' greedy peak")
    ap.add_argument("--skip-zoo", action="store_true")
    ap.add_argument("--layered", type=int, nargs="*", default=[], help="graph sizes")
    ap.add_argument("--seeds", type=int, default=2)
    a = ap.parse_args()
    if not a.skip_zoo:
        zoo_table(a.units)
    if a.layered:
        layered_table(a.layered, a.seeds)


if __name__ == "__main__":
    main()

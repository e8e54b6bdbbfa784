"""CP-SAT under memory caps: where does it stop proving optimality?

Random layered DAGs (opsched.zoo.layered) of 20-60 ops on k units. For each graph the
unconstrained peak is the peak of the best greedy schedule without a cap; caps are set at
100 %, 80 % and 60 % of it (never below the per-op memory bound,
``min_memory_bound(g, cut=False)``, which would be trivially infeasible; the README's table
was made with that floor). CP-SAT minimises the makespan under each cap; a cap below the
bound with its minimum cut is refuted before any search, and so is one that no one-unit
order meets (``opsched.solver.serial``; ``--no-serial-check`` turns that off).

Reproduce (2 cores, about 10 minutes with the defaults):
    python benchmarks/bench_memory.py --sizes 20 30 40 50 60 --seeds 5 --units 2 --time-limit 10
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from _cap_switches import add_switches, off_flags, params_off

from opsched.analysis import min_memory_bound
from opsched.heuristics import greedy
from opsched.problem import Machine, Problem
from opsched.solver import solve_cpsat
from opsched.solver.cpsat import Params
from opsched.solver.defaults import DEFAULT_WORKERS
from opsched.validate import validate
from opsched.zoo import layered


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 30, 40, 50, 60])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--units", type=int, default=2)
    ap.add_argument("--fractions", type=float, nargs="+", default=[1.0, 0.8, 0.6])
    ap.add_argument("--objective", default="makespan",
                    help="makespan (default), peak_memory, memory_then_makespan ...")  # fmt: skip
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    ap.add_argument("--solver-seed", type=int, default=0,
                    help="CP-SAT's random seed (Params.seed; --seeds: graphs per row)")  # fmt: skip
    add_switches(ap)
    ap.add_argument("--per-graph", action="store_true",
                    help="also print one row per graph and cap: status, time, how it was "
                         "decided, the one-unit check's states")  # fmt: skip
    a = ap.parse_args()

    table: dict[tuple[int, float], list[tuple[str, float, float | None]]] = {}
    per_graph: list[tuple[object, ...]] = []
    t0 = time.perf_counter()
    for n in a.sizes:
        for seed in range(a.seeds):
            g = layered(n, seed=seed)
            base = Problem(g, Machine(units=a.units))
            peak0 = min(
                s.peak_memory
                for s in (greedy(base, "b-level"), greedy(base, "fifo"))
                if s.peak_memory is not None
            )
            need, _ = min_memory_bound(g, cut=False)  # as in the README table
            for frac in a.fractions:
                cap = max(need, int(frac * peak0))
                p = base.with_machine(memory_cap=cap)
                params = Params(
                    num_workers=a.workers,
                    seed=a.solver_seed,
                    **params_off(a),
                )
                r = solve_cpsat(p, a.objective, time_limit=a.time_limit, params=params)
                if r.has_schedule and not validate(p, r).valid:
                    sys.exit(f"INVALID schedule: {g.name} cap {cap}")
                table.setdefault((n, frac), []).append(
                    (r.status.value, r.wall_time_s or 0.0, r.gap)
                )
                check = r.info.get("serial_check", {})
                per_graph.append((n, seed, frac, cap, r.status.value, r.wall_time_s or 0.0,
                             _decided_by(r.info), check.get("states", "-")))  # fmt: skip
            print(
                f"\r{n} ops, seed {seed}: {time.perf_counter() - t0:.0f} s", end="", file=sys.stderr
            )
    print(file=sys.stderr)
    print(
        f"\nCP-SAT, {a.objective} under a memory cap, layered DAGs, {a.units} units, "
        f"time limit {a.time_limit:g} s, {a.seeds} graphs per row\n"
    )
    print(
        "| ops | cap (of unconstrained peak) | proven optimal | feasible, unproven | "
        "infeasible | no answer | mean s | max s | mean gap of unproven |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (n, frac), rows in sorted(table.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        st = [r[0] for r in rows]
        t = [r[1] for r in rows]
        gaps = [r[2] for r in rows if r[0] == "FEASIBLE" and r[2] is not None]
        gap = f"{100 * statistics.mean(gaps):.1f} %" if gaps else "-"
        print(
            f"| {n} | {frac:.0%} | {st.count('OPTIMAL')}/{len(st)} | {st.count('FEASIBLE')} | "
            f"{st.count('INFEASIBLE')} | {st.count('UNKNOWN')} | {statistics.mean(t):.2f} | "
            f"{max(t):.2f} | {gap} |"
        )
    if a.per_graph:
        print("\n| ops | seed | cap | cap B | status | s | decided by | one-unit states |")
        print("|---|---|---|---|---|---|---|---|")
        for n, seed, frac, cap, st, t, how, states in per_graph:
            print(f"| {n} | {seed} | {frac:.0%} | {cap} | {st} | {t:.2f} | {how} | {states} |")
    print(
        f"\nreproduce: python benchmarks/bench_memory.py --sizes {' '.join(map(str, a.sizes))} "
        f"--seeds {a.seeds} --units {a.units} --time-limit {a.time_limit:g} --workers {a.workers} "
        f"--fractions {' '.join(f'{f:g}' for f in a.fractions)}"
        + (f" --solver-seed {a.solver_seed}" if a.solver_seed else "")
        + off_flags(a)
        + (f" --objective {a.objective}" if a.objective != "makespan" else "")
        + (" --per-graph" if a.per_graph else "")
    )


def _decided_by(info: dict[str, object]) -> str:
    """Which proof settled a cap: the down-set search's optimum, or for an infeasible cap
    the reason given, else the search."""
    found = info.get("downsets")
    if isinstance(found, dict) and found.get("proven"):
        return "down-set search"
    reason = str(info.get("reason", ""))
    if not reason or "time limit" in reason:
        return "-"
    if reason.startswith("no one-unit order"):
        return "one-unit check"
    if "within the memory cap" in reason:  # two ops in neither order, or one op no room
        return "cap orders"
    if "is below the" in reason:
        return "memory bound"
    return "search"


if __name__ == "__main__":
    main()

"""The down-set search and the split at cut ops on the zoo pieces CP-SAT left open.

At their tightest caps (the least peak of any schedule, or 60 % of the uncapped greedy
peak if higher; as in ``bench_zoo_memory.py``) on 2 and 4 units, side by side in one run:

* the down-set search alone (``opsched.solver.downsets.downset_search``, no time limit,
  the budgets given): down-sets that can still finish / reached, labels, seconds, result;
* ``solve_cpsat`` as shipped (the split at cut ops, the down-set search, then CP-SAT);
* ``solve_cpsat`` without either (``Params(downsets=False, split=False)``): CP-SAT alone, as
  before this round.

Every schedule is re-checked by the validator (the down-set search's too), and a proven
optimum must agree between the columns that prove one.

Reproduce (2 cores; about 9 minutes with the default 60 s limit):
    python benchmarks/bench_downsets.py
    python benchmarks/bench_downsets.py --only stage --units 2   # RandWire on 2 units
"""

from __future__ import annotations

import argparse
import sys
import time

from bench_zoo_memory import cap_floor, piece_graphs, uncapped_peak

from opsched.problem import Machine, Problem
from opsched.schedule import Schedule
from opsched.solver import solve_cpsat
from opsched.solver.cpsat import Params
from opsched.solver.cpsat.model import assign_units
from opsched.solver.defaults import DEFAULT_WORKERS
from opsched.solver.downsets import downset_search
from opsched.validate import validate

#: the pieces CP-SAT alone left open at their tightest caps (README, bench_zoo_memory.py)
OPEN = ("stage3", "stage4", "stage3 + stage4", "cell_0..cell_3", "cell_1..cell_5 + reduction_0")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    ap.add_argument("--only", default=None, help="only pieces whose label contains this")
    ap.add_argument("--max-downsets", type=int, default=8_000_000)
    ap.add_argument("--max-labels", type=int, default=36_000_000)
    a = ap.parse_args()
    rows = []
    for model, label, g in piece_graphs(None, 1.0):
        if label not in OPEN or (a.only and a.only not in label):
            continue
        need = cap_floor(g)
        for k in a.units:
            base = Problem(g, Machine(units=k))
            cap = max(need, int(0.6 * uncapped_peak(base)))
            p = base.with_machine(memory_cap=cap)
            print(f"{label}, {k} units ...", file=sys.stderr)
            t0 = time.perf_counter()
            d = downset_search(p, max_downsets=a.max_downsets, max_labels=a.max_labels)
            d_wall = time.perf_counter() - t0
            if d.starts is not None:
                _check(p, _schedule(p, d.starts), label, "down-set search")
            runs = []
            for params in (
                Params(num_workers=a.workers),
                Params(num_workers=a.workers, downsets=False, split=False),
            ):
                r = solve_cpsat(p, time_limit=a.time_limit, params=params)
                if r.has_schedule:
                    _check(p, r, label, "solve_cpsat")
                runs.append(r)
            proven = {r.makespan for r in runs if r.status.value == "OPTIMAL"}
            if d.proven and d.makespan is not None:
                proven.add(float(d.makespan))
            if len(proven) > 1:
                sys.exit(f"optima disagree on {label}, {k} units: {sorted(proven)}")
            rows.append((model, label, g.num_ops, k, cap / uncapped_peak(base), d, d_wall, runs))
    print(
        f"\nTightest caps, min makespan; down-set search alone (budgets {a.max_downsets:,} "
        f"down-sets, {a.max_labels:,} labels) beside solve_cpsat with and without it "
        f"(and the split), {a.time_limit:g} s, {a.workers} workers, placeholder durations\n"
    )
    print(
        "| piece | ops | units | cap | down-sets (finish / reached) | labels | search s | "
        "search result | shipped: status, s | makespan / bound | CP-SAT alone: status, s | "
        "makespan / bound |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    closed = 0
    for _model, label, n, k, frac, d, d_wall, (new, old) in rows:
        result = (
            f"{d.makespan} optimal"
            if d.proven and d.makespan is not None
            else f"stopped ({d.reason})"
        )
        good, reached = d.downsets
        closed += new.status.value == "OPTIMAL" and old.status.value != "OPTIMAL"
        print(
            f"| {label} | {n} | {k} | {frac:.0%} | {good:,} / {reached:,} | {d.labels:,} | "
            f"{d_wall:.1f} | {result} | {new.status.value}, {new.wall_time_s:.1f} | "
            f"{_ms(new)} | {old.status.value}, {old.wall_time_s:.1f} | {_ms(old)} |"
        )
    print(f"\nproven by the shipped solver and not by CP-SAT alone: {closed} of {len(rows)}")


def _ms(r: Schedule) -> str:
    ms = "-" if r.makespan is None else f"{r.makespan:g}"
    lb = "-" if r.lower_bound is None else f"{r.lower_bound:g}"
    return f"{ms} / {lb}"


def _schedule(p: Problem, starts: list[int]) -> Schedule:
    g = p.graph
    ends = [s + d for s, d in zip(starts, g.durations.tolist(), strict=True)]
    units = assign_units([float(s) for s in starts], ends, g.demand_array("units").tolist())
    return Schedule.build(p, [float(s) for s in starts], units, solver="downsets")


def _check(p: Problem, s: Schedule, label: str, who: str) -> None:
    if not validate(p, s).valid:
        sys.exit(f"INVALID schedule from the {who}: {label}, {p.machine.units} units")


if __name__ == "__main__":
    main()

"""What each strengthening of the CP-SAT model is worth: turn one off at a time.

Runs the same instances with the full model and with one idea removed: the strong
cumulative propagators, the greedy hint, heads/tails/lower bounds in the domains, the
redundant tail constraints, the greedy makespan as horizon, the least tensor lifetimes, the
ramp bound.
Prints, per variant and set, how many instances were proven optimal and the mean / max time.

Reproduce (2 cores; the docs' table was measured with 2 workers):
    python benchmarks/bench_ablation.py --stg 40 --j30 40 --mem 10 --time-limit 5 --workers 2
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

from opsched.datasets import dataset_path
from opsched.heuristics import greedy
from opsched.importers import read_psplib, read_stg
from opsched.problem import Machine, Problem
from opsched.solver import solve_cpsat
from opsched.solver.cpsat import Params
from opsched.solver.defaults import DEFAULT_WORKERS
from opsched.validate import validate
from opsched.zoo import layered

VARIANTS = {
    "full model": Params(),
    "no strong cumulative": Params(strong_cumulative=False),
    "no hint": Params(hint=False),
    "no heads/tails/LB in domains": Params(domains=False),
    "no tail constraints": Params(tails=False),
    "no least tensor lifetimes": Params(lifetimes=False),
    "no ramp bound": Params(ramp=False),
    "no nested heads": Params(nested=False),
    "horizon = serial time": Params(greedy_horizon=False),
    "memory as a reservoir": Params(memory_model="reservoir"),
    "+ objective lower-bound search worker": Params(
        subsolvers=("default_lp", "objective_lb_search")
    ),
}


def problems(n_stg: int, n_j30: int, n_mem: int) -> dict[str, list[Problem]]:
    out: dict[str, list[Problem]] = {"stg50 k=2,4": [], "j30": [], "memory 40 ops @80%": []}
    for f in sorted(dataset_path("stg/50").glob("rand*.stg"))[:n_stg]:
        g = read_stg(f)
        out["stg50 k=2,4"] += [Problem(g, Machine(units=k)) for k in (2, 4)]
    for f in sorted(dataset_path("psplib/j30").glob("*.sm"))[:n_j30]:
        out["j30"].append(Problem(read_psplib(f), Machine(units=None)))
    for seed in range(n_mem):
        base = Problem(layered(40, seed=seed), Machine(units=2))
        peak = greedy(base, "b-level").peak_memory or 0
        out["memory 40 ops @80%"].append(base.with_machine(memory_cap=int(0.8 * peak)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stg", type=int, default=40, help="STG-50 files (each on k=2 and 4)")
    ap.add_argument("--j30", type=int, default=40)
    ap.add_argument("--mem", type=int, default=10)
    ap.add_argument("--time-limit", type=float, default=5.0)
    ap.add_argument("--variants", nargs="*", default=None, help="names to run (default: all)")
    ap.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    a = ap.parse_args()
    sets = problems(a.stg, a.j30, a.mem)
    print(f"\nCP-SAT ablation, time limit {a.time_limit:g} s, {a.workers} workers\n")
    print("| variant | set | proven | mean s | max s |")
    print("|---|---|---|---|---|")
    proven_value: dict[tuple[str, int], float] = {}  # an optimum proven by any variant
    chosen = {n: v for n, v in VARIANTS.items() if a.variants is None or n in a.variants}
    for vname, params in chosen.items():
        for sname, probs in sets.items():
            times, proven = [], 0
            for i, p in enumerate(probs):
                t0 = time.perf_counter()
                run = replace(params, num_workers=a.workers)
                r = solve_cpsat(p, time_limit=a.time_limit, params=run)
                times.append(time.perf_counter() - t0)
                assert not r.has_schedule or validate(p, r).valid
                if r.status.value == "OPTIMAL" and r.makespan is not None:
                    proven += 1
                    known = proven_value.setdefault((sname, i), r.makespan)
                    if known != r.makespan:  # two "proofs" disagree: a variant is wrong
                        raise SystemExit(f"{vname}: {p.graph.name} optimum {r.makespan} != {known}")
            print(
                f"| {vname} | {sname} | {proven}/{len(probs)} | {statistics.mean(times):.3f} | "
                f"{max(times):.2f} |",
                flush=True,
            )
    print(
        f"\nreproduce: python benchmarks/bench_ablation.py --stg {a.stg} --j30 {a.j30} "
        f"--mem {a.mem} --time-limit {a.time_limit:g} --workers {a.workers}"
    )


if __name__ == "__main__":
    main()

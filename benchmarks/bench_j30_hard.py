"""The six J30 instances CP-SAT with its own choice of searches did not prove in 30 s: what a
few model and search variants do on them.

Variants (each a full CP-SAT solve of the makespan from the greedy hint):

* ``shipped``: the shipped model and parameters (two full searches, ``no_lp`` and
  ``default_lp``, no neighbourhood search: ``opsched.solver.defaults``; timetable edge
  finding off, as in every variant but ``edge_on`` since 2026-12-07, so tables of earlier
  dates measured the others with it on);
* ``no_lp2``: two ``no_lp`` full searches;

the others leave the choice of searches to CP-SAT:

* ``lns2``: 2 workers (one full search, ``default_lp``, and neighbourhood searches);
* ``lp2``: the same with ``linearization_level = 2`` (LP relaxation with cumulative cuts);
* ``reversed``: ``lns2`` on the instance with every arc turned round (same optimum; a
  schedule of it, mirrored in time, is a schedule of the original);
* ``workers4``: 4 CP-SAT workers on the 2 cores. With 2 workers CP-SAT runs one full search
  (``default_lp``) and gives the other thread to its large-neighbourhood searches; with 4 it
  runs three full searches (``default_lp``, ``fixed``, ``no_lp``) beside them;
* ``rc3``: 3 workers, full searches ``default_lp`` and ``reduced_costs`` (the worker that
  raised the bound most in a log of 8 workers);
* ``workers4_lp2``, ``workers6``, ``workers8``: 4 workers with LP cuts, 6 and 8 workers;

and these name their searches:

* ``weak``: without the three cumulative propagators the model turns on
  (``strong_cumulative``); ``edge_on``: with timetable edge finding among them, which the
  shipped model leaves off on these instances (``Params.edge_finding``; it was on until
  2026-12-07);
* ``reversed_shipped``: the shipped settings on the reversed instance;
* ``nolp1``, ``reversed_nolp1``: one ``no_lp`` worker (``linearization_level = 0``) on the
  instance as it is and reversed: what each direction would get in a race of the two.

Prints status, best makespan and proven bound per instance and variant, against the
published optimum. Numbers move with the machine's load: CP-SAT's search is timed.

Reproduce (2 cores, about 24 minutes; ``--variants`` picks some, ``--seeds`` repeats each
with other CP-SAT seeds):
    python benchmarks/bench_j30_hard.py --time-limit 30
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from opsched.datasets import dataset_path, psplib_optima
from opsched.importers import read_psplib
from opsched.ir.graph import OpGraph
from opsched.problem import Machine, Problem
from opsched.solver.cpsat.model import CpsatModel, Params

HARD = ["j3013_2", "j3013_5", "j3013_6", "j3029_3", "j3029_6", "j3029_8"]


def reversed_graph(g: OpGraph) -> OpGraph:
    """Every arc turned round: an op depends on its former consumers."""
    cons = g.consumers()
    ops = tuple(
        replace(op, deps=tuple(g.ops[c].name for c in cons[i])) for i, op in enumerate(g.ops)
    )
    return OpGraph(ops, name=g.name, resources=g.resources)


#: The variants before "shipped" leave the searches to CP-SAT, as the default did until
#: 2026-11 (four threads, LNS among them); "shipped" is the default now (two full searches).
_CPSAT_CHOICE = {"subsolvers": (), "full_search": False}
VARIANTS: dict[str, Params] = {
    "shipped": Params(),
    "lns2": Params(num_workers=2, **_CPSAT_CHOICE),
    "lp2": Params(num_workers=2, linearization_level=2, **_CPSAT_CHOICE),
    "reversed": Params(num_workers=2, **_CPSAT_CHOICE),
    "workers4": Params(num_workers=4, **_CPSAT_CHOICE),
    "rc3": Params(num_workers=3, subsolvers=("default_lp", "reduced_costs"), full_search=False),
    "workers4_lp2": Params(num_workers=4, linearization_level=2, **_CPSAT_CHOICE),
    "workers6": Params(num_workers=6, **_CPSAT_CHOICE),
    "workers8": Params(num_workers=8, **_CPSAT_CHOICE),
    "no_lp2": Params(subsolvers=("no_lp", "no_lp")),
    "reversed_shipped": Params(),
    "weak": Params(strong_cumulative=False),
    "edge_on": Params(edge_finding=True),
    "nolp1": Params(num_workers=1, linearization_level=0, subsolvers=()),
    "reversed_nolp1": Params(num_workers=1, linearization_level=0, subsolvers=()),
}


def solve(g: OpGraph, time_limit: float, params: Params) -> tuple[str, float, float, float]:
    m = CpsatModel(Problem(g, Machine(units=None)), with_memory=False, with_peak=False)
    m.objective.minimise_makespan()
    t0 = time.perf_counter()
    st = m.solve(params, t0 + time_limit)
    s = m.solver
    assert s is not None
    return s.status_name(st), s.objective_value, s.best_objective_bound, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--instances", nargs="+", default=HARD)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0], help="CP-SAT random seeds")
    a = ap.parse_args()
    opt = psplib_optima()
    print(f"\nCP-SAT on hard J30 instances, {a.time_limit:g} s each, 2 cores\n")
    print("| instance | optimum | variant | seed | status | makespan | bound | time s |")
    print("|---|---|---|---|---|---|---|---|")
    for name in a.instances:
        g = read_psplib(dataset_path("psplib/j30") / f"{name}.sm")
        for variant in a.variants:
            graph = reversed_graph(g) if variant.startswith("reversed") else g
            for seed in a.seeds:
                params = replace(VARIANTS[variant], seed=seed)
                st, ms, lb, t = solve(graph, a.time_limit, params)
                print(f"| {name} | {opt.get(name)} | {variant} | {seed} | {st} | {ms:g} | "
                      f"{lb:g} | {t:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()

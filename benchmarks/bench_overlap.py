"""The two-unit overlap bound (``opsched.analysis.overlap``) beside the older makespan bounds.

For the zoo pieces of ``bench_zoo_memory.py`` (placeholder durations, after fusion) and the
random layered graphs of ``bench_memory.py``, on 2 units under memory caps: the work over
two units, the older bound (``opsched.analysis.lower_bounds``: critical path, work and the
ramp bounds with their nested heads, as in the CP-SAT model; and the critical path with the
orders the cap forces), the overlap bound, the pairs of ops the cap keeps apart, the minimum
cuts it took and its time; then the case split on the tensors the cap keeps apart
(``opsched.analysis.tensor_cases``), how many pairs it split on, and its time. No solver
runs here: what CP-SAT makes of the bounds is in ``bench_zoo_memory.py`` and
``bench_memory.py`` (``--no-overlap``, ``--no-cases`` to compare).

``--idle PIECE`` instead solves that zoo piece on 2 units at its tightest cap (CP-SAT,
``--time-limit`` s) and prints when its schedule leaves a unit idle and what runs alone then:
where the optimum loses time that the pair bound cannot see.

Reproduce (2 cores, about 25 s; ``--idle`` about 40 s):
    python benchmarks/bench_overlap.py
    python benchmarks/bench_overlap.py --fractions 0.6 --only stage
    python benchmarks/bench_overlap.py --idle cell_0..cell_3
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

from bench_zoo_memory import cap_floor, piece_graphs, uncapped_peak

from opsched.analysis import lower_bounds, min_memory_bound
from opsched.analysis.cap_orders import cap_orders, ordered_critical_path
from opsched.analysis.overlap import pair_overlap_bound
from opsched.analysis.tensor_cases import case_overlap_bound
from opsched.heuristics import greedy
from opsched.ir.graph import OpGraph
from opsched.problem import Machine, Problem
from opsched.zoo import layered


def _row(label: str, g: OpGraph, cap: int, frac: float) -> str:
    free = cap - g.persistent_bytes
    forced = cap_orders(g, free)
    if forced.conflict is not None:
        return f"| {label} | {g.num_ops} | {frac:.0%} | no schedule fits | | | | | | | | |"
    older = max(lower_bounds(g, 2, nested=True).value, ordered_critical_path(g, forced.edges))
    t0 = time.perf_counter()
    r = pair_overlap_bound(g, free, forced.edges)
    took = time.perf_counter() - t0
    t0 = time.perf_counter()
    cases = case_overlap_bound(g, free, forced.edges)
    took_cases = time.perf_counter() - t0
    value = math.ceil(r.value - 1e-9)
    mark = f"**{value:g}**" if value > math.ceil(older - 1e-9) else f"{value:g}"
    split = math.ceil(cases.value - 1e-9)
    split_mark = f"**{split:g}**" if split > max(value, math.ceil(older - 1e-9)) else f"{split:g}"
    return (
        f"| {label} | {g.num_ops} | {frac:.0%} | {r.work / 2:g} | {math.ceil(older - 1e-9):g} | "
        f"{mark} | {r.apart} / {r.apart + r.pairs} | {r.flows} | {took:.2f} | {split_mark} | "
        f"{len(cases.pairs)} | {took_cases:.2f} |"
    )


def idle_table(label: str, time_limit: float) -> None:
    """One unit idle in the best schedule CP-SAT finds for ``label`` (2 units, tightest cap):
    each interval with one op running, and that op."""
    from opsched.solver import solve_cpsat

    g = next(g for _m, lab, g in piece_graphs(None, 1.0) if lab == label)
    base = Problem(g, Machine(units=2))
    cap = max(cap_floor(g), int(0.6 * uncapped_peak(base)))
    r = solve_cpsat(base.with_machine(memory_cap=cap), time_limit=time_limit)
    print(f"{label}, 2 units, cap {cap} B: {r.status.value}, makespan {r.makespan:g}, "
          f"bound {r.lower_bound:g}\n")  # fmt: skip
    print("| from | to | ticks | running alone |\n|---|---|---|---|")
    ops = [(o.start, o.end, o.name) for o in r.ops if o.end > o.start]
    times = sorted({t for s, e, _ in ops for t in (s, e)})
    idle = 0.0
    for a, b in itertools.pairwise(times):
        running = [name for s, e, name in ops if s <= a and e >= b]
        if len(running) < 2:
            idle += b - a
            print(f"| {a:g} | {b:g} | {b - a:g} | {', '.join(running) or '-'} |")
    print(
        f"\none unit idle for {idle:g} of {r.makespan:g}\n\nreproduce: python "
        f"benchmarks/bench_overlap.py --idle {label} --time-limit {time_limit:g}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.6, 0.8])
    ap.add_argument("--only", default=None, help="only pieces whose label contains this")
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 30, 40, 50, 60])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--idle", default=None, help="a zoo piece: where its schedule idles")
    ap.add_argument("--time-limit", type=float, default=40.0, help="CP-SAT's limit for --idle")
    a = ap.parse_args()
    if a.idle is not None:
        idle_table(a.idle, a.time_limit)
        return
    print(
        "Makespan bounds on 2 units under memory caps (bold: the overlap bound above the "
        "older one; the case split above both)\n\n| graph | ops | cap | work / 2 | older "
        "bound | overlap bound | pairs apart / unordered | cuts | s | case split | exclusive "
        "tensors | s |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    for _model, label, g in piece_graphs(None, 1.0):
        if a.only and a.only not in label:
            continue
        base = Problem(g, Machine(units=2))
        peak0, need = uncapped_peak(base), cap_floor(g)
        for frac in a.fractions:
            print(_row(label, g, max(need, int(frac * peak0)), frac), flush=True)
    if a.only is None:
        for n in a.sizes:
            for seed in range(a.seeds):
                g = layered(n, seed=seed)
                base = Problem(g, Machine(units=2))
                peak0 = min(s.peak_memory for s in (greedy(base, "b-level"), greedy(base, "fifo"))
                            if s.peak_memory is not None)  # fmt: skip
                need = min_memory_bound(g, cut=False)[0]  # as in bench_memory.py
                for frac in a.fractions:
                    cap = max(need, int(frac * peak0))
                    print(_row(f"layered({n}, seed={seed})", g, cap, frac), flush=True)
    print(
        f"\nreproduce: python benchmarks/bench_overlap.py --fractions "
        f"{' '.join(f'{f:g}' for f in a.fractions)}" + (f" --only {a.only}" if a.only else "")
    )


if __name__ == "__main__":
    main()

"""The two-unit overlap bound (``opsched.analysis.overlap``) beside the older makespan bounds.

For the zoo pieces of ``bench_zoo_memory.py`` (placeholder durations, after fusion) and the
random layered graphs of ``bench_memory.py``, on 2 units under memory caps: the work over
two units, the older bound (``opsched.analysis.lower_bounds``: critical path, work and the
ramp bounds with their nested heads, as in the CP-SAT model; and the critical path with the
orders the cap forces), the overlap bound, the pairs of ops the cap keeps apart, the minimum
cuts it took and its time. No solver runs here: what CP-SAT makes of the bound is in
``bench_zoo_memory.py`` and ``bench_memory.py`` (each with ``--no-overlap`` to compare).

Reproduce (2 cores, about 10 s):
    python benchmarks/bench_overlap.py
    python benchmarks/bench_overlap.py --fractions 0.6 --only stage
"""

from __future__ import annotations

import argparse
import math
import time

from bench_zoo_memory import cap_floor, piece_graphs, uncapped_peak

from opsched.analysis import lower_bounds, min_memory_bound
from opsched.analysis.cap_orders import cap_orders, ordered_critical_path
from opsched.analysis.overlap import pair_overlap_bound
from opsched.heuristics import greedy
from opsched.ir.graph import OpGraph
from opsched.problem import Machine, Problem
from opsched.zoo import layered


def _row(label: str, g: OpGraph, cap: int, frac: float) -> str:
    free = cap - g.persistent_bytes
    forced = cap_orders(g, free)
    if forced.conflict is not None:
        return f"| {label} | {g.num_ops} | {frac:.0%} | no schedule fits | | | | | |"
    older = max(lower_bounds(g, 2, nested=True).value, ordered_critical_path(g, forced.edges))
    t0 = time.perf_counter()
    r = pair_overlap_bound(g, free, forced.edges)
    took = time.perf_counter() - t0
    value = math.ceil(r.value - 1e-9)
    mark = f"**{value:g}**" if value > math.ceil(older - 1e-9) else f"{value:g}"
    return (
        f"| {label} | {g.num_ops} | {frac:.0%} | {r.work / 2:g} | {math.ceil(older - 1e-9):g} | "
        f"{mark} | {r.apart} / {r.apart + r.pairs} | {r.flows} | {took:.2f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.6, 0.8])
    ap.add_argument("--only", default=None, help="only pieces whose label contains this")
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 30, 40, 50, 60])
    ap.add_argument("--seeds", type=int, default=5)
    a = ap.parse_args()
    print(
        "Makespan bounds on 2 units under memory caps (bold: the overlap bound above the "
        "older one)\n\n| graph | ops | cap | work / 2 | older bound | overlap bound | "
        "pairs apart / unordered | cuts | s |\n|---|---|---|---|---|---|---|---|---|"
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

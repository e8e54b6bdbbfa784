"""CP-SAT on real network pieces under memory caps: how far does proving optimality reach?

Inception-v3, NASNet-A mobile and RandWire from the zoo, fused (Conv+BN+ReLU, elementwise
chains: ``opsched.transforms.fusion.fuse``), then cut into pieces with
``opsched.transforms.extract``: one block or cell, a stage, several cells, or the whole fused
network. Tensors read from outside are zero-time inputs, tensors handed on stay live to the
end; weights are not counted, only activations.

For each piece and unit count the uncapped peak is the lower peak of the two greedy
schedules. Caps are set at 100 / 80 / 60 % of it, but never below the peak of the best
one-unit memory order opsched finds (``opsched.heuristics.memory.min_memory_order``), so a
schedule under the cap is known to exist; the table gives the cap actually used, as a
fraction of the uncapped peak. CP-SAT minimises the makespan under each cap. Every schedule
is re-checked by the validator, and the gap is taken against CP-SAT's proven bound.

Durations are the zoo's placeholder (proportional to FLOPs, integer) unless ``--gpu`` asks
for the cost model (integer microsecond ticks, ``--tick``).

Reproduce (2 cores, about 15 minutes with the defaults):
    python benchmarks/bench_zoo_memory.py --units 2 4 --time-limit 60
    python benchmarks/bench_zoo_memory.py --bounds   # the memory bounds alone, ~15 s
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace

from _cap_switches import add_switches, params_off, without
from bench_cpsat import EDGE_FINDING

from opsched.analysis import min_memory_bound
from opsched.heuristics import greedy
from opsched.heuristics.memory import min_memory_order
from opsched.heuristics.memory.common import order_peak
from opsched.ir.graph import OpGraph
from opsched.problem import Machine, Problem
from opsched.solver import solve_cpsat
from opsched.solver.cpsat import Params
from opsched.solver.defaults import DEFAULT_WORKERS
from opsched.transforms import extract
from opsched.transforms.fusion import fuse
from opsched.validate import validate
from opsched.zoo.models import build

#: (model, label, prefixes); None = the whole fused network
PIECES: list[tuple[str, str, list[str] | None]] = [
    ("inception_v3", "Mixed_5b (block A)", ["Mixed_5b"]),
    ("inception_v3", "Mixed_6a (reduction)", ["Mixed_6a"]),
    ("inception_v3", "Mixed_6b (block C)", ["Mixed_6b"]),
    ("inception_v3", "Mixed_7c (block E)", ["Mixed_7c"]),
    ("inception_v3", "Mixed_6b..6e", ["Mixed_6b", "Mixed_6c", "Mixed_6d", "Mixed_6e"]),
    ("inception_v3", "whole network", None),
    ("nasnet_a_mobile", "cell_1 (normal)", ["cell_1"]),
    ("nasnet_a_mobile", "reduction_0", ["reduction_0"]),
    ("nasnet_a_mobile", "cell_0..cell_3", ["cell_0", "cell_1", "cell_2", "cell_3"]),
    ("nasnet_a_mobile", "cell_1..cell_5 + reduction_0",
     ["cell_1", "cell_2", "cell_3", "reduction_0", "cell_4", "cell_5"]),
    ("randwire", "stage3", ["stage3"]),
    ("randwire", "stage4", ["stage4"]),
    ("randwire", "stage3 + stage4", ["stage3", "stage4"]),
]  # fmt: skip


def piece_graphs(gpu: str | None, tick: float) -> list[tuple[str, str, OpGraph]]:
    fused: dict[str, OpGraph] = {}
    out = []
    for model, label, prefixes in PIECES:
        if model not in fused:
            g, _ = fuse(build(model))
            if gpu is not None:
                from opsched.cost import apply

                g = apply(g, gpu, "float16", tick_us=tick)
            fused[model] = g
        g = fused[model]
        piece = extract(g, prefixes) if prefixes is not None else replace(g, persistent_bytes=0)
        out.append((model, label, piece))
    return out


def cap_floor(g: OpGraph) -> int:
    """The lowest cap the table uses: the peak of the best one-unit order opsched finds (a
    schedule under it exists), or the memory bound if that were higher."""
    return max(min_memory_bound(g)[0], order_peak(g, min_memory_order(g)))


def uncapped_peak(base: Problem) -> int:
    """The lower peak of the two greedy schedules without a cap: the caps' 100 %."""
    return min(
        s.peak_memory
        for s in (greedy(base, "b-level"), greedy(base, "fifo"))
        if s.peak_memory is not None
    )


def bounds_table(gpu: str | None, tick: float, only: str | None) -> None:
    """The least peak of each piece: the simple bound, the minimum-cut bound and the best
    one-unit order opsched finds (an upper bound: the least peak lies in between)."""
    print("| model | piece | ops | simple bound MB | cut bound MB | best order MB | "
          "cut / order | bound time s |\n|---|---|---|---|---|---|---|---|")  # fmt: skip
    for model, label, g in piece_graphs(gpu, tick):
        if only and only not in label:
            continue
        simple = min_memory_bound(g, cut=False)[0]
        t0 = time.perf_counter()
        cut = min_memory_bound(g)[0]
        took = time.perf_counter() - t0
        peak = order_peak(g, min_memory_order(g))
        print(f"| {model} | {label} | {g.num_ops} | {simple / 1e6:.2f} | {cut / 1e6:.2f} | "
              f"{peak / 1e6:.2f} | {cut / peak:.3f} | {took:.2f} |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--fractions", type=float, nargs="+", default=[1.0, 0.8, 0.6])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    add_switches(ap)
    ap.add_argument("--edge-finding", choices=list(EDGE_FINDING), default="auto",
                    help="CP-SAT's timetable edge finding (Params.edge_finding; auto: on "
                         "unless named resources, e.g. --gpu's sm, have cumulatives)")  # fmt: skip
    ap.add_argument("--no-strong-cumulative", action="store_true",
                    help="without the three cumulative propagators the model turns on "
                         "(Params.strong_cumulative), to compare")  # fmt: skip
    ap.add_argument("--seed", type=int, default=0, help="CP-SAT's random seed (Params.seed)")
    ap.add_argument("--probe-max-s", type=float, default=None,
                    help="most seconds of CP-SAT's try before the down-set search (sets "
                         "opsched.solver.cpsat.stages.PROBE_MAX_S; default 2)")  # fmt: skip
    ap.add_argument("--gpu", default=None, help="cost every op on this GPU (float16)")
    ap.add_argument("--tick", type=float, default=1.0, help="microseconds per tick with --gpu")
    ap.add_argument("--only", default=None, help="only pieces whose label contains this")
    ap.add_argument("--bounds", action="store_true",
                    help="only the memory bounds and the best one-unit order")  # fmt: skip
    a = ap.parse_args()
    if a.probe_max_s is not None:
        import opsched.solver.cpsat.stages as cpsat_solve

        cpsat_solve.PROBE_MAX_S = a.probe_max_s
    if a.bounds:
        bounds_table(a.gpu, a.tick, a.only)
        return

    rows = []
    t0 = time.perf_counter()
    for model, label, g in piece_graphs(a.gpu, a.tick):
        if a.only and a.only not in label:
            continue
        need = cap_floor(g)
        for k in a.units:
            base = Problem(g, Machine(units=k))
            peak0 = uncapped_peak(base)
            for frac in a.fractions:
                cap = max(need, int(frac * peak0))
                p = base.with_machine(memory_cap=cap)
                params = Params(
                    num_workers=a.workers,
                    seed=a.seed,
                    edge_finding=EDGE_FINDING[a.edge_finding],
                    strong_cumulative=not a.no_strong_cumulative,
                    **params_off(a),
                )
                r = solve_cpsat(p, time_limit=a.time_limit, params=params)
                if r.has_schedule and not validate(p, r).valid:
                    sys.exit(f"INVALID schedule: {model} {label} k={k} cap={cap}")
                gap = None
                if r.has_schedule and r.makespan and r.lower_bound:
                    gap = 100 * (r.makespan - r.lower_bound) / r.makespan
                used = cap / peak0
                rows.append(
                    (model, label, g.num_ops, k, used, r.status.value, r.wall_time_s, gap,
                     r.makespan, r.lower_bound)
                )  # fmt: skip
                print(
                    f"\r{len(rows)} runs, {time.perf_counter() - t0:.0f} s",
                    end="",
                    file=sys.stderr,
                )
    print(file=sys.stderr)

    how = (
        f"durations from the cost model ({a.gpu}, float16, {a.tick:g} us ticks)"
        if a.gpu
        else "placeholder durations"
    )
    print(
        f"\nCP-SAT, min makespan under a memory cap, zoo pieces after fusion, "
        f"time limit {a.time_limit:g} s, {a.workers} workers, seed {a.seed}, {how}"
        f"{without(a)}"
        f"{'' if a.edge_finding == 'auto' else f', edge finding {a.edge_finding}'}"
        f"{', without the strong cumulative propagators' if a.no_strong_cumulative else ''}\n"
    )
    print(
        "| model | piece | ops | units | cap | status | time s | makespan | bound | "
        "gap to bound % |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model, label, n, k, frac, st, wall, gap, ms, lb in rows:
        g = "-" if gap is None else f"{gap:.1f}"
        cells = f"{'-' if ms is None else f'{ms:g}'} | {'-' if lb is None else f'{lb:g}'}"
        print(f"| {model} | {label} | {n} | {k} | {frac:.0%} | {st} | {wall:.1f} | {cells} | {g} |")
    proven = [r for r in rows if r[5] == "OPTIMAL"]  # columns as in the table
    median = statistics.median([r[6] for r in proven]) if proven else 0.0
    print(f"\nproven optimal: {len(proven)}/{len(rows)}; median time of the proven {median:.2f} s")
    by_piece: dict[tuple[str, str], list[tuple]] = {}
    for r in rows:
        by_piece.setdefault((r[0], r[1]), []).append(r)
    all_proven = [rs[0][2] for rs in by_piece.values() if all(r[5] == "OPTIMAL" for r in rs)]
    print(f"largest piece proven at every cap and unit count: {max(all_proven, default=0)} ops")


if __name__ == "__main__":
    main()

"""Dynamic scheduling: static replay vs online list scheduling under noise, and dynamic shapes.

Part 1: random layered graphs on k units. A static schedule (list scheduling, or CP-SAT's
optimum on the estimates) is replayed with sampled durations keeping each unit's order; the
online list scheduler decides at run time with b-level priorities from the estimates. Reports
mean and p95 makespan over the runs (same draws for every policy) and the mean gap to the
clairvoyant optimum (CP-SAT on each realised duration vector, durations rounded to 3
decimals so the optimum is proven).

Part 2: dynamic shapes. A zoo network at several batch sizes or sequence lengths; each shape
scheduled afresh (time taken) and every schedule replayed on every other shape: the
slowdown of reusing a schedule prepared for another shape.

Reproduce (2 cores, about a minute):
    python benchmarks/bench_dynamic.py --ops 12 --seeds 3 --units 3 --runs 100 --gap-runs 8
"""

from __future__ import annotations

import argparse
import statistics

from opsched.dynamic import Lognormal, Online, clairvoyant_gaps, expected_makespan
from opsched.dynamic.shapes import shape_graphs, shape_study
from opsched.heuristics.listsched import list_schedule
from opsched.problem import Machine, Problem
from opsched.solver import solve_cpsat
from opsched.zoo import layered


def noise_table(args: argparse.Namespace) -> None:
    print(
        "| noise | policy | mean makespan / estimate | p95 / estimate | mean gap to clairvoyant |"
    )
    print("|---|---|---|---|---|")
    for spread in args.noise:
        acc: dict[str, list[tuple[float, float, float]]] = {}
        for seed in range(args.seeds):
            p = Problem(layered(args.ops, seed=seed), Machine(units=args.units))
            opt = solve_cpsat(p, time_limit=args.time_limit)
            pols = {"static list": list_schedule(p), "static optimum": opt, "online": Online()}
            noise = Lognormal(spread)
            gaps = clairvoyant_gaps(
                p, list(pols.values()), noise, args.gap_runs, seed, time_limit=args.time_limit
            )
            for (name, pol), g in zip(pols.items(), gaps["policies"].values(), strict=True):
                st = expected_makespan(p, pol, noise, args.runs, seed)
                ref = opt.makespan or 1.0
                acc.setdefault(name, []).append((st.mean / ref, st.p95 / ref, g["mean_gap"]))
        for name, rows in acc.items():
            m, p95, gap = (statistics.mean(c) for c in zip(*rows, strict=True))
            print(f"| {spread:g} | {name} | {m:.3f} | {p95:.3f} | {100 * gap:.2f} % |")


def shapes_table(args: argparse.Namespace) -> None:
    cases = [("gpt2_block", {"seq_lens": (128, 512, 1024)}), ("resnet50", {"batches": (1, 8, 32)})]
    print("\n| model | made for -> run on | slowdown | reschedule time (ms) |")
    print("|---|---|---|---|")
    for model, kw in cases:
        try:
            gs = shape_graphs(model, gpu=args.gpu, **kw)  # type: ignore[arg-type]
            note = args.gpu
        except Exception as e:  # the cost model may be unavailable: fall back to FLOP ticks
            gs, note = shape_graphs(model, **kw), f"zoo FLOP ticks ({type(e).__name__})"  # type: ignore[arg-type]
        st = shape_study(gs, units=args.units)
        for i, a in enumerate(st.labels):
            for j, b in enumerate(st.labels):
                if i != j:
                    print(
                        f"| {model} | {a} -> {b} | {st.slowdown[i, j]:.3f} | "
                        f"{1000 * st.schedule_s[j]:.1f} |"
                    )
        print(f"| {model} | durations: {note} | | |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=12)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--units", type=int, default=3)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--gap-runs", type=int, default=8)
    ap.add_argument("--noise", type=float, nargs="+", default=[0.1, 0.3])
    ap.add_argument("--time-limit", type=float, default=5.0)
    ap.add_argument("--gpu", default="A100-SXM4-80GB")
    args = ap.parse_args()
    noise_table(args)
    shapes_table(args)
    print(
        "\nReproduce: python benchmarks/bench_dynamic.py "
        + " ".join(
            f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
            for k, v in vars(args).items()
        )
    )


if __name__ == "__main__":
    main()

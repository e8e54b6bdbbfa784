"""Fusion: ops before/after, memory traffic saved and the makespan effect.

For each graph, ``opsched.transforms.fusion.fuse`` (default limits: 8 ops, no byte limit)
and the makespan on k units before and after: greedy b-level for every graph and, with
``--cpsat``, CP-SAT (time-limited; "*" marks a proven optimum). Graphs: random networks
(``opsched.zoo.generators.random_network``: conv / residual / GEMM / elementwise /
multi-branch blocks, nominal-roofline durations) and, when the model zoo is installed
(``opsched.zoo.models.build``), its models with their own durations. When the cost model
provides ``opsched.cost.apply(graph, gpu)``, ``--gpu NAME`` reprices both graphs with it.

Reproduce (2 cores, about a minute):
    python benchmarks/bench_fusion.py --sizes 50 100 200 --seeds 3 --units 2 --cpsat
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Iterator
from typing import Any

from opsched.heuristics import greedy
from opsched.ir.graph import OpGraph
from opsched.problem import Machine, Problem
from opsched.solver import solve_cpsat
from opsched.transforms.fusion import fuse
from opsched.validate import validate
from opsched.zoo.generators import random_network


def graphs(sizes: list[int], seeds: int, zoo: bool) -> Iterator[OpGraph]:
    for n in sizes:
        for seed in range(seeds):
            yield random_network(n, seed=seed)
    if not zoo:
        return
    try:
        models = importlib.import_module("opsched.zoo.models")
    except ImportError:  # the zoo is not there yet
        return
    for name in sorted(models.MODELS):
        try:
            yield models.build(name)
        except Exception as e:  # a model under construction must not stop the table
            print(f"# skipped zoo model {name}: {e}", file=sys.stderr)


def makespan(g: OpGraph, units: int, cpsat: bool, limit: float) -> tuple[float, str]:
    p = Problem(g, Machine(units=units))
    s = greedy(p, priority="b-level")
    assert validate(p, s).valid
    text = f"{s.makespan:.6g}"
    if cpsat:
        c = solve_cpsat(p, time_limit=limit)
        if c.has_schedule:
            assert validate(p, c).valid
            text += f" / {c.makespan:.6g}{'*' if c.status == 'OPTIMAL' else ''}"
    return float(s.makespan or 0.0), text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--units", type=int, default=2)
    ap.add_argument("--cpsat", action="store_true", help="also CP-SAT before and after")
    ap.add_argument("--time-limit", type=float, default=5.0)
    ap.add_argument("--no-zoo", action="store_true")
    ap.add_argument("--no-new-inputs", action="store_true", help="fuse(new_inputs=False)")
    ap.add_argument("--gpu", default=None, help="reprice with opsched.cost.apply (if present)")
    a = ap.parse_args()

    apply: Any = None
    if a.gpu:
        apply = getattr(importlib.import_module("opsched.cost"), "apply", None)
        if apply is None:
            sys.exit("opsched.cost.apply is not available yet; run without --gpu")
    solver = "greedy b-level" + (" / CP-SAT" if a.cpsat else "")
    print(f"| graph | ops before -> after | traffic saved | tensors not materialised "
          f"| makespan before ({solver}) | after | greedy change |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    t0 = time.perf_counter()
    for g in graphs(a.sizes, a.seeds, not a.no_zoo):
        f, rep = fuse(g, new_inputs=not a.no_new_inputs)
        if apply is not None:
            g, f = apply(g, a.gpu), apply(f, a.gpu)
        before, tb = makespan(g, a.units, a.cpsat, a.time_limit)
        after, ta = makespan(f, a.units, a.cpsat, a.time_limit)
        pct = 100.0 * rep.bytes_saved / rep.bytes_before if rep.bytes_before else 0.0
        change = 100.0 * (after - before) / before if before else 0.0
        mib = rep.intermediate_bytes / 2**20
        print(f"| {g.name} | {rep.ops_before} -> {rep.ops_after} | {pct:.1f} % "
              f"| {mib:.1f} MiB | {tb} | {ta} | {change:+.1f} % |")  # fmt: skip
        sys.stdout.flush()
    print(f"\n{a.units} units; {time.perf_counter() - t0:.1f} s. Reproduce: "
          f"python benchmarks/bench_fusion.py {' '.join(sys.argv[1:])}")  # fmt: skip


if __name__ == "__main__":
    main()

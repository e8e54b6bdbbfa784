"""The serial scheme under cumulative resources (opsched/heuristics/_serial.py): quality on
PSPLIB J30 against the published optima, and time against the non-delay engine.

Part 1, J30 (480 instances, four renewable resources; mean / max gap % and share optimal):
the non-delay b-level schedule (``greedy``, what list scheduling gives there), the serial
b-level schedule (``insertion`` placement), each after forward-backward passes, and the
portfolio (its 32 candidates, each justified).

Part 2, time: layered random DAGs whose ops hold 1-2 of 8 units and 0-1 of a second
resource of capacity 2; the serial b-level schedule, the non-delay one, and one round of
passes, side by side in one process (the compiled kernels loaded first).

    python benchmarks/bench_serial.py
    python benchmarks/bench_serial.py --sizes 1000 20000 --skip-j30
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from opsched.analysis.ranks import priority
from opsched.datasets import dataset_path, psplib_optima
from opsched.heuristics import greedy
from opsched.heuristics._serial import justify_serial, serial_schedule
from opsched.heuristics.improve import justify
from opsched.heuristics.listsched import list_schedule
from opsched.heuristics.portfolio import portfolio
from opsched.importers import read_graph
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.zoo.generators import layered


def _row(name: str, gaps: list[float], seconds: float) -> str:
    x = np.array(gaps) * 100
    return (f"| {name} | {x.mean():.2f} | {x.max():.1f} | {np.mean(x == 0) * 100:.0f} % "
            f"| {seconds:.1f} |")  # fmt: skip


def j30() -> None:
    optima = psplib_optima()
    runs = {
        "non-delay b-level (greedy)": lambda p: greedy(p, "b-level"),
        "non-delay b-level, justified": lambda p: justify(p, greedy(p, "b-level")),
        "serial b-level (insertion)": lambda p: list_schedule(p, "b-level", "insertion"),
        "serial b-level, justified": lambda p: justify(p, list_schedule(p, "b-level", "insertion")),
        "portfolio": lambda p: portfolio(p),
    }
    problems = {
        name: Problem(read_graph(dataset_path(f"psplib/j30/{name}.sm")), Machine(units=None))
        for name in sorted(optima)
    }
    print(f"PSPLIB J30, {len(problems)} instances\n")
    print("| schedule | mean gap % | max gap % | optimal | seconds, all |")
    print("|---|---|---|---|---|")
    for label, fn in runs.items():
        gaps = []
        t = time.perf_counter()
        for name, p in problems.items():
            s = fn(p)
            assert s.makespan is not None
            gaps.append(s.makespan / optima[name] - 1)
        print(_row(label, gaps, time.perf_counter() - t))


def _resource_graph(n: int, seed: int) -> Problem:
    g = layered(n, seed=seed)
    rng = np.random.default_rng(seed)
    units = rng.integers(1, 3, n).tolist()
    dma = rng.integers(0, 2, n).tolist()
    ops = [
        Op(o.name, o.duration, deps=o.deps, demands={"units": u, "dma": r})
        for o, u, r in zip(g.ops, units, dma, strict=True)
    ]
    return Problem(OpGraph(tuple(ops), resources={"dma": 2}), Machine(units=8))


def timing(sizes: list[int]) -> None:
    warm = _resource_graph(200, seed=9)
    starts, _ = serial_schedule(warm, priority(warm.graph, "b-level"))
    justify_serial(warm, starts)
    print("\nTime, layered DAGs, ops of 1-2 of 8 units and 0-1 of a resource of capacity 2\n")
    print("| ops | serial (s) | non-delay (s) | ratio | passes (s) | makespan serial / "
          "non-delay / justified |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for n in sizes:
        p = _resource_graph(n, seed=1)
        prio = priority(p.graph, "b-level")
        t = time.perf_counter()
        starts, _ = serial_schedule(p, prio)
        t_serial = time.perf_counter() - t
        t = time.perf_counter()
        nd = greedy(p, prio)
        t_greedy = time.perf_counter() - t
        t = time.perf_counter()
        js, _, _ = justify_serial(p, np.array([o.start for o in nd.ops]), max_rounds=1)
        t_pass = time.perf_counter() - t
        d = p.graph.durations
        print(f"| {n} | {t_serial:.2f} | {t_greedy:.2f} | {t_greedy / t_serial:.1f}x | "
              f"{t_pass:.2f} | {(starts + d).max():g} / {nd.makespan:g} / "
              f"{(js + d).max():g} |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000, 5_000, 20_000])
    ap.add_argument("--skip-j30", action="store_true")
    a = ap.parse_args()
    if not a.skip_j30:
        j30()
    timing(a.sizes)


if __name__ == "__main__":
    main()

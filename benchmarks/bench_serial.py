"""The serial scheme under cumulative resources (opsched/heuristics/_serial.py): quality on
PSPLIB J30 against the published optima, and time against the non-delay engine.

Part 1, J30 (480 instances, four renewable resources; mean / max gap % and share optimal):
the non-delay b-level schedule (``greedy``, what list scheduling gives there), the serial
b-level schedule (``insertion`` placement), each after forward-backward passes, and the
portfolio (its 32 candidates, each justified).

Part 2, time: layered random DAGs shaped like graphs the cost model prices (8 streams,
an ``sm`` demand of 1-132 of 132 SMs). The non-delay b-level schedule compiled
(opsched/heuristics/_nondelay_res.py) and as the Python loop (checked equal), the serial
one, and one round of passes, side by side in one process (the compiled kernels loaded
first); the serial columns up to its 20,000-op limit.

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
from opsched.heuristics._serial import SERIAL_MAX_OPS, justify_serial, serial_schedule
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
    """A layered DAG shaped like a graph priced by the cost model: 8 streams (one unit an
    op) and an ``sm`` demand of 1-132 of the GPU's 132 SMs."""
    g = layered(n, seed=seed)
    rng = np.random.default_rng(seed)
    sm = rng.integers(1, 133, n).tolist()
    ops = [
        Op(o.name, o.duration, deps=o.deps, demands={"units": 1, "sm": s})
        for o, s in zip(g.ops, sm, strict=True)
    ]
    return Problem(OpGraph(tuple(ops), resources={"sm": 132}), Machine(units=8))


def timing(sizes: list[int], python_up_to: int) -> None:
    warm = _resource_graph(300, seed=9)
    prio = priority(warm.graph, "b-level")
    starts, _ = serial_schedule(warm, prio)
    justify_serial(warm, starts)
    greedy(warm, prio)
    print("\nTime, layered DAGs on 8 streams, each op 1-132 of 132 SMs (b-level priority)\n")
    print(
        "| ops | non-delay, compiled (s) | non-delay, Python loop (s) | ratio | serial (s) | "
        "one round of passes (s) | makespan non-delay / serial / non-delay justified |"
    )
    print("|---|---|---|---|---|---|---|")
    for n in sizes:
        p = _resource_graph(n, seed=1)
        prio = priority(p.graph, "b-level")
        t = time.perf_counter()
        nd = greedy(p, prio)
        t_fast = time.perf_counter() - t
        py, ratio = "-", "-"
        if n <= python_up_to:
            t = time.perf_counter()
            slow = greedy(p, prio, compiled=False)
            t_slow = time.perf_counter() - t
            assert slow.starts() == nd.starts()
            py, ratio = f"{t_slow:.2f}", f"{t_slow / t_fast:.1f}x"
        ser, passes, spans = "-", "-", f"{nd.makespan:g} / - / -"
        if n <= SERIAL_MAX_OPS:
            t = time.perf_counter()
            starts, _ = serial_schedule(p, prio)
            ser = f"{time.perf_counter() - t:.2f}"
            t = time.perf_counter()
            js, _, _ = justify_serial(p, np.array([o.start for o in nd.ops]), max_rounds=1)
            passes = f"{time.perf_counter() - t:.2f}"
            d = p.graph.durations
            spans = f"{nd.makespan:g} / {(starts + d).max():g} / {(js + d).max():g}"
        print(f"| {n} | {t_fast:.2f} | {py} | {ratio} | {ser} | {passes} | {spans} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000, 20_000, 100_000])
    ap.add_argument("--python-up-to", type=int, default=100_000,
                    help="largest size also timed with the Python loop")  # fmt: skip
    ap.add_argument("--skip-j30", action="store_true")
    a = ap.parse_args()
    if not a.skip_j30:
        j30()
    timing(a.sizes, a.python_up_to)


if __name__ == "__main__":
    main()

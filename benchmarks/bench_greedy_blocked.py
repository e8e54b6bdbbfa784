"""Greedy's event loop when a resource other than the units blocks most ready ops.

Each pass of :func:`opsched.heuristics.greedy.greedy` starts, in priority order, every ready op
that fits. Ops wait in one heap per demand signature, and a pass stops looking at a signature
as soon as one of its ops does not fit (a pass only takes capacity). This script measures the
loop on graphs where that matters: ``n`` independent ops that each hold one unit and one of
2 DMA engines on 8 units (``wide``), and a layered graph whose ops demand SMs, as ``opsched
cost apply`` gives them, on 8 streams of a 132-SM GPU (``sm``). It prints seconds per size
and the growth exponent between sizes (1 is linear). Before the per-signature heaps, ``wide``
took 2.0 / 7.9 / 33.0 s at 2,000 / 4,000 / 8,000 ops (exponent 2; 0.03 / 0.03 / 0.11 s
after, measured side by side in one process).

    python benchmarks/bench_greedy_blocked.py [--sizes 2000 8000 32000 128000]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time

from opsched.heuristics.greedy import greedy
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.validate import validate
from opsched.zoo.generators import layered


def wide(n: int) -> Problem:
    ops = tuple(Op(f"o{i}", 1 + i % 3, demands={"units": 1, "dma": 1}) for i in range(n))
    return Problem(OpGraph(ops, resources={"dma": 2}), Machine(units=8))


def sm(n: int) -> Problem:
    g = layered(n, seed=1)
    ops = tuple(dataclasses.replace(op, demands={"units": 1, "sm": 1 + (i * 37) % 132})
                for i, op in enumerate(g.ops))  # fmt: skip
    return Problem(OpGraph(ops, resources={"sm": 132}), Machine(units=8))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 8000, 32000, 128000])
    args = ap.parse_args()
    print("| graph | ops | greedy s | growth exponent | valid |")
    print("|---|---|---|---|---|")
    for name, make in (("wide", wide), ("sm", sm)):
        last = None
        for n in args.sizes:
            p = make(n)
            t = time.perf_counter()
            s = greedy(p)
            secs = time.perf_counter() - t
            grow = "" if last is None else f"{math.log(secs / last[1]) / math.log(n / last[0]):.2f}"
            print(f"| {name} | {n:,} | {secs:.2f} | {grow} | {validate(p, s).valid} |", flush=True)
            last = (n, secs)


if __name__ == "__main__":
    main()

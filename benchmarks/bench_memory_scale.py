"""How far the layered memory search (``min-memory``, ``memory-beam``, ``memory-list``) scales.

Runs :func:`opsched.heuristics.memory.min_memory_order_result` with ``method="beam"`` (the
seven compiler baselines, then the beam rounds) on two graph families and prints seconds,
the process's peak resident memory and the growth exponent of the time between sizes (1 is
linear). Each size runs in a fresh process, so the memory column is that size's own.

* ``diamonds``: a chain of fork-join diamonds (a -> b, c -> d), narrow like a network's
  main path, a few graph outputs held to the end;
* ``layered``: :func:`opsched.zoo.generators.layered`, random layers with long-lived tensors
  (about 2,700 tensors live or waiting per state at 16,000 ops).

Before this round each op's producers and consumers were kept as bit masks (about n^2 / 16
bytes): ``diamonds`` at 256,000 ops took 43.9 s and 9.2 GB, now 8.2 s and 0.67 GB;
``layered`` at 64,000 ops 21.0 s and 828 MB, now 17.7 s and 374 MB (the two versions run
side by side from a scratch copy of the old module).

    python benchmarks/bench_memory_scale.py [--sizes 16000 64000 256000] [--only diamonds]

With ``--auto`` each size also runs ``method="auto"`` (the default of ``min-memory`` and
``memory-list``), in a fresh process of its own, and prints its seconds and peak beside the
beam's: above :data:`~opsched.heuristics.memory.search.BEAM_MAX_OPS` ops it keeps the
best baseline instead of searching (``python benchmarks/bench_memory_scale.py --auto --only
layered --sizes 10000 40000 100000``).
"""

from __future__ import annotations

import argparse
import math
import resource
import subprocess
import sys
import time

from opsched.ir import Op, OpGraph


def diamonds(n: int) -> OpGraph:
    ops: list[Op] = []
    for i in range(n // 4):
        prev = (f"d{i - 1}",) if i else ()
        ops += [
            Op(f"a{i}", 1, deps=prev, output_bytes=4),
            Op(f"b{i}", 1, deps=(f"a{i}",), output_bytes=2 + i % 5),
            Op(f"c{i}", 1, deps=(f"a{i}",), output_bytes=1 + (i * 7) % 6),
            Op(f"d{i}", 1, deps=(f"b{i}", f"c{i}"), output_bytes=3, output=i % 9 == 0),
        ]
    return OpGraph(tuple(ops))


def layered_graph(n: int) -> OpGraph:
    from opsched.zoo.generators import layered

    return layered(n, seed=1)


FAMILIES = {"diamonds": diamonds, "layered": layered_graph}
DEFAULT_SIZES = {"diamonds": [16000, 64000, 256000], "layered": [4000, 16000, 64000]}


def one(name: str, n: int, method: str) -> None:
    """Run one size and print ``seconds peak_MB peak_bytes states method best_baseline``."""
    from opsched.heuristics.memory.common import order_peak
    from opsched.heuristics.memory.search import min_memory_order_result

    g = FAMILIES[name](n)
    t = time.perf_counter()
    r = min_memory_order_result(g, method=method)
    secs = time.perf_counter() - t
    assert order_peak(g, r.order) == r.peak
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3  # KiB on Linux
    print(f"{secs:.2f} {rss:.0f} {r.peak} {r.states} {r.method} {min(r.seeds.values())}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=None)
    ap.add_argument("--only", choices=sorted(FAMILIES), default=None)
    ap.add_argument("--auto", action="store_true", help='also run method="auto"')
    ap.add_argument("--one", nargs=3, metavar=("FAMILY", "N", "METHOD"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        one(a.one[0], int(a.one[1]), a.one[2])
        return
    extra = " auto: seconds | auto: peak / beam's peak | auto: method |" if a.auto else ""
    print("| graph | ops | seconds | growth exponent | peak RSS MB | states | method | "
          "best baseline's peak / beam's |" + extra)  # fmt: skip
    print("|---|---|---|---|---|---|---|---|" + "---|---|---|" * a.auto)
    for name in FAMILIES:
        if a.only and name != a.only:
            continue
        last = None
        for n in a.sizes or DEFAULT_SIZES[name]:
            secs_s, rss, peak, states, method, seed = _run(name, n, "beam")
            auto = _run(name, n, "auto") if a.auto else None
            secs = float(secs_s)
            grow = "" if last is None else f"{math.log(secs / last[1]) / math.log(n / last[0]):.2f}"
            more = ""
            if auto:
                more = f" {float(auto[0]):.2f} | {int(auto[2]) / int(peak):.4f} | {auto[4]} |"
            print(f"| {name} | {n:,} | {secs:.2f} | {grow} | {rss} | {states} | {method} | "
                  f"{int(seed) / int(peak):.4f} |" + more, flush=True)  # fmt: skip
            last = (n, secs)


def _run(name: str, n: int, method: str) -> list[str]:
    cmd = [sys.executable, __file__, "--one", name, str(n), method]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()


if __name__ == "__main__":
    main()

"""Scale of the list schedulers: 10k to 1M ops, side by side with the Python event loop.

For each size, a layered random DAG (``opsched.zoo.generators.layered``) and a planted-optimum
graph (``opsched.zoo.planted``: the optimum is known by construction) are scheduled on 8 units
by ``list`` (b-level, non-delay, compiled kernel), ``heft`` (insertion) and, up to
``--python-max`` ops, the interpreted event loop of ``greedy`` with the same priority, which is
what a plain Python heap loop costs. Each size runs in a fresh process so its peak RSS is
its own. Reported: ``wall_time_s`` of the result (ranks + placement), the speed-up of the
kernel over the Python loop measured in the same process, the makespan over the lower
bound / planted optimum, and the process's peak RSS per op (memory linear in size if flat).

    python benchmarks/bench_list_scale.py                  # 10k, 100k, 1M
    python benchmarks/bench_list_scale.py --sizes 10000 100000 --python-max 100000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

CHILD = r"""
import json, resource, sys, time
from opsched.zoo.generators import layered
from opsched.zoo.planted import planted
from opsched.problem import Machine, Problem
from opsched.heuristics.listsched import list_schedule
from opsched.heuristics.greedy import greedy
from opsched.analysis.ranks import priority
from opsched.validate import validate

n, python_max = int(sys.argv[1]), int(sys.argv[2])
out = {"ops": n}
list_schedule(Problem(layered(200, seed=9), Machine(units=8)))  # load the compiled kernels
t = time.perf_counter(); g = layered(n, seed=1); out["build_s"] = time.perf_counter() - t
out["edges"] = g.num_edges
p = Problem(g, Machine(units=8))
g.pred_ptr  # CSR arrays are part of the loaded graph
s = list_schedule(p)
out["list_s"], out["list_ratio"] = s.wall_time_s, s.makespan / s.lower_bound
h = list_schedule(p, "heft", "insertion")
out["heft_s"], out["heft_ratio"] = h.wall_time_s, h.makespan / h.lower_bound
if n <= python_max:
    t = time.perf_counter(); r = greedy(p, priority(g, "b-level"))
    out["python_s"] = time.perf_counter() - t
    out["same_makespan"] = abs(r.makespan - s.makespan) < 1e-9
t = time.perf_counter(); ok = validate(p, s).valid; out["validate_s"] = time.perf_counter() - t
out["valid"] = ok
pl = planted(n, units=8, seed=1)
sp = list_schedule(pl.problem)
out["planted_gap"] = sp.makespan / pl.makespan - 1
out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--python-max", type=int, default=100_000)
    args = ap.parse_args()
    rows = []
    for n in args.sizes:
        t = time.perf_counter()
        res = subprocess.run(
            [sys.executable, "-c", CHILD, str(n), str(args.python_max)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if res.returncode:
            print(res.stderr, file=sys.stderr)
            raise SystemExit(f"size {n} failed")
        row = json.loads(res.stdout.strip().splitlines()[-1])
        row["process_s"] = time.perf_counter() - t
        rows.append(row)
        print(f"done {n} ops in {row['process_s']:.1f} s", file=sys.stderr)
    hdr = (
        f"{'ops':>9} {'edges':>9} {'list s':>8} {'heft s':>8} {'python s':>9} {'speed-up':>9} "
        f"{'list/LB':>8} {'heft/LB':>8} {'planted gap':>11} {'valid':>6} {'RSS MB':>8} "
        f"{'B/op':>6}"
    )
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        py = r.get("python_s")
        sp = f"{py / r['list_s']:.0f}x" if py else "-"
        print(
            f"{r['ops']:>9} {r['edges']:>9} {r['list_s']:>8.3f} {r['heft_s']:>8.3f} "
            f"{(f'{py:.2f}' if py else '-'):>9} {sp:>9} {r['list_ratio']:>8.4f} "
            f"{r['heft_ratio']:>8.4f} {r['planted_gap'] * 100:>10.2f}% {r['valid']!s:>6} "
            f"{r['rss_mb']:>8.0f} {r['rss_mb'] * 2**20 / r['ops']:>6.0f}"
        )
    print("\n(peak RSS per op includes the Python interpreter and its libraries)")


if __name__ == "__main__":
    main()

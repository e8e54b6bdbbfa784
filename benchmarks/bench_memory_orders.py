"""Single-unit memory orders: compiler baselines and opsched's search vs the proven optimum.

Irregular random DAGs: ``opsched.zoo.layered`` graphs (random output sizes and workspaces,
skip connections) and ``opsched.zoo.gnp`` graphs given random output sizes (1-16 MiB) and
workspaces (1-8 MiB, 30 % of ops), with every sink a graph output. For each graph the peak
memory of every order (Inductor's baseline / LPMF / BFS / DFS, XLA's List / DFS / PostOrder,
opsched's ``min-memory`` search) is compared with the optimum proven by CP-SAT
(``solve_cpsat(problem, "peak_memory")`` on one unit); when CP-SAT does not prove it in the
time limit, the optimum proven by opsched's exact search is used (and counted). Every
schedule is checked by the independent validator.

With ``--large``, opsched's beam search is also timed on big layered graphs.

Reproduce (2 cores, about 2 minutes with the defaults):
    python benchmarks/bench_memory_orders.py --sizes 15 20 25 30 --seeds 5 --time-limit 20
    python benchmarks/bench_memory_orders.py --sizes --large 1000 10000 --width 16 32
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from opsched.heuristics.memory import (
    inductor_orders,
    min_memory,
    min_memory_order_result,
    order_schedule,
    xla_orders,
)
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.solver import solve_cpsat
from opsched.solver.cpsat import Params
from opsched.validate import validate
from opsched.zoo import gnp, layered

MIB = 1 << 20


def gnp_with_memory(n: int, seed: int) -> OpGraph:
    """G(n, p) with about 3 dependencies per op, random output and workspace sizes."""
    g = gnp(n, min(1.0, 3.0 / n), seed=seed)
    rng = random.Random(10_000 + seed)
    has_consumer = {d for op in g.ops for d in op.deps}
    ops = [
        Op(
            op.name,
            op.duration,
            deps=op.deps,
            output_bytes=MIB * rng.randint(1, 16),
            workspace_bytes=MIB * rng.randint(1, 8) if rng.random() < 0.3 else 0,
            output=op.name not in has_consumer,
        )
        for op in g.ops
    ]
    return g.replace_ops(ops, name=f"gnp-{n}-s{seed}")


def run_small(sizes: list[int], seeds: int, time_limit: float) -> None:
    names = ["inductor-baseline", "inductor-lpmf", "inductor-bfs", "inductor-dfs",
             "inductor (best)", "xla-list", "xla-dfs", "xla-postorder", "xla (best)",
             "min-memory (ours)"]  # fmt: skip
    gaps: dict[str, list[float]] = {k: [] for k in names}
    rows: list[tuple[object, ...]] = []
    ours_le_all = True
    cp_proved = 0
    total = 0
    ours_time: list[float] = []
    for n in sizes:
        for seed in range(seeds):
            for g in (layered(n, seed=seed), gnp_with_memory(n, seed)):
                total += 1
                problem = Problem(g, Machine(units=1))
                # independent of our search: without the one-unit floor and hint
                cp = solve_cpsat(problem, "peak_memory", time_limit=time_limit,
                                 params=Params(serial_check=False))  # fmt: skip
                t = time.perf_counter()
                ours = min_memory_order_result(g)
                ours_time.append(time.perf_counter() - t)
                sched = min_memory(problem)
                if not validate(problem, sched).valid or sched.peak_memory != ours.peak:
                    sys.exit(f"INVALID or inconsistent schedule of ours on {g.name}")
                if cp.status.value == "OPTIMAL":
                    cp_proved += 1
                    opt = cp.peak_memory
                    if ours.optimal and opt != ours.peak:
                        sys.exit(f"MISMATCH {g.name}: CP-SAT {opt}, exact search {ours.peak}")
                elif ours.optimal:
                    opt = ours.peak
                else:
                    print(f"skipping {g.name}: no proven optimum", file=sys.stderr)
                    continue
                assert opt is not None
                orders = {f"inductor-{k}": v for k, v in inductor_orders(g).items()}
                orders.update({f"xla-{k}": v for k, v in xla_orders(g).items()})
                peaks = {k: p for k, (_, p) in orders.items()}
                for k, (order, p) in orders.items():
                    s = order_schedule(problem, order, solver=k, t0=0.0)
                    if not validate(problem, s).valid or s.peak_memory != p:
                        sys.exit(f"INVALID or inconsistent schedule of {k} on {g.name}")
                peaks["inductor (best)"] = min(v for k, v in peaks.items() if "inductor" in k)
                peaks["xla (best)"] = min(v for k, v in peaks.items() if k.startswith("xla"))
                peaks["min-memory (ours)"] = ours.peak
                ours_le_all &= all(ours.peak <= v for v in peaks.values())
                for k in names:
                    gaps[k].append(100.0 * (peaks[k] - opt) / opt)
                rows.append((g.name, g.num_ops, opt // MIB, cp.status.value,
                             cp.wall_time_s or 0.0, peaks["inductor (best)"] // MIB,
                             peaks["xla (best)"] // MIB, ours.peak // MIB, ours.method,
                             ours_time[-1],
                             "-" if cp.peak_memory is None else cp.peak_memory // MIB))  # fmt: skip
                print(f"\r{g.name}", end="", file=sys.stderr)
    print(file=sys.stderr)
    print(
        "| graph | ops | optimum (MiB) | CP-SAT | CP-SAT peak | CP-SAT s | Inductor best "
        "| XLA best | ours | ours: method | ours s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[10]} | {r[4]:.2f} | {r[5]} | {r[6]} "
              f"| {r[7]} | {r[8]} | {r[9]:.2f} |")  # fmt: skip
    print()
    print(
        f"{len(rows)} graphs ({total} generated), optimum proven by CP-SAT on {cp_proved}; "
        f"ours <= every baseline on every graph: {ours_le_all}; "
        f"ours: mean {statistics.mean(ours_time):.2f} s, max {max(ours_time):.2f} s"
    )
    print()
    print("| order | mean gap to optimum % | max gap % | optimal |")
    print("|---|---|---|---|")
    for k in names:
        v = gaps[k]
        hits = sum(x == 0 for x in v)
        print(f"| {k} | {statistics.mean(v):.2f} | {max(v):.2f} | {hits}/{len(v)} |")


def run_large(sizes: list[int], widths: list[int]) -> None:
    print("| ops | width | best baseline (MiB) | ours (MiB) | improvement % | search s |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        g = layered(n, seed=1)
        for w in widths:
            t = time.perf_counter()
            r = min_memory_order_result(g, width=w)
            dt = time.perf_counter() - t
            base = min(r.seeds.values())
            print(f"| {n} | {w} | {base // MIB} | {r.peak // MIB} | "
                  f"{100.0 * (base - r.peak) / base:.2f} | {dt:.1f} |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[15, 20, 25, 30])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--large", type=int, nargs="*", default=[])
    ap.add_argument("--width", type=int, nargs="+", default=[32])
    a = ap.parse_args()
    if a.sizes:
        run_small(a.sizes, a.seeds, a.time_limit)
    if a.large:
        run_large(a.large, a.width)


if __name__ == "__main__":
    main()

"""Heterogeneous scheduling: HEFT / CPOP vs the CP-SAT optimum, and HEFT vs saga's HEFT.

Table 1: random layered DAGs (opsched.zoo.layered) of a few ops on a gpu + cpu machine. Each
op gets a gpu duration (its zoo duration), a cpu duration 1-4 times longer, and with
probability 0.15 runs on one type only; tensors cross between types at BANDWIDTH bytes per
time unit plus LATENCY. CP-SAT proves the optimum; the gaps of HEFT and CPOP are over the
proven instances. Every schedule passes the independent validator.

Table 2: large random layered DAGs on 4 identical processors with zero communication, as
saga (the ``anrg-saga`` package) models them. Compared: opsched's list scheduler with HEFT
priority and insertion (``list_schedule(problem, "heft", "insertion")``), this package's
heterogeneous HEFT (one device type of 4 instances), and saga's ``HeftScheduler``. saga runs
in its own virtual environment (created under /tmp on first use with ``python -m venv`` and
``pip install anrg-saga``) through a driver script that reads the graph as JSON; its time is
the ``schedule()`` call only. A size is skipped when saga's time, extrapolated
quadratically from the previous size, would exceed ``--saga-budget`` seconds in all.

Reproduce (2 cores; about 6 minutes with the defaults, most of it saga at 10k tasks):
    python benchmarks/bench_hetero.py --sizes 8 12 16 --seeds 10 --big 1000 4000 10000
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from opsched.hetero import HeteroMachine, HeteroProblem, cpop, heft, solve_hetero_cpsat
from opsched.hetero import validate_hetero as check_hetero
from opsched.heuristics.listsched import list_schedule
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.validate import validate
from opsched.zoo import layered

VENV = Path("/tmp/opsched-saga-venv")
BANDWIDTH = 4 << 20  # bytes per time unit: a 16 MiB tensor costs 4 time units
LATENCY = 1.0

DRIVER = r"""
import json, sys, time
from saga import Network, TaskGraph
from saga.schedulers import HeftScheduler

doc = json.load(open(sys.argv[1]))
tasks = [(n, float(c)) for n, c in doc["tasks"]]
deps = [(a, b, 0.0) for a, b in doc["deps"]]
procs = [f"p{i}" for i in range(doc["procs"])]
links = [(a, b, 1e9) for i, a in enumerate(procs) for b in procs[i + 1:]]
network = Network.create([(p, 1.0) for p in procs], links)
graph = TaskGraph.create(tasks, deps)
t0 = time.perf_counter()
sched = HeftScheduler().schedule(network, graph)
elapsed = time.perf_counter() - t0
print(json.dumps({"makespan": sched.makespan, "time_s": elapsed}))
"""


def hetero_instance(n: int, seed: int) -> HeteroProblem:
    g = layered(n, seed=seed)
    rng = random.Random(seed)
    ops = []
    for op in g.ops:
        durs = {"gpu": op.duration, "cpu": op.duration * rng.choice([1, 2, 3, 4])}
        r = rng.random()
        if r < 0.075:
            del durs["gpu"]
        elif r < 0.15:
            del durs["cpu"]
        ops.append(Op(op.name, op.duration, deps=op.deps, output_bytes=op.output_bytes,
                      attrs={"durations": durs}))  # fmt: skip
    machine = HeteroMachine.parse("gpu:2,cpu:2", bandwidth=BANDWIDTH, latency=LATENCY)
    return HeteroProblem(OpGraph(tuple(ops), name=g.name), machine)


def table_optimum(sizes: list[int], seeds: int, time_limit: float) -> None:
    print(f"\n### HEFT / CPOP vs the CP-SAT optimum (gpu:2, cpu:2, {time_limit:g} s limit)\n")
    print("| ops | proven | HEFT gap % mean / max | HEFT optimal | CPOP gap % mean / max "
          "| CP-SAT time mean / max s |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for n in sizes:
        gaps: dict[str, list[float]] = {"heft": [], "cpop": []}
        times, proven = [], 0
        for seed in range(seeds):
            p = hetero_instance(n, seed)
            opt = solve_hetero_cpsat(p, time_limit=time_limit)
            times.append(opt.wall_time_s or 0.0)
            assert check_hetero(p, opt).valid
            if opt.status.value != "OPTIMAL":
                continue
            proven += 1
            for name, fn in (("heft", heft), ("cpop", cpop)):
                s = fn(p)
                assert check_hetero(p, s).valid and s.makespan >= opt.makespan - 1e-9
                gaps[name].append(100 * (s.makespan - opt.makespan) / opt.makespan)
        h, c = gaps["heft"] or [0.0], gaps["cpop"] or [0.0]
        hit = sum(g < 1e-9 for g in gaps["heft"])
        print(f"| {n} | {proven}/{seeds} | {statistics.mean(h):.2f} / {max(h):.2f} | "
              f"{hit}/{proven} | {statistics.mean(c):.2f} / {max(c):.2f} | "
              f"{statistics.mean(times):.2f} / {max(times):.2f} |")  # fmt: skip
        sys.stdout.flush()


def ensure_saga(venv: Path) -> Path:
    py = venv / "bin" / "python"
    if not py.exists():
        print(f"(creating {venv} and installing anrg-saga)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "anrg-saga"], check=True)
    return py


def run_saga(py: Path, g: OpGraph, procs: int, timeout: float) -> dict[str, float] | None:
    doc = {"tasks": [(op.name, op.duration) for op in g.ops],
           "deps": [(d, op.name) for op in g.ops for d in op.deps], "procs": procs}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        gp, dp = Path(tmp, "graph.json"), Path(tmp, "driver.py")
        gp.write_text(json.dumps(doc))
        dp.write_text(DRIVER)
        try:
            r = subprocess.run([str(py), str(dp), str(gp)], capture_output=True, text=True,
                               timeout=timeout, check=True)  # fmt: skip
        except subprocess.TimeoutExpired:
            return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def table_saga(sizes: list[int], procs: int, budget: float, venv: Path) -> None:
    py = ensure_saga(venv)
    print(f"\n### HEFT vs saga's HEFT ({procs} identical processors, zero communication)\n")
    print("| tasks | list heft-insertion: makespan / s | hetero heft: makespan / s | "
          "saga HEFT: makespan / s | ours / saga (list, hetero) |")  # fmt: skip
    print("|---|---|---|---|---|")
    spent, last = 0.0, None
    for n in sizes:
        g = layered(n, seed=0)
        prob = Problem(g, Machine(units=procs))
        ls = list_schedule(prob, "heft", "insertion")
        assert validate(prob, ls).valid
        hp = HeteroProblem(g, HeteroMachine.parse(f"p:{procs}"))
        hs = heft(hp)
        assert check_hetero(hp, hs).valid
        guess = 0.0 if last is None else last[1] * (n / last[0]) ** 2
        saga = None
        if spent + guess <= budget:
            t0 = time.perf_counter()
            saga = run_saga(py, g, procs, timeout=max(30.0, budget - spent))
            spent += time.perf_counter() - t0
        if saga is None:
            cell, ratio = "skipped (budget)", "-"
        else:
            last = (n, saga["time_s"])
            cell = f"{saga['makespan']:g} / {saga['time_s']:.2f}"
            ratio = f"{ls.makespan / saga['makespan']:.4f}, {hs.makespan / saga['makespan']:.4f}"
        print(f"| {n} | {ls.makespan:g} / {ls.wall_time_s:.3f} | {hs.makespan:g} / "
              f"{hs.wall_time_s:.3f} | {cell} | {ratio} |")  # fmt: skip
        sys.stdout.flush()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[8, 12, 16])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--big", type=int, nargs="*", default=[1000, 4000, 10000])
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--saga-budget", type=float, default=400.0, help="seconds of saga in all")
    ap.add_argument("--venv", type=Path, default=VENV, help="saga's virtual environment")
    a = ap.parse_args()
    print("command: python benchmarks/bench_hetero.py " + " ".join(sys.argv[1:]))
    if a.sizes:
        table_optimum(a.sizes, a.seeds, a.time_limit)
    if a.big:
        table_saga(a.big, a.procs, a.saga_budget, a.venv)


if __name__ == "__main__":
    main()

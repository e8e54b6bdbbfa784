"""Parallel, memory-aware and pipeline strategies on zoo graphs: throughput, peak memory, latency.

M inputs (micro-batches) of one zoo network on K units (streams), zoo FLOP-tick durations:

* ``serial``: one input after another on one unit (baseline);
* ``parallel``: each input list-scheduled on K units, inputs one after another;
* ``memory-aware``: each input in opsched's least-peak order on one unit;
* ``pipeline``: K stages of one unit, M micro-batches overlapped (balanced stages + list
  scheduling of the unrolled graph);
* ``parallel+pipeline``: 2 stages of K/2 units each;
* ``batch-parallel``: all M inputs list-scheduled together on K units (one stage);
* ``pipeline+memory``: the pipeline, memory-aware, under a cap halfway between the parallel
  strategy's peak and the plain pipeline's.

Every schedule is validated. Throughput is M / makespan, latency the longest time one input
spends from its first start to its last end, peak the bytes of the whole run.

Reproduce (2 cores, under a minute):
    python benchmarks/bench_strategies.py --models squeezenet1_1 gpt2_block inception_v3 \
        --units 4 --microbatches 4
"""

from __future__ import annotations

import argparse

from opsched.dynamic.shapes import streams_only
from opsched.heuristics import serial
from opsched.heuristics.listsched import list_schedule
from opsched.heuristics.memory import min_memory
from opsched.pipeline import pipeline_heuristic
from opsched.problem import Machine, Problem
from opsched.validate import validate
from opsched.zoo.models import build


def _row(
    model: str, name: str, mk: float | None, lat: float | None, peak: int | None, m: int
) -> str:
    if mk is None:
        return f"| {model} | {name} | - | - | - | dead end |"
    return (
        f"| {model} | {name} | {mk:.0f} | {m / mk * 1000:.3f} | {lat:.0f} | "
        f"{(peak or 0) / 2**20:.1f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["squeezenet1_1", "gpt2_block", "inception_v3"])
    ap.add_argument("--units", type=int, default=4)
    ap.add_argument("--microbatches", type=int, default=4)
    args = ap.parse_args()
    k, m = args.units, args.microbatches
    print(
        "| model | strategy | makespan (ticks) | throughput (inputs / 1000 ticks) | latency | "
        "peak MiB |"
    )
    print("|---|---|---|---|---|---|")
    for model in args.models:
        g = streams_only(build(model))
        for name, units, fn in (
            ("serial", 1, serial),
            ("parallel", k, list_schedule),
            ("memory-aware", 1, min_memory),
        ):
            p = Problem(g, Machine(units=units))
            s = fn(p)
            assert validate(p, s).valid
            print(_row(model, name, m * (s.makespan or 0.0), s.makespan, s.peak_memory, m))
            if name == "parallel":
                par_peak = s.peak_memory
        pipe_peak = 0
        for name, stages, units in (
            ("pipeline", k, k),
            ("parallel+pipeline", 2, k),
            ("batch-parallel", 1, k),
            ("pipeline+memory", k, k),
        ):
            cap = (par_peak + pipe_peak) // 2 if name == "pipeline+memory" else None
            r = pipeline_heuristic(Problem(g, Machine(units=units, memory_cap=cap)), stages, m)
            if name == "pipeline":
                pipe_peak = r.schedule.peak_memory or 0
            if r.metrics is None:
                print(_row(model, name, None, None, None, m))
                continue
            assert validate(r.problem, r.schedule).valid
            print(
                _row(model, name, r.metrics.makespan, r.metrics.latency, r.schedule.peak_memory, m)
            )
    print(
        f"\nReproduce: python benchmarks/bench_strategies.py --models {' '.join(args.models)} "
        f"--units {k} --microbatches {m}"
    )


if __name__ == "__main__":
    main()

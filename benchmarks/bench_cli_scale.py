"""Whole ``opsched`` processes on generated graphs of 100k and 1M ops.

Each step is a separate process, timed from outside with its peak RSS (``/usr/bin/time``
semantics via ``resource.getrusage`` of the child): ``generate`` writes the graph JSON,
``solve --solver list -k 8`` reads it, schedules and writes the schedule (the result is
validated inside ``solve`` before it is written), and ``validate`` re-reads both files and
checks the schedule independently.

    python benchmarks/bench_cli_scale.py                     # 100k and 1M
    python benchmarks/bench_cli_scale.py --sizes 100000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def _run(args: list[str]) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "opsched", *args], capture_output=True,
                         text=True, check=False)  # fmt: skip
    wall = time.perf_counter() - t
    if res.returncode:
        raise SystemExit(f"opsched {' '.join(args)} failed: {res.stderr.strip()}")
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(rss, before) / 1024, res.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    args = ap.parse_args()
    print(f"{'ops':>9} {'step':>9} {'wall s':>8} {'peak RSS MB':>12}  detail")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            g, s = os.path.join(tmp, f"g{n}.json"), os.path.join(tmp, f"s{n}.json")
            steps = [
                ("generate", ["generate", "layered", "--ops", str(n), "--seed", "1", "-o", g]),
                ("solve", ["solve", g, "--solver", "list", "-k", "8", "-o", s]),
                ("validate", ["validate", g, s]),
            ]
            total = 0.0
            for name, cmd in steps:
                wall, rss, out = _run(cmd)
                total += wall
                detail = out.strip().splitlines()[0][:60] if out.strip() else ""
                if name == "solve":
                    with open(s) as f:
                        doc = json.load(f)
                    detail = f"makespan {doc['makespan']}, wall_time_s {doc['wall_time_s']:.3f}"
                print(f"{n:>9} {name:>9} {wall:>8.2f} {rss:>12.0f}  {detail}", flush=True)
            print(f"{n:>9} {'total':>9} {total:>8.2f}")


if __name__ == "__main__":
    main()

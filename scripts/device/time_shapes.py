"""Time a sample of a timing table's shapes on this machine's GPU, op by op, into a CSV.

``opsched cost collect --shapes`` does the same in one go; this script appends each op's rows
as soon as they are timed and stops starting new ops after ``BUDGET_S`` seconds, so a run on
a borrowed GPU with a hard time limit keeps what it measured. With the shapes of
``neusight_ops.csv.gz`` it made ``datasets/kernel-timings/opsched_h200.csv.gz`` (see its
PROVENANCE entry for the exact calls).

Run: ``python scripts/device/time_shapes.py OUT.csv PER_OP BUDGET_S DTYPE [OP,OP,...]``.
"""

from __future__ import annotations

import os
import sys
import time

from opsched.cost.collect import collect
from opsched.cost.data import read_table
from opsched.cost.shapes import specs_from_rows

SHAPES = "datasets/kernel-timings/neusight_ops.csv.gz"


def main(out: str, per_op: int, budget: float, dtype: str, only: set[str] | None) -> None:
    specs, _ = specs_from_rows(read_table(SHAPES), per_op)
    t0 = time.time()
    ops = sorted({s["op"] for s in specs if only is None or s["op"] in only},
                 key=lambda o: (o not in ("linear", "bmm", "conv"), o))  # fmt: skip
    for op in ops:
        if time.time() - t0 > budget:
            print("time budget spent before", op)
            break
        chunk = [s for s in specs if s["op"] == op]
        t = time.time()
        df = collect("cuda", specs=chunk, dtype=dtype, repeats=15, seconds_per_shape=0.5)
        df.to_csv(out, mode="a", header=not os.path.exists(out), index=False)
        print(f"{dtype} {op:8s} {len(df):3d} shapes {time.time() - t:6.1f} s", flush=True)
    print(f"{dtype}: done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], int(a[1]), float(a[2]), a[3], set(a[4].split(",")) if len(a) > 4 else None)

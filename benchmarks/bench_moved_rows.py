"""Price the profiler rows of the elementwise ops that the twenty-seventh round moved from
the opaque catch-all to the elementwise rule (``logical_and``, ``sgn``, ``logit``,
``logit_backward``), with whichever opsched is imported, and print the pooled median / mean
absolute percentage error and the median per op.

The docs' before / after numbers (docs/cost-model.md, twenty-seventh round) come from the
profiles before that round, with its old and its new shape rules::

    git worktree add /tmp/old 4f76275~1
    PYTHONPATH=/tmp/old python benchmarks/bench_moved_rows.py       # opaque: 315 %
    cp opsched/cost/aten.py opsched/cost/features.py /tmp/old/opsched/cost/
    PYTHONPATH=/tmp/old python benchmarks/bench_moved_rows.py       # elementwise: 26 %
    git worktree remove --force /tmp/old

and ``python benchmarks/bench_moved_rows.py`` gives the refitted profiles' error on them
(no longer held out: the refit trained on these rows).
"""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import numpy as np
import pandas as pd

import opsched
from opsched.cost.evaluate import predict_table

MOVED = ("aten::logical_and", "aten::sgn", "aten::logit", "aten::logit_backward")
FILES = ("hta_ops.csv.gz", "kineto_resnet50_v100_ops.csv.gz")


def main() -> None:
    root = Path(__file__).resolve().parents[1] / "datasets" / "kernel-timings"
    rows: list[dict[str, str]] = []
    for name in FILES:
        with gzip.open(root / name, "rt") as fh:
            rows += [r for r in csv.DictReader(fh) if r["op"] in MOVED]
    out = predict_table(pd.DataFrame(rows).astype({"gpu_time_us": float}))
    ape = (out.predicted_time_us - out.gpu_time_us).abs() / out.gpu_time_us * 100
    print(f"opsched from {Path(opsched.__file__).parent}")
    fams = sorted(set(out.attrs["_opsched"]["family"]))
    print(f"{len(out)} rows, priced as {', '.join(fams)}")
    print(f"median {np.median(ape):.1f} %, mean {np.mean(ape):.1f} %")
    for op, a in ape.groupby(out["op"]):
        print(f"  {op}: {len(a)} rows, median {a.median():.1f} %")


if __name__ == "__main__":
    main()

"""Price the profiler rows of the ops a round moved from the opaque catch-all to a shape
rule, with whichever opsched is imported, and print the pooled median / mean absolute
percentage error and the median per op. ``--round 27`` (the default): the elementwise ops
of the twenty-seventh round (``logical_and``, ``sgn``, ``logit``, ``logit_backward``);
``--round 29``: the reductions of the twenty-ninth (norms, the loss).

The docs' before / after numbers (docs/cost-model.md, twenty-seventh round) come from the
profiles before that round, with its old and its new shape rules::

    git worktree add /tmp/old 4f76275~1
    PYTHONPATH=/tmp/old python benchmarks/bench_moved_rows.py       # opaque: 315 %
    cp opsched/cost/aten.py opsched/cost/features.py /tmp/old/opsched/cost/
    PYTHONPATH=/tmp/old python benchmarks/bench_moved_rows.py       # elementwise: 26 %
    git worktree remove --force /tmp/old

and ``python benchmarks/bench_moved_rows.py`` gives the refitted profiles' error on them
(no longer held out: the refit trained on these rows). The twenty-ninth round's numbers come
the same way from its parent, commit 138ea6f (``git worktree add /tmp/old 138ea6f``), with
``--round 29``.
"""

from __future__ import annotations

import argparse
import csv
import gzip
from pathlib import Path

import numpy as np
import pandas as pd

import opsched
from opsched.cost.evaluate import predict_table

MOVED = {
    "27": ("aten::logical_and", "aten::sgn", "aten::logit", "aten::logit_backward"),
    "29": (
        "aten::linalg_vector_norm", "aten::linalg_norm", "aten::nll_loss_forward",
    ),
}  # fmt: skip
FILES = ("hta_ops.csv.gz", "kineto_resnet50_v100_ops.csv.gz")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--round", choices=sorted(MOVED), default="27")
    moved = MOVED[ap.parse_args().round]
    root = Path(__file__).resolve().parents[1] / "datasets" / "kernel-timings"
    rows: list[dict[str, str]] = []
    for name in FILES:
        with gzip.open(root / name, "rt") as fh:
            rows += [r for r in csv.DictReader(fh) if r["op"] in moved]
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

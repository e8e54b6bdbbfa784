"""The cost model against real training steps: profiler traces, op by op.

Every shipped Kineto trace (``datasets/traces``) is imported (``opsched import-trace``: one
timing row per aten op instance, its kernels' summed GPU time) and each row is priced by the
cost model as pure kernel time on the trace's GPU. Printed per trace and family: rows, the
median / mean absolute percentage error, the plain roofline's median error, and the summed
kernel time predicted against measured (what a schedule's makespan is built from).

Which traces are in-sample: the V100 ResNet-50 and the HTA A100 traces are in the
calibration data (``kineto_resnet50_v100_ops.csv.gz``, ``hta_ops.csv.gz``); the three H200
traces (recorded on 2026-11-30, ``scripts/device/``) are not: the H200's calibration rows are
single PyTorch calls timed with CUDA events (``opsched_h200.csv.gz``), so these tables check
both the transfer from per-call to in-model kernel times and the shapes of real models.

A second table prices the op graph ``import-trace`` writes (what a user schedules) with
``cost apply``, against each op's measured GPU time.

Reproduce (2 cores, about 30 s): ``python benchmarks/bench_trace_vs_model.py [--min-rows 3]``.
The "transfer" column of docs/cost-model.md (eighth round) is the same run on the profiles
fitted before any H200 row existed::

    mkdir -p /tmp/transfer && for f in $(git ls-tree --name-only e8a11f1 opsched/cost/profiles/)
    do git show e8a11f1:$f > /tmp/transfer/$(basename $f); done
    OPSCHED_PROFILES=/tmp/transfer python benchmarks/bench_trace_vs_model.py
"""

from __future__ import annotations

import argparse

import numpy as np

from opsched.cost.evaluate import predict_table
from opsched.datasets import dataset_path
from opsched.importers.trace import import_trace

TRACES = (
    ("resnet50_h200_torch2110_step.pt.trace.json.gz", "held out"),
    ("transformer_h200_torch2110_step.pt.trace.json.gz", "held out"),
    ("h200_torch211_step.pt.trace.json.gz", "held out"),
    ("resnet50_v100_step.pt.trace.json.gz", "in sample"),
    ("hta_a100_control.pt.trace.json.gz", "in sample"),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-rows", type=int, default=3, help="families with fewer rows: 'other'")
    a = ap.parse_args()
    print("| trace | family | rows | median % | mean % | roofline median % | "
          "predicted / measured total |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name, role in TRACES:
        rows = import_trace(dataset_path("traces") / name).rows
        pred = predict_table(rows, where=name)
        t = pred["gpu_time_us"].to_numpy(float)
        p = pred["predicted_time_us"].to_numpy(float)
        meta = pred.attrs["_opsched"]
        roof = np.asarray(meta["roof"][""], float)
        fam = np.asarray(meta["family"]).astype(str)
        ok = np.isfinite(p) & (t > 0)
        counts = {f: int((ok & (fam == f)).sum()) for f in np.unique(fam[ok])}
        fam = np.array([f if counts.get(f, 0) >= a.min_rows else "other" for f in fam])
        label = f"{name.split('.pt.')[0]} ({role})"
        for f in [*sorted(set(fam[ok]) - {"other"}), "other", "all"]:
            s = ok & ((fam == f) if f != "all" else True)
            if not s.any():
                continue
            ape = np.abs(p[s] - t[s]) / t[s] * 100
            rape = np.abs(roof[s] - t[s]) / t[s] * 100
            ratio = p[s].sum() / t[s].sum()
            print(f"| {label} | {f} | {int(s.sum())} | {np.median(ape):.1f} | {ape.mean():.1f} "
                  f"| {np.median(rape):.1f} | {ratio:.2f} |")  # fmt: skip
            label = ""
    graphs()


def graphs() -> None:
    """The same traces through the graph a user schedules: ``import-trace``'s op graph,
    priced by ``opsched cost apply`` with the trace's GPU (each op's kind, shapes and dtype
    as imported; copies left out), against each op's measured GPU time. ``autocast`` counts
    the ops whose dtype came from the inner op that ran their kernels (``dtype_from``)."""
    import warnings

    from opsched.cost import apply

    print()
    print("| trace (graph ops, cost apply) | priced ops | median % | predicted / measured total "
          "| autocast ops: predicted / measured us |")  # fmt: skip
    print("|---|---|---|---|---|")
    for name, role in TRACES:
        g = import_trace(dataset_path("traces") / name).timeline.graph
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # kinds the model prices by roofline, named
            priced = apply(g, g.attrs["gpu"])
        names = [op.name for op in g.ops if op.kind and op.kind != "copy" and op.duration > 0]
        p = np.array([priced[n].duration for n in names])
        m = np.array([g[n].duration for n in names])
        ape = np.abs(p - m) / m * 100
        auto = [op.name for op in g.ops if op.attrs.get("dtype_from")]
        cast = (f"{len(auto)}: {sum(priced[n].duration for n in auto):.0f} / "
                f"{sum(g[n].duration for n in auto):.0f}") if auto else "-"  # fmt: skip
        print(
            f"| {name.split('.pt.')[0]} ({role}) | {len(names)} | {np.median(ape):.1f} | "
            f"{p.sum() / m.sum():.2f} | {cast} |"
        )


if __name__ == "__main__":
    main()

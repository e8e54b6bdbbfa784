"""Kernels priced from their launch (``opsched.cost.launch``), measured on the shipped data.

Three tables:

1. The HTA kernel table's rows that no recorded op launched (``op`` blank, GPU named):
   per GPU and kind of kernel, rows, rows priced, median / mean absolute percentage error
   and the plain roofline's median. The kernel tables are not fitted on, so these rows are
   held out.
2. Each shipped trace's imported graph priced by ``cost apply`` with and without the ops'
   kernel launches (``attrs["launches"]``): the ops whose price changes, their measured
   time, the price and median error per op before and after. The H200 traces price on the
   H200 profile, the HTA one on the A100-SXM4-80GB's, the V100 one on the V100-SXM2's.
3. The same traces' timing rows (``opsched import-trace --rows``) priced by ``cost predict``
   (each row on its own GPU's profile) with and without their ``launches`` column: the rows
   whose price changes, as in table 2.

Reproduce (2 cores, about 15 s): ``python benchmarks/bench_launch.py``.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from opsched.cost.apply import apply
from opsched.cost.data import read_table
from opsched.cost.evaluate import predict_table
from opsched.datasets import dataset_path
from opsched.importers.trace import ImportedTrace, import_trace

#: Op names of an optimizer's update: PyTorch 2's foreach ops, a fused step's annotation.
OPTIMIZER = ("aten::_foreach", "Optimizer.step")
TRACES = (
    ("transformer_h200_torch2110_step.pt.trace.json.gz", "H200"),
    ("resnet50_h200_torch2110_step.pt.trace.json.gz", "H200"),
    ("h200_torch211_step.pt.trace.json.gz", "H200"),
    ("hta_a100_control.pt.trace.json.gz", "A100-SXM4-80GB"),
    ("resnet50_v100_step.pt.trace.json.gz", "V100-SXM2"),
)


def kernel_rows() -> None:
    df = read_table(dataset_path("kernel-timings") / "hta_kernels.csv.gz")
    out = predict_table(df, None, "hta_kernels.csv.gz")
    roof = out.attrs["_opsched"]["roof"][""]
    sel = (out["op"].isna() & out["gpu"].notna()).to_numpy()
    u = out[sel].assign(roof=roof[sel])
    kind = np.where(u["kernel"].str.contains("multi_tensor_apply"), "optimizer / foreach",
                    np.where(u["kernel"].str.contains("elementwise_kernel"), "elementwise",
                             "other"))  # fmt: skip
    t = u["kernel_dur_us"].astype(float)
    u = u.assign(kind=kind, ape=(u["predicted_time_us"] - t).abs() / t * 100,
                 roof_ape=(u["roof"] - t).abs() / t * 100)  # fmt: skip
    print("\nHTA kernel rows without an op, priced from their launch\n")
    print("| GPU | kernels | rows | priced | median % | mean % | roofline median % |")
    print("|---|---|---|---|---|---|---|")
    for (gpu, k), g in u.groupby(["gpu", "kind"]):
        p = g.dropna(subset=["ape"])
        cells = (f"{p.ape.median():.1f} | {p.ape.mean():.1f} | {p.roof_ape.median():.1f}"
                 if len(p) else "- | - | -")  # fmt: skip
        print(f"| {gpu} | {k} | {len(g)} | {len(p)} | {cells} |")
    p = u.dropna(subset=["ape"])
    print(f"\nall: {len(u)} rows, {len(p)} priced, median {p.ape.median():.1f} %, "
          f"roofline median {p.roof_ape.median():.1f} %")  # fmt: skip


def graph_ops(traces: dict[str, ImportedTrace]) -> None:
    print("\nImported graphs, cost apply with and without the kernels' launches\n")
    print(
        "| trace | ops changed | measured us | before us (median %) | after us (median %) "
        "| of which optimizer ops: measured / before / after us |"
    )
    print("|---|---|---|---|---|---|")
    for name, gpu in TRACES:
        g = traces[name].timeline.graph
        bare = g.replace_ops([
            replace(op, attrs={k: v for k, v in op.attrs.items() if k != "launches"})
            for op in g.ops
        ])  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            new, old = apply(g, gpu), apply(bare, gpu)
        ch = [op for op in g.ops if abs(old[op.name].duration - new[op.name].duration) > 1e-9]
        if not ch:
            print(f"| {name} | 0 | - | - | - | - |")
            continue
        t = np.array([op.attrs["gpu_time_us"] for op in ch])
        o = np.array([old[op.name].duration for op in ch])
        n = np.array([new[op.name].duration for op in ch])
        mo, mn = (np.median(np.abs(p - t) / t * 100) for p in (o, n))
        # the optimizer's update: foreach ops, or a fused step under its annotation
        opt = [op for op in ch if str(op.attrs.get("aten_op", "")).startswith(OPTIMIZER)]
        sums = (
            sum(op.attrs["gpu_time_us"] for op in opt),
            sum(old[op.name].duration for op in opt),
            sum(new[op.name].duration for op in opt),
        )
        opt_cell = " / ".join(f"{v:,.0f}" for v in sums) if opt else "-"
        print(f"| {name} | {len(ch)} | {t.sum():,.0f} | {o.sum():,.0f} ({mo:.1f}) | "
              f"{n.sum():,.0f} ({mn:.1f}) | {opt_cell} |")  # fmt: skip


def timing_rows(traces: dict[str, ImportedTrace]) -> None:
    print("\nTiming rows, cost predict with and without the launches column\n")
    print("| trace | rows changed | measured us | before us (median %) | after us (median %) |")
    print("|---|---|---|---|---|")
    for name, _ in TRACES:
        rows = traces[name].rows
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            new = predict_table(rows, None, name)["predicted_time_us"].to_numpy(float)
            old = predict_table(rows.assign(launches=""), None, name)
        o = old["predicted_time_us"].to_numpy(float)
        ch = np.nonzero(~np.isclose(o, new, rtol=0, atol=1e-9, equal_nan=True))[0]
        if not ch.size:
            print(f"| {name} | 0 | - | - | - |")
            continue
        t = rows["gpu_time_us"].to_numpy(float)[ch]
        mo, mn = (np.median(np.abs(p[ch] - t) / t * 100) for p in (o, new))
        print(f"| {name} | {ch.size} | {t.sum():,.0f} | {o[ch].sum():,.0f} ({mo:.1f}) | "
              f"{new[ch].sum():,.0f} ({mn:.1f}) |")  # fmt: skip


def main() -> None:
    kernel_rows()
    traces = {name: import_trace(dataset_path("traces") / name) for name, _ in TRACES}
    graph_ops(traces)
    timing_rows(traces)
    print("\npython benchmarks/bench_launch.py")


if __name__ == "__main__":
    main()

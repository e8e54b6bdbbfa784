"""Do large GEMMs cost at most the pieces they split into? Measured: not on every GPU.

A GEMM split along B, M, N or K into ``s`` pieces run one after another computes the same
product (a K split accumulates into C), so at a steady clock its time is at most ``s`` times a
piece's. A review's sweep found the P4's float32 GEMM price growing 12x per doubling of
M = N = K above 2,048 (8x is the work), and such a bound would cap it. This script checks the
bound against the timed rows before anything ships it:

1. measured float32 throughput (NeuSight's per-call ``events`` rows) by GEMM size, per GPU;
2. the bound applied to the shipped prices of every timed GEMM of at least ``--above``
   multiply-adds (the piece: the GEMM with its largest dimension halved until it does fewer):
   on how many rows it binds, and their in-sample median error without and with it.

Run: ``OMP_NUM_THREADS=1 python benchmarks/bench_gemm_split.py [--above 30]`` (about 1 min).
Result (docs/cost-model.md, twenty-fourth round): the P4's measured throughput falls from
2.1 TFLOPS at 2^32-2^36 FLOP to 0.8 above 2^40 (a 75 W card throttling through kernels of
seconds), the P100's from 6.0 to 4.6; the bound binds on 17,102 of the 95,711 rows of at
least 2^30 multiply-adds (9,176 of them the T4's, 6,139 the P4's) and takes their median
error from 6.0 to 20.5 %, so it is not used.
"""

from __future__ import annotations

import argparse
import glob
import itertools
import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from opsched.cost.data import canonical_rows, detect_schema, read_table
from opsched.cost.profile import load_profile
from opsched.errors import OpschedError

DATA = Path(__file__).resolve().parents[1] / "datasets" / "kernel-timings"


def piece(attrs: Mapping[str, Any], above: int) -> tuple[dict[str, Any], int] | None:
    """The GEMM with its largest dimension halved (rounded up) until it does fewer than
    ``above`` multiply-adds, and how many such pieces cover the GEMM; None below ``above``."""
    dims = {d: int(attrs.get(d, 1)) for d in ("B", "M", "N", "K")}
    if math.prod(dims.values()) < above:
        return None
    count = 1
    while math.prod(dims.values()) >= above:
        d = max(dims, key=lambda k: dims[k])
        dims[d] = -(-dims[d] // 2)
        count *= 2
    return {k: v for k, v in attrs.items() if k not in ("flops", "bytes")} | dims, count


def timed_gemms() -> list[tuple[str, str, dict[str, Any], float]]:
    """(GPU, timing method, attrs, measured us) of every timed GEMM in the shipped tables."""
    out = []
    for f in sorted(glob.glob(str(DATA / "*.csv*"))):
        if "gpu_specs" in f:
            continue
        df = read_table(f)
        try:
            schema = detect_schema(df.columns, f)
        except OpschedError:
            continue
        for r in canonical_rows(df, schema):
            if r["kind"] == "matmul" and np.isfinite(r["time_us"]):
                out.append((r["gpu"], r["method"], r["attrs"], float(r["time_us"])))
    return out


def throughput_table(rows: list[tuple[str, str, dict[str, Any], float]]) -> None:
    edges = [2.0**e for e in range(30, 44, 2)]
    print("measured float32 throughput (NeuSight per-call rows), median TFLOPS by FLOP\n")
    head = [f"2^{int(math.log2(a))}-2^{int(math.log2(b))}" for a, b in itertools.pairwise(edges)]
    print("| GPU | " + " | ".join(head) + " |\n|---|" + "---|" * len(head))
    for gpu in ("P4", "T4", "P100-PCIe", "V100-PCIe", "A100-PCIe-40GB"):
        sel = [(a, t) for g, m, a, t in rows
               if g == gpu and m == "events" and a.get("dtype") == "float32"]  # fmt: skip
        if not sel:
            continue
        flop = np.array([2.0 * math.prod(int(a.get(d, 1)) for d in "BMNK") for a, _ in sel])
        tflops = flop / np.array([t for _, t in sel]) / 1e6
        cells = []
        for lo, hi in itertools.pairwise(edges):
            s = (flop >= lo) & (flop < hi)
            cells.append(f"{np.median(tflops[s]):.2f} ({s.sum()})" if s.sum() > 5 else "-")
        print(f"| {gpu} | " + " | ".join(cells) + " |")


def bound_table(rows: list[tuple[str, str, dict[str, Any], float]], above: int) -> None:
    by: dict[tuple[str, str], list[int]] = {}
    for i, (g, m, _, _) in enumerate(rows):
        by.setdefault((g, m), []).append(i)
    recs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for (gpu, method), idx in sorted(by.items()):
            p = load_profile(gpu)
            cut = [(i, piece(rows[i][2], above)) for i in idx]
            cut = [(i, pc) for i, pc in cut if pc is not None]
            if not cut:
                continue
            price = p.predict_many(["matmul"] * len(cut), [rows[i][2] for i, _ in cut], method)
            part = p.predict_many(["matmul"] * len(cut), [pc[0] for _, pc in cut], method)
            for (i, pc), pr, pt in zip(cut, price, part, strict=True):
                recs.append((gpu, method, str(rows[i][2].get("dtype")), rows[i][3], pr, pc[1] * pt))
    d = pd.DataFrame(recs, columns=["gpu", "method", "dtype", "t", "price", "bound"])
    d["after"] = np.minimum(d["price"], d["bound"])
    d["ape"] = (d["price"] - d["t"]).abs() / d["t"] * 100
    d["ape_bound"] = (d["after"] - d["t"]).abs() / d["t"] * 100
    b = d[d["bound"] < d["price"]]
    print(f"\ntimed GEMMs of at least 2^{int(math.log2(above))} multiply-adds: {len(d):,}; "
          f"the split bound binds on {len(b):,}\n")  # fmt: skip
    print("| GPU / method / dtype | rows bound | median error % now | with the bound |")
    print("|---|---|---|---|")
    g = b.groupby(["gpu", "method", "dtype"]).agg(
        n=("t", "size"), now=("ape", "median"), bound=("ape_bound", "median")
    )
    for key, r in g[g["n"] >= 10].iterrows():
        print(f"| {' / '.join(key)} | {int(r['n']):,} | {r['now']:.1f} | {r['bound']:.1f} |")
    print(f"| all | {len(b):,} | {b['ape'].median():.1f} | {b['ape_bound'].median():.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--above", type=int, default=30, help="log2 of the least work split")
    args = ap.parse_args()
    rows = timed_gemms()
    throughput_table(rows)
    bound_table(rows, 2**args.above)


if __name__ == "__main__":
    main()

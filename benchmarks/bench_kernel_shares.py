"""Kernel-level profiler rows: each kernel's share of its op's price, held out.

``opsched cost predict`` prices ops; a ``profiler_kernels`` table has one row per kernel.
This compares, side by side on the same predicted op prices, the equal split among an op
instance's kernels with the shares of :mod:`opsched.cost.kernel_shares`, fitted on the other
half of the op instances of both tables, pooled as ``opsched cost fit`` pools them (two folds
drawn per op instance, so no instance is on both sides). Prints median absolute percentage
error per family.

Reproduce: ``python benchmarks/bench_kernel_shares.py [--seed 0]`` (about 5 s).
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from opsched.cost.data import read_table
from opsched.cost.evaluate import predict_table
from opsched.cost.kernel_shares import SHARE_TABLES, fit_shares, kernel_weights
from opsched.datasets import dataset_path


def _load(name: str, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """The table, its predictions and each row's fold (drawn per op instance)."""
    df = read_table(dataset_path("kernel-timings") / name)
    pred = predict_table(df, None, name)
    rng = np.random.default_rng(seed)
    inst = df["op_instance"].unique()
    draw = dict(zip(inst, rng.integers(0, 2, len(inst)), strict=True))
    return df, pred, df["op_instance"].map(draw).to_numpy()


def held_out(seed: int) -> pd.DataFrame:
    """Per table and family: the equal split against shares fitted on the other fold of
    both tables (pooled, as ``opsched cost fit`` pools them)."""
    tables = {name: _load(name, seed) for name in SHARE_TABLES}
    out = []
    for name, (df, pred, fold) in tables.items():
        ops, kernels, insts = df["op"].tolist(), df["kernel"].tolist(), df["op_instance"].tolist()
        op_price = pred["predicted_time_us"].to_numpy() / kernel_weights(ops, kernels, insts)
        count = df.groupby("op_instance")["op_instance"].transform("size").to_numpy()
        shared = np.full(len(df), np.nan)
        for k in (0, 1):
            shares = fit_shares([d[f != k] for d, _, f in tables.values()])
            w = kernel_weights(ops, kernels, insts, shares)
            shared[fold == k] = (op_price * w)[fold == k]
        t = pd.to_numeric(df["kernel_dur_us"], errors="coerce").to_numpy(dtype=float)
        # kernels without an op (priced from their launch, opsched.cost.launch) have no
        # op to split: both columns would be the same, so they are left out
        ok = np.isfinite(op_price) & (t > 0) & df["op_instance"].notna().to_numpy()
        out.append(pd.DataFrame({
            "table": name, "family": pred.attrs["_opsched"]["family"][ok],
            "equal": 100 * np.abs(op_price[ok] / count[ok] - t[ok]) / t[ok],
            "shares": 100 * np.abs(shared[ok] - t[ok]) / t[ok],
        }))  # fmt: skip
    return pd.concat(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rows = held_out(args.seed)
    table = rows.groupby(["table", "family"]).agg(
        rows=("equal", "size"), equal=("equal", "median"), shares=("shares", "median")
    )
    print("| table | family | rows | equal split median % | shares median % (held out) |")
    print("|---|---|---|---|---|")
    for (tab, fam), r in table.iterrows():
        print(f"| {tab} | {fam} | {int(r['rows'])} | {r['equal']:.1f} | {r['shares']:.1f} |")
    print(f"\nseed {args.seed}; python benchmarks/bench_kernel_shares.py --seed {args.seed}")


if __name__ == "__main__":
    main()

"""How fast the cost model prices ops: the curves alone against curves x residual trees.

Prices the same random ops (matmul, conv2d, elementwise) with one GPU's shipped profile
three ways, side by side in one run: the curves alone, the shipped trees, and (with
``--old-trees FILE``, e.g. an earlier ``trees.json``) another tree file. Prints seconds and
microseconds per op; the ratio to the curves alone is what carries over between machines.
Trees correct only a GPU's own curves: on a GPU without timings for a family (e.g. the
A100-SXM4-80GB's convolutions) the three rows cost the same.

Reproduce (2 cores, about 1 min):
    OMP_NUM_THREADS=1 python benchmarks/bench_cost_predict.py --ops 50000
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from opsched.cost import load_profile
from opsched.cost.trees import read_trees


def _ops(kind: str, n: int, rng: np.random.Generator, dtype: str) -> list[dict]:
    if kind == "matmul":
        return [{"M": int(m), "N": int(k), "K": int(kk), "dtype": dtype}
                for m, k, kk in rng.integers(16, 8192, (n, 3))]  # fmt: skip
    if kind == "conv2d":
        return [{"N": int(b), "C": int(c), "H": int(h), "W": int(h), "K": int(k), "R": 3,
                 "S": 3, "pad_h": 1, "pad_w": 1, "dtype": dtype}
                for b, c, h, k in zip(rng.integers(1, 64, n), rng.integers(3, 512, n),
                                      rng.integers(7, 224, n), rng.integers(16, 512, n),
                                      strict=True)]  # fmt: skip
    return [{"numel": int(v), "fn": "relu", "dtype": dtype}
            for v in rng.integers(1_000, 50_000_000, n)]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="T4", help="a GPU with timings (others get no trees)")
    ap.add_argument("--ops", type=int, default=50_000, help="ops per kind")
    ap.add_argument("--dtype", default="float32", help="the sweeps' precision on most GPUs")
    ap.add_argument("--old-trees", help="another trees JSON (plain or .gz) to compare")
    a = ap.parse_args()
    prof = load_profile(a.gpu)
    variants = {"curves alone": {}, "shipped trees": prof.trees}
    if a.old_trees:
        variants["--old-trees"] = read_trees(Path(a.old_trees).read_bytes(), a.old_trees)
    rng = np.random.default_rng(0)
    print(f"\npricing {a.ops:,} {a.dtype} ops per kind on {a.gpu} (method kernel)\n")
    print("| kind | trees | trees per family | seconds | us per op | x curves alone |")
    print("|---|---|---|---|---|---|")
    for kind in ("matmul", "conv2d", "elementwise_unary"):
        attrs = _ops(kind, a.ops, rng, a.dtype)
        k = "elementwise" if kind.startswith("elementwise") else kind
        base = None
        for name, trees in variants.items():
            prof.trees = trees
            t0 = time.perf_counter()
            prof.predict_many([k] * len(attrs), attrs, "kernel")
            dt = time.perf_counter() - t0
            base = dt if base is None else base
            ens = trees.get(kind)
            n_trees = ens.n_trees if ens is not None else 0
            print(f"| {kind} | {name} | {n_trees} | {dt:.2f} | {dt / len(attrs) * 1e6:.1f} |"
                  f" {dt / base:.2f} |")  # fmt: skip
    print("\nreproduce: OMP_NUM_THREADS=1 python benchmarks/bench_cost_predict.py "
          f"--gpu {a.gpu} --ops {a.ops} --dtype {a.dtype}")  # fmt: skip


if __name__ == "__main__":
    main()

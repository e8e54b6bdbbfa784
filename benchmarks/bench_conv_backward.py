"""The backward convolutions' held-out error under other fit settings, side by side.

The two backward convolution families are the ones the k-fold table leaves above the 10 %
goal (README). This scores them alone, with the grouped 5-fold of
``bench_cost_model.py`` (folds drawn per shape) on several fold seeds, for the shipped
settings and for each variation below, one row per setting: residual-tree sizes
(:data:`opsched.cost.boost.SMALL_TREE_PARAMS`, which these families use), the ridge that
pulls the pooled curve towards the roofline and each GPU's curve towards the pooled one
(``opsched.cost.fit.POOLED_RIDGE`` / ``GROUP_RIDGE``), and the curve without trees.
Only these families are refitted (``crossval(..., families=...)``), so a setting takes
about 5 s per fold seed; the shipped row equals the two families' rows of
``bench_cost_model.py`` for the same seed.

Reproduce: ``OMP_NUM_THREADS=1 python benchmarks/bench_conv_backward.py [--seeds 0 1 2]``
(about 2.5 minutes with loading).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

import opsched.cost.boost as boost
import opsched.cost.fit as fit
from opsched.cost.fit import load_fit_data
from opsched.cost.heldout import crossval

FAMILIES = ("conv2d_bwd_data", "conv2d_bwd_filter")

#: label -> (tree settings over the shipped small ones, pooled ridge, group ridge, trees)
SETTINGS: dict[str, tuple[dict[str, Any], float | None, float | None, bool]] = {
    "shipped (100 trees, 15 leaves, >= 40 rows a leaf)": ({}, None, None, True),
    "curve alone, no trees": ({}, None, None, False),
    "50 trees": ({"max_iter": 50}, None, None, True),
    "200 trees": ({"max_iter": 200}, None, None, True),
    "200 trees, learning rate 0.05": ({"max_iter": 200, "learning_rate": 0.05}, None, None, True),
    "300 trees, learning rate 0.03": ({"max_iter": 300, "learning_rate": 0.03}, None, None, True),
    "7 leaves": ({"max_leaf_nodes": 7}, None, None, True),
    "31 leaves": ({"max_leaf_nodes": 31}, None, None, True),
    ">= 20 rows a leaf": ({"min_samples_leaf": 20}, None, None, True),
    ">= 80 rows a leaf": ({"min_samples_leaf": 80}, None, None, True),
    "pooled ridge 0.3 (shipped 1)": ({}, 0.3, None, True),
    "pooled ridge 3": ({}, 3.0, None, True),
    "group ridge 1 (shipped 3)": ({}, None, 1.0, True),
    "group ridge 10": ({}, None, 10.0, True),
}  # fmt: skip


@contextmanager
def _settings(trees: dict[str, Any], pooled: float | None, group: float | None) -> Iterator[None]:
    """The fit's module settings changed for the block, and put back after it."""
    saved = (boost.SMALL_TREE_PARAMS, fit.POOLED_RIDGE, fit.GROUP_RIDGE)
    boost.SMALL_TREE_PARAMS = dict(saved[0]) | trees
    fit.POOLED_RIDGE = saved[1] if pooled is None else pooled
    fit.GROUP_RIDGE = saved[2] if group is None else group
    try:
        yield
    finally:
        boost.SMALL_TREE_PARAMS, fit.POOLED_RIDGE, fit.GROUP_RIDGE = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="fold draws")
    ap.add_argument("--k", type=int, default=5)
    a = ap.parse_args()
    t0 = time.perf_counter()
    data = load_fit_data()
    print(f"loaded in {time.perf_counter() - t0:.0f} s\n")
    seeds = " / ".join(str(s) for s in a.seeds)
    print(f"| setting | backward data median % (seeds {seeds}) | backward filter median % "
          f"(seeds {seeds}) | mean of all |\n|---|---|---|---|")  # fmt: skip
    for label, (trees, pooled, group, with_trees) in SETTINGS.items():
        per: dict[str, list[float]] = {f: [] for f in FAMILIES}
        with _settings(trees, pooled, group):
            for seed in a.seeds:
                pred = crossval(data, a.k, seed, trees=with_trees, families=FAMILIES)
                for f in FAMILIES:
                    fd = data.families[f]
                    per[f].append(float(np.median(np.abs(pred[f] - fd.t) / fd.t * 100)))
        cells = [" / ".join(f"{v:.1f}" for v in per[f]) for f in FAMILIES]
        mean = np.mean([v for f in FAMILIES for v in per[f]])
        print(f"| {label} | {cells[0]} | {cells[1]} | {mean:.2f} |", flush=True)
    print(f"\n{time.perf_counter() - t0:.0f} s in all; reproduce: OMP_NUM_THREADS=1 python "
          f"benchmarks/bench_conv_backward.py --seeds {' '.join(map(str, a.seeds))}")  # fmt: skip


if __name__ == "__main__":
    main()

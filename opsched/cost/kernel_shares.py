"""How an op's time splits among the kernels it launches, for kernel-level profiler rows.

The model prices ops; a profiler table of kernels (``profiler_kernels`` schema) has one row
per kernel, several per op. Sharing the op's price equally gave a 2 us cuDNN
``computeOffsetsKernel`` half of its 605 us convolution. Instead each kernel takes the share
of its op's time that kernels of that name take in the shipped kernel tables (the median
fraction, per aten op and kernel name with its template arguments cut). A kernel whose
(op, name) the tables never saw
takes the median share of the known ones; ops that are not aten ops (fbgemm, c10d, custom
kernels, whose kernels vary call to call) keep the equal split. The shares of one instance
are scaled down where they add up to more than 1, never up: where they add up to less, the
instance's other kernels are not in the table (a sample of its rows), and the kernels there
keep their own shares, not the op's whole time.

Held out (two folds drawn per op instance, both tables pooled; ``python
benchmarks/bench_kernel_shares.py [--seed 1]``), median error of the kernel rows: the V100
ResNet-50 table's convolutions 56.3 -> 8.9 / 8.8 % (fold seeds 0 / 1), its GEMMs 86.7 ->
25.9 / 26.0 %; the recommender's (HTA) GEMMs 31.3 -> 24.7 / 24.8 %. Every other family has
one kernel per op and is unchanged (docs/cost-model.md, forty-first round).

``opsched cost fit`` writes the shares next to the profiles (:data:`SHARES_FILE`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np

__all__ = [
    "SHARES_FILE",
    "SHARE_TABLES",
    "fit_shares",
    "kernel_key",
    "kernel_weights",
    "load_shares",
]

#: The kernel-level tables the shares are measured on.
SHARE_TABLES: tuple[str, ...] = ("kineto_resnet50_v100_kernels.csv.gz", "hta_kernels.csv.gz")
#: The shares' file in a profiles folder.
SHARES_FILE = "kernel_shares.json"
#: An (op, kernel) needs this many rows for a share of its own.
MIN_ROWS = 3


def kernel_key(op: Any, kernel: Any) -> str:
    """``"op | kernel"`` with the kernel's template arguments and parameters cut.

    >>> kernel_key("aten::cudnn_convolution",
    ...            "void implicit_convolve_sgemm<float, float, 1024, 6>(int, int)")
    'aten::cudnn_convolution | implicit_convolve_sgemm'
    """
    name = re.sub(r"^void\s+", "", str(kernel).strip())
    return f"{str(op).strip()} | {re.split(r'[<(]', name, maxsplit=1)[0].strip()}"


def fit_shares(tables: Sequence[Any]) -> dict[str, float]:
    """Median fraction of its op instance's kernel time per (op, kernel) key, from tables in
    the ``profiler_kernels`` schema (keys with fewer than :data:`MIN_ROWS` rows left out)."""
    import pandas as pd

    if not tables:  # a data folder without kernel tables: every op keeps the equal split
        return {}
    parts = []
    for df in tables:
        t = pd.to_numeric(df["kernel_dur_us"], errors="coerce")
        total = t.groupby(df["op_instance"]).transform("sum")
        keys = [kernel_key(o, k) for o, k in zip(df["op"], df["kernel"], strict=True)]
        parts.append(pd.DataFrame({"key": keys, "frac": t / total.where(total > 0)}))
    both = pd.concat(parts).dropna()
    both = both[both["key"].str.startswith("aten::")]  # the others keep the equal split
    stats = both.groupby("key")["frac"].agg(["median", "size"])
    stats = stats[stats["size"] >= MIN_ROWS]
    return {k: round(float(v), 4) for k, v in sorted(stats["median"].items())}


@cache
def _read(path: str) -> dict[str, float]:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return {}  # no shares: every kernel of an op takes an equal part
    shares = doc.get("shares", {}) if isinstance(doc, dict) else {}
    return {str(k): float(v) for k, v in shares.items() if isinstance(v, int | float) and v > 0}


def load_shares() -> dict[str, float]:
    """The shares of the active profiles folder (empty if it has none)."""
    from opsched.cost.specs import profiles_dir

    return _read(os.path.join(profiles_dir(), SHARES_FILE))


def kernel_weights(
    ops: Sequence[Any], kernels: Sequence[Any], instances: Sequence[Any],
    shares: dict[str, float] | None = None,
) -> np.ndarray:  # fmt: skip
    """Each kernel row's part of its op instance's time (the parts of an instance add to at
    most 1: less where some of its kernels are not in the table).

    >>> w = kernel_weights(["aten::mm"] * 2 + ["x::y"] * 2, ["a", "b", "a", "b"],
    ...                    [1, 1, 2, 2], {"aten::mm | a": 0.9, "aten::mm | b": 0.1})
    >>> w.round(2).tolist()
    [0.9, 0.1, 0.5, 0.5]
    >>> kernel_weights(["aten::mm"], ["b"], [1], {"aten::mm | a": 0.9, "aten::mm | b": 0.1})
    array([0.1])
    >>> kernel_weights([None, "aten::mm", "aten::mm"], ["k", "a", "b"], [None, 3, None],
    ...                {"aten::mm | a": 0.5}).tolist()  # no op, no instance: a whole
    [1.0, 0.5, nan]
    """
    import pandas as pd

    from opsched.cost.data import blank_cell

    shares = load_shares() if shares is None else shares
    n = len(kernels)
    inst = pd.Series(list(instances))
    count = inst.groupby(inst).transform("size").to_numpy(dtype=float)
    # a kernel with neither an op nor an instance is its own whole (opsched.cost.launch
    # prices it); one with an op but no instance has no share to take (NaN)
    alone = inst.isna().to_numpy() & np.array([blank_cell(o) for o in ops], dtype=bool)
    equal = np.where(alone, 1.0, 1.0 / np.where(alone, 1.0, count))
    if not shares or not n:
        return equal
    default = float(np.median(list(shares.values())))
    w = np.array([shares.get(kernel_key(o, k), default) for o, k in zip(ops, kernels, strict=True)])
    total = pd.Series(w).groupby(inst).transform("sum").to_numpy()
    aten = np.array([str(o).startswith("aten::") for o in ops]) & ~alone
    # scaled down where the kernels present take more than the whole op, never up: a table
    # holding only some of an instance's kernels (a sample of rows) must not hand the op's
    # whole time to those present (a 2 us offsets kernel had taken a convolution's 1.1 ms)
    return np.where(aten & (total > 0), w / np.maximum(total, 1.0), equal)

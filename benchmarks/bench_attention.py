"""Fused attention: how well the ``attention`` curve, fitted on our H200's 216 SDPA timings,
predicts what it never saw, and what it charges on other GPUs against the unfused parts.

Three tables (docs/cost-model.md, sixteenth round):

1. grouped 5-fold on the SDPA table, fold seeds 0 and 1: the shipped curve, the same curve
   on the generic columns alone (no attention shape terms), the shipped curve with each
   shape's float16 / bfloat16 and causal twins held out together, and the plain roofline;
2. one sequence length or head dim held out entirely (fit on the others);
3. the transformer trace's attention (8 x 16 heads, 512 tokens, d 64, bfloat16) priced on a
   few GPUs, fused against its unfused parts.

Reproduce (2 cores, about 15 s): ``OMP_NUM_THREADS=1 python benchmarks/bench_attention.py``.
"""

from __future__ import annotations

import re

import numpy as np

from opsched.cost import load_profile
from opsched.cost.composite import price_attention
from opsched.cost.fit import fit_model, load_fit_data, predict_family
from opsched.cost.heldout import crossval

SDPA = "opsched_h200_sdpa.csv.gz"
TRACE_SHAPE = {"B": 128, "Sq": 512, "Skv": 512, "D": 64, "dtype": "bfloat16"}


def _ape(pred: np.ndarray, t: np.ndarray) -> np.ndarray:
    return np.abs(pred / t - 1) * 100


def _cell(ape: np.ndarray) -> str:
    return f"{np.median(ape):.1f} / {np.mean(ape):.1f}"


def main() -> None:
    data = load_fit_data(files=[SDPA])
    fd = data.families["attention"]
    print(f"{len(fd.t)} rows, {len(set(fd.group))} shapes\n")
    print("| 5-fold, median / mean APE % | seed 0 | seed 1 |\n|---|---|---|")
    rows: dict[str, list[str]] = {}
    x_full, groups = fd.x, fd.group
    twins = np.array([re.sub(r"\|(causal|dtype)=\w+", "", g) for g in groups])
    for seed in (0, 1):
        rows.setdefault("shipped curve", []).append(
            _cell(_ape(crossval(data, 5, seed)["attention"], fd.t))
        )
        fd.x = x_full[:, :8]  # intercept, roofline terms and intensity: no shape terms
        rows.setdefault("generic columns only", []).append(
            _cell(_ape(crossval(data, 5, seed)["attention"], fd.t))
        )
        fd.x, fd.group = x_full, twins
        rows.setdefault("dtype and causal twins held out together", []).append(
            _cell(_ape(crossval(data, 5, seed)["attention"], fd.t))
        )
        fd.group = groups
        rows.setdefault("roofline", []).append(_cell(_ape(fd.roof, fd.t)))
    for name, cells in rows.items():
        print(f"| {name} | " + " | ".join(cells) + " |")

    sq = np.array([int(re.search(r"Sq=(\d+)", g).group(1)) for g in groups])  # type: ignore[union-attr]
    d = np.array([int(re.search(r"\|D=(\d+)", g).group(1)) for g in groups])  # type: ignore[union-attr]
    print("\n| held out entirely | median / mean APE % | predicted / measured total |")
    print("|---|---|---|")
    for name, hold in [(f"Sq {v}", sq == v) for v in (128, 512, 2048)] + [
        (f"D {v}", d == v) for v in (64, 128)
    ]:
        pred = predict_family(fit_model(data, {"attention": ~hold}), "attention", fd, hold)
        total = pred.sum() / fd.t[hold].sum()
        print(f"| {name} | {_cell(_ape(pred, fd.t[hold]))} | {total:.2f} |")

    print("\nthe transformer trace's attention, bfloat16, us (measured on the H200: 26.1)\n")
    print("| GPU | priced | unfused parts |\n|---|---|---|")
    for gpu in ("H200", "H100-SXM5", "A100-SXM4-80GB", "L4", "V100-SXM2", "T4"):
        p = load_profile(gpu)
        parts = price_attention(p, TRACE_SHAPE, "bfloat16", "kernel")
        print(f"| {gpu} | {p.predict('attention', TRACE_SHAPE):.1f} | {parts:.1f} |")


if __name__ == "__main__":
    main()

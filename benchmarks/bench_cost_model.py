"""Held-out accuracy of the cost model: grouped k-fold per family, and leave-one-GPU-out.

Prints markdown tables of median / mean absolute percentage error (APE), the shipped hybrid
(calibrated curve x residual trees) next to the curve alone and the plain roofline:
k-fold per family on GPUs with timings (folds grouped by shape, so a shape timed on several
GPUs or repeated in a trace never sits on both sides), per family and timing source, and
leave-one-GPU-out (each GPU's rows predicted from a fit without them, as a GPU without
timings is: a same-chip GPU's curve where one exists, else the pooled curve through its
specs; the pooled curve alone beside it).
Each table also gives the number of distinct shapes and the hybrid's median over shapes (the
median of each shape's median error), which a trace repeating one shape hundreds of times
cannot dominate.

Run: ``python benchmarks/bench_cost_model.py [--k 5] [--seed 0] [--gpus V100-PCIe,T4,...]
[--skip-logo] [--no-drift] [--by-gpu H200] [--detail conv2d_bwd_data]
[--families conv2d_bwd_data,conv2d_bwd_filter] [--logo-detail H200]``. ``--families``
refits and scores only those families (the kernel floors still come from every family, so on
the shipped data their prices are the whole fit's: see ``fit_model``'s ``families``), so a
look at one family takes a minute, not 20.
``--logo-detail GPU`` breaks that GPU's leave-one-GPU-out rows down by family, timing method,
dtype class and source, with the median of predicted over measured.
``--no-drift`` fits NeuSight's convolution calls as measured, to compare with the shipped fit,
which takes their run drift out (:mod:`opsched.cost.drift`).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from opsched.cost.fit import FamilyData, load_fit_data
from opsched.cost.heldout import crossval, leave_one_gpu_out, scored_families


def _ape(pred: np.ndarray, t: np.ndarray) -> np.ndarray:
    return np.abs(pred - t) / t * 100


def _by_shape(ape: np.ndarray, group: np.ndarray) -> float:
    """Median over shapes of each shape's median error: every shape counts once, however
    often a trace repeats it (one shape is a quarter of the reduce rows)."""
    return float(pd.Series(ape).groupby(group).median().median())


def _row(name: str, t: np.ndarray, roof: np.ndarray, group: np.ndarray, *preds: np.ndarray) -> str:
    # A family without a curve in the training folds (pool: one shape) is priced by the
    # plain roofline, as Profile.predict does.
    preds = tuple(np.where(np.isfinite(p), p, roof) for p in preds)
    cells = [name, str(len(t)), str(np.unique(group).size)]
    for i, p in enumerate(preds):
        a = _ape(p, t)
        cells += [f"{np.median(a):.1f}", f"{np.mean(a):.1f}"]
        if i == 0:
            cells.append(f"{_by_shape(a, group):.1f}")
    r = _ape(roof, t)
    cells += [f"{np.median(r):.1f}", f"{np.mean(r):.1f}"]
    return "| " + " | ".join(cells) + " |"


def _head(first: str, forms: list[str]) -> str:
    cols = [first, "rows", "shapes"]
    for i, f in enumerate(forms):
        cols += [f"{f} median %", f"{f} mean %"]
        if i == 0:
            cols.append(f"{f} median over shapes %")
    cols += ["roofline median %", "roofline mean %"]
    return "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--gpus", default="V100-PCIe,V100-SXM2,A100-PCIe-40GB,A100-SXM4-80GB,"
                    "A100-SXM4-40GB,A100-PCIe-80GB,H100-SXM5,T4,P100-PCIe,P4,H200,GTX-1080-Ti,"
                    "Titan-X-Pascal,Titan-Xp,M40,Titan-X-Maxwell")  # fmt: skip
    ap.add_argument("--seed", type=int, default=0, help="draw of the shape folds")
    ap.add_argument("--skip-logo", action="store_true")
    ap.add_argument("--no-drift", action="store_true",
                    help="fit NeuSight's convolutions as measured, with their run drift "
                         "(opsched.cost.drift)")  # fmt: skip
    ap.add_argument("--by-gpu", default="H200",
                    help="also print this GPU's rows per family and method")  # fmt: skip
    ap.add_argument("--families", default=None,
                    help="score only these families (comma-separated; the others are not "
                         "refitted, so it takes seconds to minutes instead of 20)")  # fmt: skip
    ap.add_argument("--logo-detail", default=None,
                    help="also print this left-out GPU's rows by family, timing method, dtype "
                         "class and source, with the median of predicted / measured")  # fmt: skip
    ap.add_argument("--detail", default=None,
                    help="also print this family by source, GPU and dtype class")  # fmt: skip
    args = ap.parse_args()
    t0 = time.perf_counter()
    data = load_fit_data()
    print(f"loaded in {time.perf_counter() - t0:.0f} s")
    t0 = time.perf_counter()
    drift = not args.no_drift
    fams = None if args.families is None else args.families.split(",")
    unknown = sorted(
        set(fams or ()).union([args.detail] if args.detail else ()) - set(data.families)
    )
    if unknown:
        raise SystemExit(f"no such families: {', '.join(unknown)} "
                         f"(known: {', '.join(sorted(data.families))})")  # fmt: skip
    if args.logo_detail and args.logo_detail not in args.gpus.split(","):
        raise SystemExit(f"--logo-detail {args.logo_detail} is not among --gpus")
    if args.detail and fams is not None and args.detail not in fams:
        raise SystemExit(f"--detail {args.detail} is not among --families")
    # the others still give the kernel floors, but are neither refitted nor scored
    scored = scored_families(data, fams)
    curve = crossval(data, k=args.k, seed=args.seed, trees=False, drift=drift, families=fams)
    hybrid = crossval(data, k=args.k, seed=args.seed, trees=True, drift=drift, families=fams)
    print(f"\n{args.k}-fold grouped cross-validation ({time.perf_counter() - t0:.0f} s)\n")
    print(_head("family", ["hybrid", "curve"]))
    for fam, fd in sorted(scored.items()):
        print(_row(fam, fd.t, fd.roof, fd.group, hybrid[fam], curve[fam]))
    print("\nby family and timing source\n")
    print(_head("family / source", ["hybrid", "curve"]))
    for fam, fd in sorted(scored.items()):
        for src in np.unique(fd.source):
            s = fd.source == src
            print(_row(f"{fam} / {src}", fd.t[s], fd.roof[s], fd.group[s], hybrid[fam][s],
                       curve[fam][s]))  # fmt: skip
    if args.by_gpu:
        print(f"\n{args.by_gpu} rows by family and timing method (the k-fold above)\n")
        print(_head("family / method", ["hybrid", "curve"]))
        for fam, fd in sorted(scored.items()):
            for m in np.unique(fd.method[fd.gpu == args.by_gpu]):
                s = (fd.gpu == args.by_gpu) & (fd.method == m)
                print(_row(f"{fam} / {m}", fd.t[s], fd.roof[s], fd.group[s], hybrid[fam][s],
                           curve[fam][s]))  # fmt: skip
    if args.detail:
        fd = scored[args.detail]
        print(f"\n{args.detail} by timing source, GPU and dtype class (the k-fold above)\n")
        print(_head("source / GPU / class", ["hybrid", "curve"]))
        for key in sorted(set(zip(fd.source, fd.gpu, fd.cls, strict=True))):
            s = (fd.source == key[0]) & (fd.gpu == key[1]) & (fd.cls == key[2])
            print(_row(" / ".join(key), fd.t[s], fd.roof[s], fd.group[s],
                       hybrid[args.detail][s], curve[args.detail][s]))  # fmt: skip
    if args.skip_logo:
        return
    t0 = time.perf_counter()
    gpus = args.gpus.split(",")
    logo = leave_one_gpu_out(data, gpus, drift=drift, families=fams)
    pooled = leave_one_gpu_out(data, gpus, sibling=False, drift=drift, families=fams)
    print(f"\nleave-one-GPU-out ({time.perf_counter() - t0:.0f} s): what a GPU without timings "
          "gets; ours = a same-chip GPU's curve for the same kind of timing where one exists "
          "(with the trees), else the pooled curve through the GPU's specs; pooled = the "
          "pooled curve alone\n")  # fmt: skip
    print(_head("left-out GPU / family", ["ours", "pooled"]))
    fails = {"ours": 0, "pooled": 0}
    alone = []  # (GPU, family) pairs no fit without the GPU can price: no pair to score
    for gpu in gpus:
        for fam, fd in sorted(scored.items()):
            s = fd.gpu == gpu
            if s.sum() and not np.isfinite(logo[gpu][fam][s]).any():
                alone.append(f"{gpu} / {fam}")
            elif s.sum():
                print(_row(f"{gpu} / {fam}", fd.t[s], fd.roof[s], fd.group[s],
                           logo[gpu][fam][s], pooled[gpu][fam][s]))  # fmt: skip
                for name, p in (("ours", logo), ("pooled", pooled)):
                    q = np.where(np.isfinite(p[gpu][fam][s]), p[gpu][fam][s], fd.roof[s])
                    fails[name] += bool(np.median(_ape(q, fd.t[s])) > 25)
    pairs = sum(int((fd.gpu == g).any()) for g in gpus for fd in scored.values())
    pairs -= len(alone)
    print(
        f"\nGPU/family pairs above 25 %: ours {fails['ours']}, pooled {fails['pooled']} of {pairs}"
    )
    if alone:
        print("not scored (the only GPU with timings of the family, so nothing to transfer): "
              + ", ".join(alone))  # fmt: skip
    if args.logo_detail:
        _logo_detail(args.logo_detail, scored, logo[args.logo_detail])


def _logo_detail(gpu: str, scored: dict[str, FamilyData], pred: dict[str, np.ndarray]) -> None:
    """The left-out ``gpu``'s rows by family, method, dtype class and source: where the
    transfer misses and which way (predicted / measured below 1: priced too fast)."""
    print(f"\n{gpu} left out, by family / method / class / source\n")
    print("| family / method / class / source | rows | ours median % | median predicted / "
          "measured |\n|---|---|---|---|")  # fmt: skip
    for fam, fd in sorted(scored.items()):
        s = (fd.gpu == gpu) & np.isfinite(pred[fam])
        for key in sorted(set(zip(fd.method[s], fd.cls[s], fd.source[s], strict=True))):
            m = s & (fd.method == key[0]) & (fd.cls == key[1]) & (fd.source == key[2])
            ratio = np.median(pred[fam][m] / fd.t[m])
            print(
                f"| {fam} / {' / '.join(key)} | {m.sum()} | "
                f"{np.median(_ape(pred[fam][m], fd.t[m])):.1f} | {ratio:.2f} |"
            )


if __name__ == "__main__":
    main()

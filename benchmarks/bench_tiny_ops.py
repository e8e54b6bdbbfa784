"""What the cost model charges for tiny GEMMs and norms, against what such kernels measure.

Below their data the GEMM and norm curves climbed again (a 2x2x2 float32 GEMM at hundreds
of microseconds); a small GEMM or norm is now priced at most as its paddings
(``opsched.cost.paddings``, docs/cost-model.md item 10). Three tables:

1. the prices of a 2x2x2 GEMM (float32, float16), a 64^3 one and a one-row, 1024-wide
   float32 layernorm on a few GPUs;
2. the measured kernel times of the H200's tiny half-precision GEMMs (kernel-timed rows with
   a roofline under 0.2 us, ``opsched_h200_half.csv.gz`` and ``opsched_h200_aligned_half``);
3. seconds to price 50,000 small GEMMs (every dimension 1-199) and 50,000 large ones
   (256-8191), which the bound makes slower only for the small ones;
4. small elementwise ops and convolutions (docs/cost-model.md, sixteenth round): a
   256-element add's kernel price (the elementwise cap), a 25 MB bfloat16 fill, a 16-channel
   3x3 convolution over 7 x 7 and a depthwise 5x5 over 176 channels (the convolution
   paddings), float32, batch 1;
5. whole zoo networks with many small and depthwise convolutions, batch 1, priced by
   ``opsched.cost.apply``, float32 and float16 (the latter, with the count of convolutions
   priced at the launch floor);
6. that 16-channel convolution in each direction and in float32 / float16, with the
   convolution floors (docs/cost-model.md, eighteenth round).

Reproduce (2 cores, about 30 s): ``OMP_NUM_THREADS=1 python benchmarks/bench_tiny_ops.py``.
The prices before this change: the same script run against commit 429dd71 (a worktree and
``PYTHONPATH``, as ``bench_half_before_volta.py`` describes); before the sixteenth round's
elementwise and convolution bounds, against bd69906 (tables 4 and 5).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from opsched.cost import load_profile
from opsched.cost.fitdata import load_fit_data
from opsched.errors import InputError

GPUS = ("A100-SXM4-80GB", "A100-SXM4-40GB", "H100-SXM5", "V100-SXM2", "H200", "T4", "P4")


def main() -> None:
    cols = ("floor", "2x2x2 float32", "2x2x2 float16", "64^3 float32", "layernorm 1x1024 fp32")
    print("prices, us\n")
    print("| GPU | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for gpu in GPUS:
        p = load_profile(gpu)
        tiny = {"M": 2, "N": 2, "K": 2}
        cells = [p.predict("matmul", tiny), p.predict("matmul", tiny | {"dtype": "float16"}),
                 p.predict("matmul", {"M": 64, "N": 64, "K": 64}),
                 p.predict("layernorm", {"rows": 1, "cols": 1024})]  # fmt: skip
        print(f"| {gpu} | {p.kernel_floor:g} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")

    try:
        data = load_fit_data(files=["opsched_h200_half.csv.gz", "opsched_h200_aligned_half.csv.gz"])
    except InputError as e:  # an older checkout, without the aligned sweep
        print(f"\nmeasured: not in this checkout ({e.message})")
        data = None
    if data is not None:
        _measured(data)
    _speed()
    _small_ops()
    _zoo()
    _conv_floors()


def _measured(data: Any) -> None:
    fd = data.families["matmul"]
    sel = (fd.gpu == "H200") & (fd.method == "kernel") & (fd.cls == "half") & (fd.roof < 0.2)
    t = fd.t[sel]
    print("\nmeasured: the H200's kernel-timed half GEMMs with a roofline under 0.2 us\n")
    print(f"{t.size} rows, median {np.median(t):.2f} us, range {t.min():.2f}-{t.max():.2f} us")


def _speed() -> None:
    rng = np.random.default_rng(0)
    p = load_profile("A100-SXM4-80GB")
    print("\npricing speed, A100-SXM4-80GB profile, float16\n")
    print("| GEMMs | ops | seconds |")
    print("|---|---|---|")
    for name, lo, hi in (("small (1-199)", 1, 200), ("large (256-8191)", 256, 8192)):
        ops = [{"M": int(a), "N": int(b), "K": int(c), "dtype": "float16"}
               for a, b, c in rng.integers(lo, hi, (50_000, 3))]  # fmt: skip
        t0 = time.perf_counter()
        p.predict_many(["matmul"] * len(ops), ops)
        print(f"| {name} | {len(ops):,} | {time.perf_counter() - t0:.2f} |")


def _small_ops() -> None:
    add = {"numel": 256, "arity": 1, "fn": "add"}
    fill = {"numel": 3 * 512 * 8 * 1024, "fn": "fill_", "dtype": "bfloat16"}
    conv = {"N": 1, "C": 16, "H": 7, "W": 7, "K": 16, "R": 3, "S": 3, "pad_h": 1, "pad_w": 1}
    dw = conv | {"C": 176, "K": 176, "R": 5, "S": 5, "pad_h": 2, "pad_w": 2, "groups": 176}
    cols = ("floor", "add 256", "fill 25 MB bf16", "conv 16ch 7x7", "depthwise 5x5 176ch 7x7")
    print("\nsmall ops, kernel prices in us (float32 unless noted)\n")
    print("| GPU | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for gpu in ("V100-PCIe", "P100-PCIe", "T4", "A100-SXM4-80GB", "H200"):
        p = load_profile(gpu)
        cells = [p.predict("elementwise", add), p.predict("elementwise", fill),
                 p.predict("conv2d", conv), p.predict("conv2d", dw)]  # fmt: skip
        print(f"| {gpu} | {p.kernel_floor:g} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")


def _zoo() -> None:
    from opsched.cost import apply
    from opsched.zoo.models import build

    gpus = ("H200", "A100-SXM4-80GB")
    print("\nzoo networks, batch 1: summed op time in ms (apply); float16: convolutions priced")
    print("at the launch floor in brackets\n")
    cols = [f"{g} {dt}" for dt in ("float32", "float16") for g in gpus]
    print("| network | convolutions | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 2) + "|")
    for name in ("nasnet_a_mobile", "randwire", "squeezenet1_1", "resnet50"):
        graph, cells = build(name), []
        for dt in ("float32", "float16"):
            for g in gpus:
                ops = apply(graph, g, dt).ops
                cell = f"{sum(o.duration for o in ops) / 1000:.2f}"
                if dt == "float16":
                    floor = load_profile(g).kernel_floor
                    low = sum(o.kind == "conv2d" and o.duration <= floor for o in ops)
                    cell += f" [{low}]"
                cells.append(cell)
        n = sum(o.kind == "conv2d" for o in graph.ops)
        print(f"| {name} | {n} | " + " | ".join(cells) + " |")


def _conv_floors() -> None:
    conv = {"N": 1, "C": 16, "H": 7, "W": 7, "K": 16, "R": 3, "S": 3, "pad_h": 1, "pad_w": 1}
    kinds = ("conv2d", "conv2d_bwd_data", "conv2d_bwd_filter")
    print("\nthe 16-channel 3x3 convolution over 7 x 7 (batch 1) by direction, kernel prices in")
    print("us, float32 / float16; convolution floors forward / backward data / backward filter\n")
    print("| GPU | launch floor | convolution floors | forward | backward data | backward filter |")
    print("|---|---|---|---|---|---|")
    for gpu in ("V100-SXM2", "T4", "A100-SXM4-80GB", "H100-SXM5", "H200", "L4"):
        p = load_profile(gpu)
        floors = " / ".join(f"{getattr(p, 'family_floors', {}).get(k, 0.0):g}" for k in kinds)
        cells = [" / ".join(f"{p.predict(k, conv | {'dtype': dt}):.1f}"
                            for dt in ("float32", "float16")) for k in kinds]  # fmt: skip
        print(f"| {gpu} | {p.kernel_floor:g} | {floors} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

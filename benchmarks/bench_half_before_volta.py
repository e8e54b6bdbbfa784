"""Float16 against float32 prices on GPUs with and without tensor cores.

Before Volta a float16 GEMM or convolution runs FP32 arithmetic on half tensors, so it
should cost about its float32 time (DeepBench's P100: a median 0.8-1.0x per convolution
direction); from Volta on, tensor cores make it several times faster. Prints, per GPU, the
price of an 8192^3 GEMM and the summed price of ResNet-50's convolutions (batch 1, the zoo's
graph) in both dtypes, in kernel time (docs/cost-model.md, fourteenth round).

Run: ``python benchmarks/bench_half_before_volta.py [--gpus P4,P100-PCIe,...]`` (a few
seconds); to see the prices of an earlier version, run it against that version's code
(``git worktree add DIR 62214f6`` for the one before the fourteenth round).
"""

from __future__ import annotations

import argparse

from opsched.cost import apply, load_profile
from opsched.zoo.models import build

GPUS = ("P100-PCIe", "P4", "GTX-1080-Ti", "M40", "V100-PCIe", "T4")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", default=",".join(GPUS), help="comma-separated GPU names")
    a = ap.parse_args()
    g = build("resnet50")
    convs = [op.name for op in g.ops if op.kind == "conv2d"]
    mm = {"M": 8192, "N": 8192, "K": 8192}
    print("| GPU | architecture | GEMM 8192^3 fp32 ms | fp16 ms | fp16 / fp32 | "
          "ResNet-50 convs fp32 ms | fp16 ms | fp16 / fp32 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for gpu in a.gpus.split(","):
        p = load_profile(gpu)
        g32 = p.predict("matmul", mm, method="kernel") / 1e3
        g16 = p.predict("matmul", mm | {"dtype": "float16"}, method="kernel") / 1e3
        c32, c16 = (sum(apply(g, gpu, dt)[n].duration for n in convs) / 1e3
                    for dt in ("float32", "float16"))  # fmt: skip
        print(
            f"| {p.gpu} | {p.spec.arch} | {g32:,.1f} | "
            f"{g16:,.1f} | {g16 / g32:.2f} | {c32:.1f} | {c16:.1f} | {c16 / c32:.2f} |"
        )


if __name__ == "__main__":
    main()

"""What the cost model charges for whole graphs: the zoo's fused networks, and a real trace.

Two tables:

1. zoo networks after the fusion pass, priced with ``opsched.cost.apply`` in float16 on each
   GPU: the total op time, the part spent in ``fused`` ops (priced at their roofline) and
   in ``copy`` ops (concatenations, priced by the unary elementwise curve);
2. the ResNet-50 V100 profiler trace (``datasets/traces``): its convolution-backward ops,
   which ``import-trace`` writes as ``fused`` ops with a backward-data and a
   backward-filter part, priced by their parts and by their roofline, against the measured
   time (in-sample: these layers are in the calibration data).

Reproduce (2 cores, about 30 s):
    python benchmarks/bench_cost_apply.py
"""

from __future__ import annotations

import argparse

import numpy as np

from opsched.cost import apply, load_profile
from opsched.datasets import dataset_path
from opsched.importers.trace import import_trace
from opsched.transforms.fusion import fuse
from opsched.zoo.models import build

MODELS = ("inception_v3", "nasnet_a_mobile", "resnet50", "bert_large_layer")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", nargs="+", default=["A100-SXM4-80GB", "T4"])
    a = ap.parse_args()

    print("\nzoo networks, fused, float16: op time in us\n")
    print("| network | GPU | all ops | fused ops | copy ops |")
    print("|---|---|---|---|---|")
    for name in MODELS:
        g, _ = fuse(build(name))
        for gpu in a.gpus:
            priced = apply(g, gpu, "float16")

            def total(kind: str | None, ops=priced.ops) -> float:
                return sum(op.duration for op in ops if kind is None or op.kind == kind)

            print(f"| {name} | {gpu} | {total(None):.1f} | {total('fused'):.1f} | "
                  f"{total('copy'):.1f} |")  # fmt: skip

    trace = dataset_path("traces") / "resnet50_v100_step.pt.trace.json.gz"
    graph = import_trace(trace).timeline.graph
    prof = load_profile(str(graph.attrs["gpu"]))
    bwd = [op for op in graph.ops if op.kind == "fused" and op.attrs.get("parts")]
    measured = np.array([op.duration for op in bwd])
    by_parts = np.array([prof.predict(op) for op in bwd])
    roofline = np.array([prof.roofline("fused", op.attrs) for op in bwd])
    print(f"\n{trace.name}: {len(bwd)} convolution-backward ops on {prof.gpu}\n")
    print("| priced by | total ms | measured total ms | median error % |")
    print("|---|---|---|---|")
    for label, t in (("parts", by_parts), ("roofline", roofline)):
        ape = np.median(np.abs(t - measured) / measured) * 100
        print(f"| {label} | {t.sum() / 1e3:.1f} | {measured.sum() / 1e3:.1f} | {ape:.1f} |")
    print("\nreproduce: python benchmarks/bench_cost_apply.py --gpus " + " ".join(a.gpus))


if __name__ == "__main__":
    main()

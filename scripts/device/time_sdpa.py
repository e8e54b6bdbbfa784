"""Time PyTorch's fused attention (``scaled_dot_product_attention``, forward) over a grid of
shapes on this machine's GPU, within a time budget, for a fused-attention price.

The cost model prices ``attention`` from unfused parts (two batched GEMMs and a softmax that
write and read the score matrix); on the H200 a cuDNN / flash attention forward of 8 x 16
heads, 512 tokens, d 64 takes 26 us where those parts come to 192 (docs/cost-model.md,
eighth round). Each time is the median replay of a CUDA graph of back-to-back calls
(:func:`opsched.cost.collect_deepbench._time`), with the longest kernel's name beside it.

Made ``datasets/kernel-timings/opsched_h200_sdpa.csv.gz`` (PROVENANCE.md there).

Run: ``python scripts/device/time_sdpa.py OUT.csv [BUDGET_S]``.
"""

from __future__ import annotations

import csv
import itertools
import os
import sys
import time


def main(out: str, budget: float) -> None:
    import torch

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from time_deepbench import _import_opsched_without_extras

    _import_opsched_without_extras()
    from opsched.cost.collect_deepbench import _time

    dev = os.environ.get("OPSCHED_DEVICE", "cuda")  # "cpu": a dry run of the script, float32
    cuda = dev == "cuda"
    name = torch.cuda.get_device_name() if cuda else "cpu"
    source = f"scripts/device/time_sdpa.py: torch {torch.__version__}, CUDA graph replay, median"
    grid = list(itertools.product(("bfloat16", "float16"), (False, True), (1, 8, 32),
                                  (8, 16, 32), (128, 512, 2048), (64, 128)))  # fmt: skip
    sdpa = torch.nn.functional.scaled_dot_product_attention
    t0, n = time.time(), 0
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["gpu", "dtype", "B", "H", "Sq", "Skv", "D", "causal", "time_us", "flops",
                    "bytes_min", "kernel", "source"])  # fmt: skip
        for dt, causal, b, h, s, d in grid:
            if time.time() - t0 > budget:
                break
            try:
                tdt = getattr(torch, dt if cuda else "float32")
                q, k, v = (torch.randn(b, h, s, d, device=dev, dtype=tdt) for _ in range(3))

                def call(q: object = q, k: object = k, v: object = v, c: bool = causal) -> object:
                    return sdpa(q, k, v, is_causal=c)

                with torch.no_grad():
                    us, kernel = _time(torch, call, cuda, 3, 2000.0, 5)
            except Exception as e:  # a shape the backends refuse: keep the others
                print(f"{dt} {causal} {b} {h} {s} {d}: {type(e).__name__}: {e}", flush=True)
                continue
            flops = 4 * b * h * s * s * d // (2 if causal else 1)
            w.writerow([name, dt, b, h, s, s, d, int(causal), round(us, 3), flops,
                        4 * b * h * s * d * 2, kernel, source])  # fmt: skip
            f.flush()
            n += 1
    print(f"{n} of {len(grid)} shapes in {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 90.0)

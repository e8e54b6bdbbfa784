"""Record one profiled training step of two real models on a CUDA GPU (Kineto chrome traces).

- ``resnet50``: torchvision ResNet-50, batch 32, 224 x 224, float32 with PyTorch's default
  math modes (cuDNN convolutions may use TF32), SGD step: the same workload as the V100
  trace in ``datasets/traces``.
- ``transformer``: four ``nn.TransformerEncoderLayer`` (d 1024, 16 heads, feed-forward 4096),
  batch 8 x 512 tokens, bfloat16 autocast, AdamW step: LLM-style GEMMs, attention, norms.

Each: three untimed steps, then profiler schedule wait 1, warm-up 1, active 1, shapes
recorded. The traces check the importer and the cost model against a real run
(``benchmarks/bench_trace_vs_model.py``).

Run: ``python scripts/device/record_model_traces.py OUTDIR [resnet50] [transformer]``.
"""

from __future__ import annotations

import gzip
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule


def resnet50() -> Callable[[], None]:
    import torchvision

    net = torchvision.models.resnet50().cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(32, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (32,), device="cuda")

    def step() -> None:
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def transformer() -> Callable[[], None]:
    layer = nn.TransformerEncoderLayer(1024, 16, 4096, dropout=0.0, batch_first=True)
    net = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
    x = torch.randn(8, 512, 1024, device="cuda")

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = net(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def record(name: str, step: Callable[[], object], out: Path, active: int = 1) -> None:
    """Three untimed steps, then ``active`` profiled ones (after one skipped and one warm-up
    step), written to ``out`` as a gzipped chrome trace."""
    t0 = time.time()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "trace.json"
        with profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
            schedule=schedule(wait=1, warmup=1, active=active),
            on_trace_ready=lambda p: p.export_chrome_trace(str(raw)),
        ) as prof:  # fmt: skip
            for _ in range(2 + active):
                step()
                torch.cuda.synchronize()
                prof.step()
        with raw.open("rb") as f, gzip.GzipFile(out, "wb", mtime=0) as g:
            shutil.copyfileobj(f, g)
    print(f"{name}: wrote {out} ({out.stat().st_size} bytes) in {time.time() - t0:.1f} s")


def main(outdir: str, names: list[str]) -> None:
    gpu = torch.cuda.get_device_name().split()[-1].lower()
    tag = f"torch{torch.__version__.split('+')[0].replace('.', '')}"
    for name in names or ["resnet50", "transformer"]:
        try:
            step = {"resnet50": resnet50, "transformer": transformer}[name]()
            record(name, step, Path(outdir) / f"{name}_{gpu}_{tag}_step.pt.trace.json.gz")
        except Exception as e:  # keep the other model's trace
            print(f"{name}: failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])

"""Record a short PyTorch profiler (Kineto) trace of a small training step on a CUDA GPU.

The step mixes what a real trace of today's PyTorch holds: an eager conv block (conv,
batch norm, pooling), a transformer encoder layer, a ``torch.compile``'d MLP (Triton kernels,
launched through the driver API) and a 2048^3 float32 matmul on a second CUDA stream, with
forward, backward and an SGD step. Profiler schedule: wait 1, warm-up 1, active 2 (steps 2
and 3), shapes recorded. This made ``datasets/traces/h200_torch211_step.pt.trace.json.gz``.

Run: ``python scripts/device/record_trace.py OUT.pt.trace.json.gz`` (needs torch with CUDA;
profiling as in ``record_model_traces.record``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
from record_model_traces import record  # the script's own folder is on sys.path
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(8),
        )  # fmt: skip
        self.proj = nn.Linear(64, 256)
        self.enc = nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True, dropout=0.0)
        self.mlp = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256))
        self.mlp_fn: nn.Module = self.mlp
        self.head = nn.Linear(256, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x).flatten(2).transpose(1, 2)  # B, 64 tokens, 64 channels
        h = self.enc(self.proj(h))
        h = h + self.mlp_fn(h)
        return self.head(h.mean(1))


def main(out: str) -> None:
    torch.manual_seed(0)
    net = Net().to("cuda")
    t0 = time.time()
    try:
        net.mlp_fn = torch.compile(net.mlp)  # type: ignore[assignment]
        net(torch.randn(8, 3, 32, 32, device="cuda")).sum().backward()
        torch.cuda.synchronize()
        print(f"MLP compiled in {time.time() - t0:.1f} s")
    except Exception as e:  # a machine without a working Triton: record the eager MLP
        print("torch.compile failed, MLP stays eager:", type(e).__name__)
        net.mlp_fn = net.mlp
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    x = torch.randn(16, 3, 32, 32, device="cuda")
    y = torch.randint(0, 10, (16,), device="cuda")
    side = torch.cuda.Stream()
    a = torch.randn(2048, 2048, device="cuda")

    def step() -> torch.Tensor:
        with torch.cuda.stream(side):
            c = a @ a  # overlaps the main stream's work
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.current_stream().wait_stream(side)
        return c

    record("small", step, Path(out), active=2)


if __name__ == "__main__":
    main(sys.argv[1])

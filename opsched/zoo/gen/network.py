"""Random networks made of typed blocks, with shapes from :mod:`opsched.ir.kinds`.

:func:`random_network` strings together the blocks that fusion and memory-aware scheduling
care about: convolution blocks (conv2d -> batchnorm -> relu), residual blocks (two of them and
an add), GEMM blocks (matmul -> bias add -> gelu), elementwise chains and multi-branch blocks
(parallel conv blocks, a concat and a 1x1 conv). Every activation has ``N x C x H x W``
elements (GEMMs see it as an ``(N H W) x C`` matrix), so each op's ``kind`` and ``attrs``
follow the kinds vocabulary exactly and ``output_bytes`` is the real tensor size.

Durations come from a nominal roofline, ``max(flops / 100 TFLOP/s, bytes / 1.5 TB/s)`` in
microseconds plus a 2 us launch overhead: a stand-in so that the graph can be scheduled at
once; the cost model (``opsched.cost``) reprices ops for a real GPU.
"""

from __future__ import annotations

from typing import Any

from opsched.errors import ProblemError
from opsched.ir import kinds
from opsched.ir.graph import Op, OpGraph
from opsched.zoo.gen._build import check_count, rng_for

__all__ = ["NOMINAL_BYTES_PER_S", "NOMINAL_FLOPS", "nominal_duration_us", "random_network"]

#: Nominal machine of the stand-in durations.
NOMINAL_FLOPS = 100e12
NOMINAL_BYTES_PER_S = 1.5e12
LAUNCH_US = 2.0


def nominal_duration_us(kind: str, attrs: dict[str, Any]) -> float:
    """Roofline time of one op on the nominal machine, in microseconds (2 decimals).

    >>> nominal_duration_us("elementwise", {"numel": 1_000_000, "fn": "relu"})
    7.33
    """
    t = max(
        kinds.flops(kind, attrs) / NOMINAL_FLOPS, kinds.bytes_min(kind, attrs) / NOMINAL_BYTES_PER_S
    )
    return round(t * 1e6 + LAUNCH_US, 2)


class _Builder:
    def __init__(self, n: int, c: int, hw: int, dtype: str) -> None:
        self.n, self.c, self.hw, self.dtype = n, c, hw, dtype
        self.numel = n * c * hw * hw
        self.ops: list[Op] = []

    def add(self, name: str, kind: str, deps: list[str], **attrs: Any) -> str:
        attrs["dtype"] = self.dtype
        out = kinds.output_numel(kind, attrs) * kinds.dtype_bytes(attrs)
        self.ops.append(
            Op(
                name,
                nominal_duration_us(kind, attrs),
                deps=tuple(deps),
                output_bytes=out,
                kind=kind,
                attrs=attrs,
            )
        )
        return name

    def conv(self, name: str, x: str, c_in: int | None = None, r: int = 3) -> str:
        return self.add(
            name, "conv2d", [x], N=self.n, C=c_in or self.c, H=self.hw, W=self.hw,
            K=self.c, R=r, S=r, pad_h=r // 2, pad_w=r // 2,
        )  # fmt: skip

    def ew(self, name: str, deps: list[str], fn: str) -> str:
        return self.add(name, "elementwise", deps, numel=self.numel, arity=len(deps), fn=fn)

    def bn(self, name: str, x: str) -> str:
        return self.add(name, "batchnorm", [x], numel=self.numel, channels=self.c)

    def gemm(self, name: str, x: str) -> str:
        m = self.n * self.hw * self.hw
        return self.add(name, "matmul", [x], M=m, N=self.c, K=self.c)


def random_network(
    ops: int,
    *,
    batch: int = 1,
    channels: int = 64,
    size: int = 28,
    dtype: str = "float32",
    seed: int = 0,
    name: str | None = None,
) -> OpGraph:
    """A random network of exactly ``ops`` ops with kinds, shapes, sizes and durations.

    Op ``input`` is the network input; blocks are drawn at random (a block that does not fit
    in the ops left is replaced by an elementwise chain) and the last op is the graph output.

    Parameters
    ----------
    ops
        Number of ops (>= 1).
    batch, channels, size
        Activation shape ``batch x channels x size x size``.
    dtype
        Element type of every tensor (a key of :data:`opsched.ir.kinds.DTYPE_BYTES`).
    seed
        Equal arguments give equal graphs.

    Examples
    --------
    >>> g = random_network(40, seed=1)
    >>> g.num_ops, g.ops[0].kind, g.ops[-1].output
    (40, 'input', True)
    >>> {op.kind for op in g.ops} <= set(kinds.KINDS)
    True
    """
    n_ops = check_count(ops, "ops")
    for v, what in ((batch, "batch"), (channels, "channels"), (size, "size")):
        check_count(v, what)
    if dtype not in kinds.DTYPE_BYTES:
        raise ProblemError(f"unknown dtype {dtype!r}; known: {', '.join(kinds.DTYPE_BYTES)}")
    rng = rng_for(seed)
    b = _Builder(batch, channels, size, dtype)
    x = b.add("input", "input", [], numel=b.numel)
    blk = 0
    while len(b.ops) < n_ops:
        left = n_ops - len(b.ops)
        blk += 1
        choice = int(rng.integers(0, 5))
        p = f"b{blk}_"
        if choice == 0 and left >= 3:  # conv block
            x = b.ew(p + "relu", [b.bn(p + "bn", b.conv(p + "conv", x))], "relu")
        elif choice == 1 and left >= 7:  # residual block
            y = b.ew(p + "relu1", [b.bn(p + "bn1", b.conv(p + "conv1", x))], "relu")
            y = b.bn(p + "bn2", b.conv(p + "conv2", y))
            x = b.ew(p + "relu2", [b.ew(p + "add", [y, x], "add")], "relu")
        elif choice == 2 and left >= 3:  # GEMM + bias + activation
            x = b.ew(p + "gelu", [b.ew(p + "bias", [b.gemm(p + "gemm", x)], "add")], "gelu")
        elif choice == 3 and left >= 8:  # multi-branch block
            width = int(rng.integers(2, min(4, (left - 2) // 3) + 1))
            outs = []
            for i in range(width):
                c = b.conv(f"{p}br{i}_conv", x, r=1 + 2 * (i % 2))
                outs.append(b.ew(f"{p}br{i}_relu", [b.bn(f"{p}br{i}_bn", c)], "relu"))
            cat = b.add(p + "concat", "copy", outs, numel=b.numel * width)
            x = b.conv(p + "proj", cat, c_in=channels * width, r=1)
        else:  # elementwise chain
            k = min(left, int(rng.integers(2, 5)))
            for i in range(k):
                x = b.ew(f"{p}ew{i}", [x], ("mul", "add", "tanh", "sigmoid")[i % 4])
    last = b.ops[-1]
    b.ops[-1] = Op(
        last.name, last.duration, deps=last.deps, output_bytes=last.output_bytes,
        kind=last.kind, attrs=last.attrs, output=True,
    )  # fmt: skip
    return OpGraph(
        tuple(b.ops),
        name=name or f"network-{n_ops}-s{seed}",
        attrs={"generator": "random_network", "shape": [batch, channels, size, size]},
    )

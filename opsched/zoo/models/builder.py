"""A small shape-tracking builder that the zoo networks are written with.

Each method adds one op of the :mod:`opsched.ir.kinds` vocabulary, works out its output shape
from the input shapes, and returns a :class:`Tensor` handle (the producing op's name and the
shape). Every op gets:

- ``kind`` and the kind's shape attrs, plus ``dtype``;
- ``attrs["flops"]`` and ``attrs["bytes"]`` from :func:`opsched.ir.kinds.flops` and
  :func:`opsched.ir.kinds.bytes_min` (for the build dtype), ``attrs["params"]`` (the weights
  the op owns: convolution and linear weights and biases, batch-norm and layer-norm scale and
  shift) and ``attrs["out_shape"]``;
- ``output_bytes = output_numel x dtype size``, except a ``view``'s: 0, since it aliases its
  input's memory. Each reader of a view also depends on the op(s) owning that memory, so
  under the liveness rule the memory stays allocated until the view's last reader ends (as
  the importers do, docs/importers.md); a view that is a graph output keeps its owners to the
  end as outputs too;
- a placeholder ``duration`` of ``max(1, ceil(flops / FLOPS_PER_TICK))`` integer ticks: time
  proportional to FLOPs (one tick per MFLOP, i.e. microseconds at 1 TFLOP/s), never zero. Real
  durations (a roofline on a given GPU) are the cost model's job (``opsched.cost.apply``).

Weights are not ops: their total size is the graph's ``persistent_bytes``.

Examples
--------
>>> nb = NetBuilder("tiny")
>>> x = nb.input("x", (1, 3, 8, 8))
>>> y = nb.conv(x, 4, 3, pad=1, name="conv")
>>> y = nb.act(nb.bn(y, name="bn"), name="relu")
>>> y.shape, nb.params
((1, 4, 8, 8), 116)
>>> g = nb.build()
>>> [op.kind for op in g.ops], g.ops[1].output_bytes, g.ops[1].attrs["flops"]
(['input', 'conv2d', 'batchnorm', 'elementwise'], 1024, 13824)
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from opsched.errors import GraphError, ProblemError
from opsched.ir import kinds
from opsched.ir.graph import Op, OpGraph

__all__ = ["FLOPS_PER_TICK", "NetBuilder", "Tensor"]

#: FLOPs per tick of the placeholder durations (one tick = 1 us at 1 TFLOP/s).
FLOPS_PER_TICK = 10**6


@dataclass(frozen=True)
class Tensor:
    """A value of the network: the op that produces it and its shape (NCHW for images).

    ``owners``: for a view, the ops whose memory it aliases (empty for a tensor of its own).
    """

    op: str
    shape: tuple[int, ...]
    owners: tuple[str, ...] = ()

    @property
    def numel(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)


def _pair(v: int | tuple[int, int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else (int(v[0]), int(v[1]))


class NetBuilder:
    """Collects ops in program order and turns them into an :class:`OpGraph`.

    Parameters
    ----------
    name
        The graph name.
    dtype
        Element type of every tensor (a key of :data:`opsched.ir.kinds.DTYPE_BYTES`).
    """

    def __init__(self, name: str, *, dtype: str = "float32") -> None:
        if dtype not in kinds.DTYPE_BYTES:
            raise ProblemError(f"unknown dtype {dtype!r}; known: {', '.join(kinds.DTYPE_BYTES)}")
        self.name = name
        self.dtype = dtype
        self.elem = kinds.DTYPE_BYTES[dtype]
        self.params = 0
        self._ops: list[Op] = []
        self._names: set[str] = set()
        self._prefix: list[str] = []
        self._counter = 0
        self._aliases: dict[str, tuple[str, ...]] = {}  # view -> the ops owning its memory

    # ------------------------------------------------------------------ naming
    @contextmanager
    def scope(self, name: str) -> Iterator[None]:
        """Prefix the names of the ops added inside the ``with`` block by ``name.``."""
        self._prefix.append(name)
        try:
            yield
        finally:
            self._prefix.pop()

    def _full(self, name: str | None, kind: str) -> str:
        if name is None:
            self._counter += 1
            name = f"{kind}{self._counter}"
        full = ".".join([*self._prefix, name])
        if full in self._names:
            raise GraphError(f"duplicate op name {full!r} in model {self.name!r}")
        self._names.add(full)
        return full

    # ------------------------------------------------------------------ core
    def emit(
        self,
        kind: str,
        inputs: Sequence[Tensor],
        attrs: dict[str, Any],
        out_shape: tuple[int, ...],
        *,
        params: int = 0,
        name: str | None = None,
    ) -> Tensor:
        """Add one op of ``kind`` reading ``inputs``; the other methods all end here.

        The output size from :func:`opsched.ir.kinds.output_numel` must equal the product of
        ``out_shape`` (a check that the shape bookkeeping and the vocabulary agree).
        """
        full = self._full(name, kind)
        attrs = {**attrs, "dtype": self.dtype}
        try:
            numel = kinds.output_numel(kind, attrs)
        except GraphError as e:
            raise GraphError(e.message, f"model {self.name!r}: op {full!r}") from None
        if numel != math.prod(out_shape):
            raise GraphError(
                f"{kind} output has {numel} elements but shape {out_shape} was expected",
                f"op {full!r}",
            )
        fl = kinds.flops(kind, attrs)
        by = kinds.bytes_min(kind, attrs)
        attrs.update(flops=fl, bytes=by, params=params, out_shape=list(out_shape))
        # a reader of a view also reads the memory the view aliases
        deps = tuple(dict.fromkeys(d for t in inputs for d in (t.op, *t.owners)))
        self._ops.append(
            Op(
                name=full,
                duration=max(1, math.ceil(fl / FLOPS_PER_TICK)),
                deps=deps,
                output_bytes=0 if kind == "view" else numel * self.elem,
                kind=kind,
                attrs=attrs,
            )
        )
        self.params += params
        if kind == "view":
            owners = tuple(dict.fromkeys(o for t in inputs for o in (t.owners or (t.op,))))
            self._aliases[full] = owners
            return Tensor(full, tuple(out_shape), owners)
        return Tensor(full, tuple(out_shape))

    def input(self, name: str, shape: tuple[int, ...]) -> Tensor:
        """A graph input (kind ``input``) of ``shape``."""
        return self.emit("input", [], {"numel": math.prod(shape)}, shape, name=name)

    # ------------------------------------------------------------------ convolutions
    def conv(
        self,
        x: Tensor,
        out_ch: int,
        k: int | tuple[int, int],
        *,
        stride: int | tuple[int, int] = 1,
        pad: int | tuple[int, int] = 0,
        groups: int = 1,
        bias: bool = False,
        name: str | None = None,
    ) -> Tensor:
        """2-D convolution (``conv2d``) of an NCHW tensor; ``groups = C`` is depthwise."""
        n, c, h, w = x.shape
        r, s = _pair(k)
        sh, sw = _pair(stride)
        ph, pw = _pair(pad)
        if c % groups or out_ch % groups:
            raise GraphError(f"groups={groups} does not divide {c} -> {out_ch} channels")
        attrs: dict[str, Any] = {
            "N": n,
            "C": c,
            "H": h,
            "W": w,
            "K": out_ch,
            "R": r,
            "S": s,
            "groups": groups,
        }
        attrs |= {"stride_h": sh, "stride_w": sw, "pad_h": ph, "pad_w": pw, "bias": bias}
        p, q = kinds.conv_out_hw(attrs)
        params = out_ch * (c // groups) * r * s + (out_ch if bias else 0)
        return self.emit("conv2d", [x], attrs, (n, out_ch, p, q), params=params, name=name)

    def conv_transpose(
        self,
        x: Tensor,
        out_ch: int,
        k: int,
        *,
        stride: int,
        bias: bool = True,
        name: str | None = None,
    ) -> Tensor:
        """Transposed convolution (U-Net's up-conv) as ``conv2d_bwd_data``.

        A transposed convolution is the data gradient of the forward convolution that maps
        its output back to its input, so it is written as that forward convolution's
        ``conv2d_bwd_data`` (``C`` = our output channels, ``K`` = our input channels); the
        FLOPs, bytes and output size of the vocabulary are then exactly the transposed ones.
        """
        n, c_in, h, w = x.shape
        ho, wo = (h - 1) * stride + k, (w - 1) * stride + k
        attrs: dict[str, Any] = {
            "N": n,
            "C": out_ch,
            "H": ho,
            "W": wo,
            "K": c_in,
            "R": k,
            "S": k,
            "bias": bias,
        }
        attrs |= {"stride_h": stride, "stride_w": stride, "fn": "conv_transpose"}
        params = c_in * out_ch * k * k + (out_ch if bias else 0)
        return self.emit(
            "conv2d_bwd_data", [x], attrs, (n, out_ch, ho, wo), params=params, name=name
        )

    def conv_bn(
        self,
        x: Tensor,
        out_ch: int,
        k: int | tuple[int, int],
        name: str,
        *,
        stride: int | tuple[int, int] = 1,
        pad: int | tuple[int, int] = 0,
        act: str | None = "relu",
    ) -> Tensor:
        """Convolution, batch norm and (unless ``act`` is None) an activation: 3 ops.

        They are named ``name.conv``, ``name.bn`` and ``name.relu`` (or ``name.<act>``).
        """
        with self.scope(name):
            y = self.bn(self.conv(x, out_ch, k, stride=stride, pad=pad, name="conv"), name="bn")
            return self.act(y, act, name=act) if act else y

    def bn(self, x: Tensor, *, name: str | None = None) -> Tensor:
        """Batch normalisation (inference form) over the channels of ``x``."""
        c = x.shape[1]
        return self.emit(
            "batchnorm", [x], {"numel": x.numel, "channels": c}, x.shape, params=2 * c, name=name
        )

    def pool(
        self,
        x: Tensor,
        k: int | tuple[int, int],
        *,
        stride: int | tuple[int, int] = 1,
        pad: int | tuple[int, int] = 0,
        mode: str = "max",
        name: str | None = None,
    ) -> Tensor:
        """Max or average pooling with a ``k x k`` window."""
        n, c, h, w = x.shape
        r, s = _pair(k)
        sh, sw = _pair(stride)
        ph, pw = _pair(pad)
        attrs: dict[str, Any] = {"N": n, "C": c, "H": h, "W": w, "R": r, "S": s, "mode": mode}
        attrs |= {"stride_h": sh, "stride_w": sw, "pad_h": ph, "pad_w": pw}
        p, q = kinds.conv_out_hw(attrs, "pool")
        return self.emit("pool", [x], attrs, (n, c, p, q), name=name)

    def global_pool(self, x: Tensor, *, mode: str = "avg", name: str | None = None) -> Tensor:
        """Global pooling: ``N x C x H x W`` to ``N x C x 1 x 1``."""
        return self.pool(x, (x.shape[2], x.shape[3]), mode=mode, name=name)

    # ------------------------------------------------------------------ elementwise
    def act(self, x: Tensor, fn: str = "relu", *, name: str | None = None) -> Tensor:
        """A unary elementwise op (activation, scaling, masking) named by ``fn``."""
        return self.emit("elementwise", [x], {"numel": x.numel, "fn": fn}, x.shape, name=name)

    def add(
        self, xs: Sequence[Tensor], fn: str = "add", *, params: int = 0, name: str | None = None
    ) -> Tensor:
        """An n-ary elementwise op over tensors of one shape (sum, average, weighted sum)."""
        shape = xs[0].shape
        if any(t.shape != shape for t in xs):
            raise GraphError(f"{fn} of tensors of different shapes {[t.shape for t in xs]}")
        attrs = {"numel": xs[0].numel, "arity": len(xs), "fn": fn}
        return self.emit("elementwise", xs, attrs, shape, params=params, name=name)

    # ------------------------------------------------------------------ data movement
    def concat(self, xs: Sequence[Tensor], axis: int = 1, *, name: str | None = None) -> Tensor:
        """Concatenation along ``axis`` (a ``copy`` of every input into the result)."""
        first = xs[0].shape
        for t in xs:
            if len(t.shape) != len(first) or any(
                a != b for i, (a, b) in enumerate(zip(t.shape, first, strict=True)) if i != axis
            ):
                raise GraphError(f"concat of shapes {[t.shape for t in xs]} along axis {axis}")
        shape = list(first)
        shape[axis] = sum(t.shape[axis] for t in xs)
        numel = math.prod(shape)
        return self.emit("copy", xs, {"numel": numel, "fn": "concat"}, tuple(shape), name=name)

    def copy(
        self, x: Tensor, shape: tuple[int, ...], fn: str = "transpose", *, name: str | None = None
    ) -> Tensor:
        """A layout change that moves every element (transpose + contiguous)."""
        if math.prod(shape) != x.numel:
            raise GraphError(f"{fn}: cannot lay {x.shape} out as {shape}")
        return self.emit("copy", [x], {"numel": x.numel, "fn": fn}, shape, name=name)

    def view(
        self, x: Tensor, shape: tuple[int, ...], fn: str = "reshape", *, name: str | None = None
    ) -> Tensor:
        """A reshape or slice with no kernel (``view``); a slice may only shrink the tensor."""
        numel = math.prod(shape)
        if numel > x.numel or (fn == "reshape" and numel != x.numel):
            raise GraphError(f"{fn}: cannot view {x.shape} as {shape}")
        return self.emit("view", [x], {"numel": numel, "fn": fn}, shape, name=name)

    # ------------------------------------------------------------------ dense layers
    def linear(
        self, x: Tensor, out_features: int, *, bias: bool = True, name: str | None = None
    ) -> Tensor:
        """A fully connected layer over the last axis: ``matmul`` with ``M`` = the other axes."""
        k = x.shape[-1]
        m = x.numel // k
        attrs = {"M": m, "N": out_features, "K": k, "bias": bias}
        params = k * out_features + (out_features if bias else 0)
        shape = (*x.shape[:-1], out_features)
        return self.emit("matmul", [x], attrs, shape, params=params, name=name)

    def bmm(
        self,
        a: Tensor,
        b: Tensor,
        *,
        batch: int,
        m: int,
        n: int,
        k: int,
        out_shape: tuple[int, ...],
        name: str | None = None,
    ) -> Tensor:
        """Batched matrix product of two activations (attention scores and context)."""
        if a.numel != batch * m * k or b.numel != batch * k * n:
            raise GraphError(f"bmm {batch}x[{m}x{k}]@[{k}x{n}] of {a.shape} and {b.shape}")
        attrs = {"B": batch, "M": m, "N": n, "K": k}
        return self.emit("matmul", [a, b], attrs, out_shape, name=name)

    def softmax(self, x: Tensor, *, name: str | None = None) -> Tensor:
        """Softmax along the last axis."""
        cols = x.shape[-1]
        attrs = {"rows": x.numel // cols, "cols": cols}
        return self.emit("softmax", [x], attrs, x.shape, name=name)

    def layernorm(self, x: Tensor, *, name: str | None = None) -> Tensor:
        """Layer normalisation along the last axis, with scale and shift."""
        cols = x.shape[-1]
        attrs = {"rows": x.numel // cols, "cols": cols}
        return self.emit("layernorm", [x], attrs, x.shape, params=2 * cols, name=name)

    # ------------------------------------------------------------------ result
    def build(self, attrs: dict[str, Any] | None = None) -> OpGraph:
        """The graph: ops in program order, sinks marked as outputs, weights as persistent.

        Raises
        ------
        GraphError
            If nothing was added.
        """
        if not self._ops:
            raise GraphError(f"model {self.name!r} has no ops")
        consumed = {d for op in self._ops for d in op.deps}
        outputs = {op.name for op in self._ops if op.name not in consumed}
        for view in list(outputs):  # the memory an output view aliases lives to the end
            outputs.update(self._aliases.get(view, ()))
        ops = [replace(op, output=True) if op.name in outputs else op for op in self._ops]
        meta = {
            "params": self.params,
            "flops": sum(op.attrs["flops"] for op in ops),
            "dtype": self.dtype,
            "duration_unit": f"placeholder: 1 tick per {FLOPS_PER_TICK} FLOPs, at least 1",
            **(attrs or {}),
        }
        return OpGraph(
            tuple(ops), name=self.name, persistent_bytes=self.params * self.elem, attrs=meta
        )

"""Shared machinery of the tensor-graph importers (torch, ONNX, XLA HLO).

Each importer walks its source graph in program order and hands every operator to a
:class:`GraphBuilder` as a kind of :mod:`opsched.ir.kinds` with its shape attrs. The builder
computes ``flops``, ``bytes`` and ``output_bytes`` from them, turns data flow into ``deps``
and keeps memory right for aliases:

- a *view* (reshape, slice, transpose of strides, a tuple element) allocates nothing: its op
  has ``output_bytes`` 0, and every consumer of the view also depends on the ops whose
  memory the view lives in, so that memory stays allocated until the view's last reader ends;
- an in-place op writes into its first input: no new allocation either;
- tensors that exist before the graph runs (weights, constants) are ``persistent_bytes``.

Examples
--------
>>> b = GraphBuilder("tiny", where="<test>", source="test")
>>> x = TensorMeta((4, 8))
>>> b.add_input("x", "x", x)
'x'
>>> b.add_op("mm", "matmul", {"M": 4, "N": 2, "K": 8}, ["x"], [TensorMeta((4, 2))], key="mm")
'mm'
>>> b.mark_outputs(["mm"])
>>> g = b.build()
>>> g["mm"].deps, g["mm"].output_bytes, g["mm"].attrs["flops"]
(('x',), 32, 128)
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opsched.errors import GraphError, InputError
from opsched.ir import kinds
from opsched.ir.graph import MAX_SIZE, Op, OpGraph

__all__ = [
    "ATTENTION_CAUSAL_ARG",
    "GraphBuilder",
    "ImporterWarning",
    "TensorMeta",
    "causal_flag",
    "dtype_name",
    "numel",
]

#: ATen attention ops -> (position, name) of the argument that makes them causal: PyTorch's
#: ``is_causal`` (query ``i`` sees keys ``0..i``), or ``_efficient_attention_forward``'s
#: ``custom_mask_type``, whose 1 is that same mask (:func:`causal_flag`).
ATTENTION_CAUSAL_ARG: Mapping[str, tuple[int, str]] = {
    "scaled_dot_product_attention": (5, "is_causal"),
    "_scaled_dot_product_flash_attention": (4, "is_causal"),
    "_scaled_dot_product_flash_attention_for_cpu": (4, "is_causal"),
    "_scaled_dot_product_efficient_attention": (6, "is_causal"),
    "_scaled_dot_product_cudnn_attention": (6, "is_causal"),
    "_cudnn_attention_forward": (10, "is_causal"),
    "_flash_attention_forward": (8, "is_causal"),
    "_efficient_attention_forward": (9, "custom_mask_type"),
}


def causal_flag(value: Any) -> int:
    """1 when an attention op's causal argument (:data:`ATTENTION_CAUSAL_ARG`) asks for the
    top-left causal mask (``True``, or mask type 1), else 0 (also when it is unknown).

    >>> causal_flag(True), causal_flag(1), causal_flag(False), causal_flag(2), causal_flag(None)
    (1, 1, 0, 0, 0)
    """
    return int(value is True or (isinstance(value, int) and not isinstance(value, bool)
                                 and value == 1))  # fmt: skip


#: Element width -> the dtype name of :data:`opsched.ir.kinds.DTYPE_BYTES` used for dtypes
#: neither a key there nor an alias below (quantised types, ...): same width, so bytes stay
#: right.
_BY_WIDTH = {1: "int8", 2: "float16", 4: "float32", 8: "float64", 16: "complex128"}

_ALIASES = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "long": "int64",
    "int": "int32",
    "f32": "float32",
    "f64": "float64",
    "f16": "float16",
    "bf16": "bfloat16",
    "s64": "int64",
    "s32": "int32",
    "s8": "int8",
    "pred": "bool",
    "u8": "int8",
    "uint8": "int8",
    "tf32": "tf32",
    # unsigned integers under their signed twin's label (the same bytes, the same pricing);
    # they had fallen back to the float of their width (uint16 -> float16, priced as half)
    "s16": "int16",
    "u16": "int16",
    "uint16": "int16",
    "short": "int16",
    "u32": "int32",
    "uint32": "int32",
    "u64": "int64",
    "uint64": "int64",
    # complex numbers: complex128 had been labelled float64 and counted at 8 bytes, not 16
    "c64": "complex64",
    "cfloat": "complex64",
    "c128": "complex128",
    "cdouble": "complex128",
}


class ImporterWarning(UserWarning):
    """Warned when an importer maps source ops it does not know onto a generic kind."""


def dtype_name(name: str, width: int | None = None) -> str:
    """Normalise a dtype spelling to a key of :data:`~opsched.ir.kinds.DTYPE_BYTES`.

    Unknown names fall back to the known dtype of the same ``width`` in bytes.

    Examples
    --------
    >>> dtype_name("torch.float16"), dtype_name("f32"), dtype_name("uint16", 2)
    ('float16', 'float32', 'int16')
    >>> dtype_name("torch.complex128", 16), dtype_name("qint9", 2)
    ('complex128', 'float16')
    """
    n = name.removeprefix("torch.").lower()
    n = _ALIASES.get(n, n)
    if n in kinds.DTYPE_BYTES:
        return n
    if n.startswith("float8") or n.startswith("f8"):
        return "float8"
    return _BY_WIDTH.get(width or 4, "float32")


def numel(shape: Iterable[int]) -> int:
    """Number of elements of a shape (1 for a scalar).

    >>> numel((2, 3, 4)), numel(())
    (24, 1)
    """
    return math.prod(int(d) for d in shape)


@dataclass(frozen=True)
class TensorMeta:
    """Shape and dtype of one tensor value (dtype normalised by :func:`dtype_name`)."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    contiguous: bool = True  # False: a strided view (a reshape of it must copy)
    #: bits per element of a packed sub-byte type (ONNX int4 / uint4 / float4, XLA's ``E(4)``
    #: layouts), stored two to a byte under the same-width label ``int8``; 0: whole bytes
    bits: int = 0

    @property
    def numel(self) -> int:
        """Number of elements."""
        return numel(self.shape)

    @property
    def nbytes(self) -> int:
        """Size in bytes (a packed type rounds its last byte up).

        >>> TensorMeta((3, 5), "int8").nbytes, TensorMeta((3, 5), "int8", bits=4).nbytes
        (15, 8)
        """
        if self.bits:
            return -(-self.numel * self.bits // 8)
        return self.numel * kinds.DTYPE_BYTES[self.dtype]

    @property
    def is_float(self) -> bool:
        """True for floating-point dtypes."""
        return self.dtype.startswith(("float", "bfloat", "tf"))


@dataclass
class _Value:
    producer: str | None  # op computing it; None for a persistent tensor
    roots: frozenset[str]  # ops whose output memory holds it


@dataclass
class GraphBuilder:
    """Accumulates ops in program order and builds the :class:`~opsched.ir.OpGraph`.

    Parameters
    ----------
    name
        Graph name.
    where
        Where the graph came from, prefixed to every error (a file name).
    source
        ``graph.attrs["source"]`` (``"torch"``, ``"onnx"``, ``"hlo"``).
    dtype
        Optional dtype override for every floating-point tensor (model a float32 capture at
        float16, say).
    """

    name: str
    where: str
    source: str
    dtype: str | None = None
    persistent_bytes: int = 0
    attrs: dict[str, Any] = field(default_factory=dict)
    _ops: dict[str, dict[str, Any]] = field(default_factory=dict)
    _values: dict[Hashable, _Value] = field(default_factory=dict)
    _unmapped: Counter[str] = field(default_factory=Counter)
    _last_roots: frozenset[str] = frozenset()
    # per memory (the op owning it): the in-place op that last wrote it, and the ops that
    # read it since; a later reader must follow that write, and a write all those reads
    _writer: dict[str, str] = field(default_factory=dict)
    _readers: dict[str, list[str]] = field(default_factory=dict)

    # ------------------------------------------------------------------ tensors
    def meta(
        self, shape: Iterable[int], dtype: str, contiguous: bool = True, bits: int = 0
    ) -> TensorMeta:
        """A :class:`TensorMeta`, with the builder's dtype override applied to floats."""
        t = TensorMeta(tuple(int(d) for d in shape), dtype, contiguous, bits)
        if self.dtype is not None and t.is_float:
            t = TensorMeta(t.shape, self.dtype, contiguous)
        return t

    def add_persistent(self, key: Hashable, nbytes: int) -> None:
        """Register a tensor that exists before the graph runs (a weight or a constant)."""
        self.persistent_bytes += int(nbytes)
        self._values[key] = _Value(None, frozenset())

    def alias(self, key: Hashable, of: Hashable) -> None:
        """Make ``key`` another name of the value ``of`` (a tuple element, an identity)."""
        self._values[key] = self.value(of)

    def group(self, key: Hashable, of: Iterable[Hashable]) -> None:
        """Make ``key`` a value made of the values ``of`` without a kernel of its own (an HLO
        tuple): a reader of it depends on all of them and keeps all their memory alive, and
        marking it an output marks them all."""
        held: set[str] = set()
        for k in of:
            v = self.value(k)
            held.update(v.roots)
            if v.producer is not None:
                held.add(v.producer)
        self._values[key] = _Value(None, frozenset(held))

    def value(self, key: Hashable) -> _Value:
        """The value registered under ``key``; an unknown key is a malformed source graph."""
        try:
            return self._values[key]
        except KeyError:
            raise InputError(f"value {key!s} is used before it is defined", self.where) from None

    def has(self, key: Hashable) -> bool:
        """True when ``key`` names a registered value."""
        return key in self._values

    def unmapped(self, source_op: str) -> None:
        """Count one source op mapped onto a generic kind (listed in a warning by build)."""
        self._unmapped[source_op] += 1

    # ------------------------------------------------------------------ ops
    def _unique(self, name: str) -> str:
        base = name or "op"
        out, k = base, 1
        while out in self._ops:
            k += 1
            out = f"{base}_{k}"
        return out

    def add_input(self, name: str, key: Hashable, t: TensorMeta) -> str:
        """Add a graph input (kind ``input``, no compute) whose tensor is ``t``."""
        return self.add_op(name, "input", {"numel": t.numel}, [], [t], key=key)

    def add_op(
        self,
        name: str,
        kind: str,
        attrs: Mapping[str, Any],
        inputs: Sequence[Hashable],
        outputs: Sequence[TensorMeta],
        *,
        key: Hashable | None = None,
        aliasing: bool = False,
        inplace: bool = False,
        after: Sequence[Hashable] = (),
    ) -> str:
        """Add one op; returns its (unique) name.

        ``inputs`` are value keys read by the op; ``outputs`` the metas of what it produces.
        ``key`` registers the result as a value (``None``: the caller registers outputs
        itself with :meth:`alias` / :meth:`register`). ``aliasing`` (a view) and ``inplace``
        (writes into ``inputs[0]``) ops allocate nothing. ``after`` are values whose ops must
        finish first though their data is not read (control dependencies): a dep on each
        producer, with no memory kept alive for this op.
        """
        op_name = self._unique(name)
        deps: dict[str, None] = {}
        roots: set[str] = set()
        read: set[str] = set()  # the memory this op reads
        for k in inputs:
            v = self.value(k)
            if v.producer is not None:
                deps[v.producer] = None
            for r in sorted(v.roots):  # sorted: the same deps on every run
                deps[r] = None
            read |= v.roots
        for r in sorted(read):  # a view taken before an in-place write reads what it wrote
            if r in self._writer:
                deps[self._writer[r]] = None
        written = self.value(inputs[0]).roots if inplace and inputs else frozenset()
        for r in sorted(written):  # and the write waits for every read of the old data
            deps.update(dict.fromkeys(self._readers.get(r, ())))
        for k in after:
            v = self.value(k)
            for r in (v.producer,) if v.producer is not None else sorted(v.roots):
                deps[r] = None
        a = dict(attrs)
        if "dtype" not in a:
            a["dtype"] = _op_dtype(outputs, self.dtype)
        a.setdefault("shape", list(outputs[0].shape) if outputs else [])
        if len(outputs) > 1:
            a["out_shapes"] = [list(t.shape) for t in outputs]
        try:
            f, b = kinds.flops(kind, a), kinds.bytes_min(kind, a)
        except GraphError as e:
            raise InputError(f"op {op_name!r}: {e}", self.where) from None
        a["flops"], a["bytes"] = min(f, MAX_SIZE), min(b, MAX_SIZE)
        shares = aliasing or inplace
        if inplace:  # writes into memory it does not own: opsched.cost.apply keeps it at 0
            a["aliases"] = True
        out_bytes = 0 if shares else sum(t.nbytes for t in outputs)
        if shares and inputs:
            roots = set(self.value(inputs[0]).roots)
        if not shares or not roots:
            roots = {op_name} if out_bytes else set()
        if out_bytes > MAX_SIZE:  # a clamp would price and count a tensor it is not
            raise InputError(
                f"op {op_name!r}: its output takes {out_bytes:.3g} bytes, more than 2^62",
                self.where,
            )
        self._ops[op_name] = {
            "name": op_name,
            "kind": kind,
            "deps": tuple(deps),
            "output_bytes": out_bytes,
            "attrs": a,
            "output": False,
        }
        if key is not None:
            self._values[key] = _Value(op_name, frozenset(roots))
        self._last_roots = frozenset(roots)
        for r in read:
            self._readers.setdefault(r, []).append(op_name)
        for r in written:
            self._writer[r], self._readers[r] = op_name, []
        return op_name

    def register(self, key: Hashable, op_name: str) -> None:
        """Register ``key`` as an output value of the op just added as ``op_name``."""
        self._values[key] = _Value(op_name, self._last_roots)

    def mark_outputs(self, keys: Iterable[Hashable]) -> None:
        """Mark the graph outputs: their ops (and the memory they alias) live to the end."""
        for k in keys:
            v = self.value(k)
            for n in (v.producer, *sorted(v.roots)):
                if n is not None:
                    self._ops[n]["output"] = True

    # ------------------------------------------------------------------ result
    def build(self) -> OpGraph:
        """The finished graph; unknown source ops are listed in one :class:`ImporterWarning`."""
        attrs: dict[str, Any] = {"source": self.source, **self.attrs}
        if self._unmapped:
            attrs["unmapped"] = dict(sorted(self._unmapped.items()))
            shown = ", ".join(f"{k} x{n}" for k, n in sorted(self._unmapped.items()))
            warnings.warn(
                f"{self.where}: {sum(self._unmapped.values())} op(s) of unknown type mapped to "
                f"generic kinds (attrs carry the original op): {shown}",
                ImporterWarning,
                stacklevel=3,
            )
        try:
            ops = tuple(Op(**rec) for rec in self._ops.values())
            return OpGraph(
                ops,
                name=self.name,
                persistent_bytes=self.persistent_bytes,
                attrs=attrs,
            )
        except GraphError as e:
            raise InputError(str(e), self.where) from None


def _op_dtype(outputs: Sequence[TensorMeta], override: str | None) -> str:
    for t in outputs:
        if t.is_float:
            return t.dtype
    if override is not None:
        return override
    return outputs[0].dtype if outputs else "float32"

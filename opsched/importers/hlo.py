"""Import XLA HLO text (as printed by XLA or ``jax.jit(f).lower(...).as_text("hlo")``).

The instructions of the ``ENTRY`` computation become ops; operands give the deps; result
types (arrays ``f32[8,64]{1,0}``, tuples, layouts) give ``output_bytes``. Opcodes map onto the
kinds of :mod:`opsched.ir.kinds`: ``dot`` -> ``matmul`` (batch, contracting and free
dimensions), ``convolution`` -> ``conv2d`` (``dim_labels`` and ``window`` read), ``reduce`` ->
``reduce``, ``reduce-window`` -> ``pool``, arithmetic -> ``elementwise``, data movement ->
``copy``, ``bitcast`` / ``reshape`` / ``get-tuple-element`` -> ``view``. A ``fusion`` or
``call`` is one op of kind ``fused`` whose ``flops`` are the sum over its called computation and
whose ``bytes`` are its operands read once plus its result written once. Parameters are
``input`` ops (HLO does not tell weights from activations); constants are persistent bytes.
Every op keeps its opcode in ``attrs["hlo_op"]``.

Examples
--------
>>> text = '''HloModule m
... ENTRY main {
...   x = f32[8,64]{1,0} parameter(0)
...   w = f32[64,32]{1,0} parameter(1)
...   d = f32[8,32]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
...   ROOT r = f32[8,32]{1,0} tanh(d)
... }'''
>>> g = from_hlo_text(text)
>>> [(op.name, op.kind, op.attrs["flops"]) for op in g.ops]
[('x', 'input', 0), ('w', 'input', 0), ('d', 'matmul', 32768), ('r', 'elementwise', 256)]
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opsched._files import read_text
from opsched.errors import InputError
from opsched.importers._build import GraphBuilder, TensorMeta, dtype_name
from opsched.importers.torch.aten import Mapped, map_aten
from opsched.ir import kinds
from opsched.ir.graph import OpGraph

__all__ = ["from_hlo_text", "parse_type", "read_hlo"]


def _words(text: str) -> list[str]:
    return text.split()


_WIDTH = {"pred": 1, "s4": 1, "u4": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2,
          "bf16": 2, "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8,
          "c128": 16}  # fmt: skip
_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*(\(.*\))?\s*(->.*)?\{\s*$")
_ARRAY = re.compile(r"([a-z]+[0-9a-z]*)\[([^\]]*)\]")
_INSTR = re.compile(r"^(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_ELEMENTWISE = set(
    _words(
        """
    add subtract multiply divide maximum minimum power remainder atan2 and or xor not
    negate abs sign exponential exponential-minus-one log log-plus-one logistic tanh
    sqrt rsqrt cbrt sine cosine tan erf floor ceil round-nearest-afz round-nearest-even
    compare select clamp convert is-finite popcnt count-leading-zeros shift-left shift-
    right-arithmetic shift-right-logical real imag complex iota rng rng-bit-generator
    stochastic-convert reduce-precision map
    """
    )
)
_COPIES = set(
    _words(
        """
    broadcast transpose copy concatenate slice dynamic-slice dynamic-update-slice pad
    gather scatter reverse sort all-reduce all-gather reduce-scatter all-to-all
    collective-permute copy-start copy-done send recv
    """
    )
)
_VIEWS = {"bitcast", "reshape", "get-tuple-element", "optimization-barrier", "domain"}


@dataclass
class _Instr:
    name: str
    shape: Any  # TensorMeta, a tuple of shapes, or None (token)
    opcode: str
    operands: list[str]
    attrs: dict[str, str]
    line: int
    root: bool = False


@dataclass
class _Comp:
    name: str
    entry: bool
    instrs: list[_Instr] = field(default_factory=list)


def _match(text: str, i: int, open_: str, close: str) -> int:
    """Index just past the bracket closing the one at ``text[i]``; -1 when unbalanced."""
    depth, quoted = 0, False
    for j in range(i, len(text)):
        c = text[j]
        if c == '"':
            quoted = not quoted
        if quoted:
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return j + 1
    return -1


def parse_type(text: str, i: int = 0) -> tuple[Any, int]:
    """Parse an HLO type at ``text[i]``: ``(TensorMeta | tuple | None, end index)``.

    Examples
    --------
    >>> parse_type("f32[8,64]{1,0} dot(...)")[0]
    TensorMeta(shape=(8, 64), dtype='float32', contiguous=True)
    >>> t, _ = parse_type("(bf16[2]{0}, s32[]) tuple(a, b)")
    >>> [x.dtype for x in t]
    ['bfloat16', 'int32']
    """
    while i < len(text) and text[i] == " ":
        i += 1
    if text.startswith("(", i):
        items: list[Any] = []
        i += 1
        while True:
            while i < len(text) and text[i] in " ,":
                i += 1
            if i < len(text) and text[i] == ")":
                return tuple(items), i + 1
            if i >= len(text):
                raise ValueError("unterminated tuple type")
            item, i = parse_type(text, i)
            items.append(item)
    if text.startswith("token[]", i):
        return None, i + 7
    m = _ARRAY.match(text, i)
    if m is None:
        raise ValueError(f"expected a type at {text[i : i + 20]!r}")
    prim, dims = m.group(1), m.group(2)
    shape = [int(d.replace("<=", "")) for d in dims.split(",") if d.strip()]
    end = m.end()
    if end < len(text) and text[end] == "{":
        end = _match(text, end, "{", "}")
        if end < 0:
            raise ValueError("unterminated layout")
    width = _WIDTH.get(prim)
    if width is None and not prim.startswith("f8"):
        raise ValueError(f"unknown element type {prim!r}")
    return TensorMeta(tuple(shape), dtype_name(prim, width or 1)), end


def _split_top(text: str) -> list[str]:
    """Split at commas outside brackets and quotes."""
    out: list[str] = []
    cur: list[str] = []
    depth, quoted = 0, False
    for c in text:
        if c == '"':
            quoted = not quoted
        elif not quoted and c in "({[":
            depth += 1
        elif not quoted and c in ")}]":
            depth -= 1
        if c == "," and depth == 0 and not quoted:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _parse_instr(body: str, root: bool, name: str, line: int) -> _Instr:
    shape, i = parse_type(body)
    m = re.compile(r"\s*([a-z][\w\-]*)\(").match(body, i)
    if m is None:
        raise ValueError("expected an opcode and '('")
    opcode = m.group(1)
    end = _match(body, m.end() - 1, "(", ")")
    if end < 0:
        raise ValueError("unbalanced parentheses")
    operands: list[str] = []
    if opcode not in ("constant", "parameter"):
        for tok in _split_top(body[m.end() : end - 1]):
            parts = tok.split()
            if parts:
                operands.append(parts[-1].lstrip("%"))
    attrs: dict[str, str] = {}
    for part in _split_top(body[end:].lstrip(", ")):
        key, eq, value = part.partition("=")
        if eq:
            attrs[key.strip()] = value.strip()
    return _Instr(name, shape, opcode, operands, attrs, line, root)


def _parse(text: str, where: str) -> dict[str, _Comp]:
    comps: dict[str, _Comp] = {}
    cur: _Comp | None = None
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        if cur is None:
            m = _HEADER.match(line)
            if m and not line.startswith("HloModule"):
                cur = _Comp(m.group(2), bool(m.group(1)))
                comps[cur.name] = cur
            continue
        if line == "}":
            cur = None
            continue
        m = _INSTR.match(line)
        if m is None:
            raise InputError(f"line {n}: expected 'name = type opcode(operands)'", where)
        try:
            cur.instrs.append(_parse_instr(m.group(3), bool(m.group(1)), m.group(2), n))
        except ValueError as e:
            raise InputError(f"line {n}: {e}", where) from None
    if cur is not None:
        raise InputError(f"computation {cur.name!r} is not closed with '}}' (truncated?)", where)
    return comps


def _dims(attrs: dict[str, str], key: str) -> list[int]:
    v = attrs.get(key, "{}").strip("{} ")
    return [int(x) for x in v.split(",") if x.strip()]


def _dot(ins: list[TensorMeta], a: dict[str, str]) -> Mapped:
    lhs, rhs = ins[0].shape, ins[1].shape
    lb, lc = _dims(a, "lhs_batch_dims"), _dims(a, "lhs_contracting_dims")
    rb, rc = _dims(a, "rhs_batch_dims"), _dims(a, "rhs_contracting_dims")
    b = math.prod(lhs[d] for d in lb)
    k = math.prod(lhs[d] for d in lc)
    m = math.prod(s for d, s in enumerate(lhs) if d not in lb and d not in lc)
    n = math.prod(s for d, s in enumerate(rhs) if d not in rb and d not in rc)
    attrs: dict[str, Any] = {"M": m, "N": n, "K": k}
    if b > 1:
        attrs["B"] = b
    return Mapped("matmul", attrs)


def _window(a: dict[str, str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for item in a.get("window", "{}").strip("{} ").split():
        key, _, value = item.partition("=")
        if key == "pad":
            out[key] = [int(p.split("_")[0]) for p in value.split("x")]
        else:
            out[key] = [int(x) for x in value.split("x")]
    return out


def _conv(ins: list[TensorMeta], out: TensorMeta, a: dict[str, str]) -> Mapped:
    lhs_l, rest = a["dim_labels"].split("_")
    rhs_l, out_l = rest.split("->")
    sp = sorted(c for c in lhs_l if c.isdigit())

    def order(t: TensorMeta, labels: str, first: str, second: str) -> TensorMeta:
        pos = [labels.index(first), labels.index(second), *(labels.index(c) for c in sp)]
        return TensorMeta(tuple(t.shape[p] for p in pos), t.dtype)

    x, w = order(ins[0], lhs_l, "b", "f"), order(ins[1], rhs_l, "o", "i")
    y = order(out, out_l, "b", "f")
    win = _window(a)
    groups = int(a.get("feature_group_count", "1"))
    call = [x, w, None, win.get("stride", [1] * len(sp)), win.get("pad", [0] * len(sp)),
            win.get("rhs_dilate", [1] * len(sp)), False, [0] * len(sp), groups]  # fmt: skip
    return map_aten("convolution", call, {}, [y])


def _reduce_window(ins: list[TensorMeta], out: TensorMeta, a: dict[str, str], fn: str) -> Mapped:
    win = _window(a)
    size = win.get("size", [1] * len(ins[0].shape))
    stride = win.get("stride", [1] * len(size))
    spatial = [d for d, (r, s) in enumerate(zip(size, stride, strict=False)) if r > 1 or s > 1]
    if not 1 <= len(spatial) <= 2:
        return Mapped("reduce", {"numel": ins[0].numel, "out_numel": out.numel})
    spatial = ([spatial[0]] if len(spatial) == 1 else []) + spatial  # 1-d: H = the same axis
    h_ax, w_ax = spatial[-2], spatial[-1]
    pads = win.get("pad", [0] * len(size))
    hh, ww = (ins[0].shape[h_ax], ins[0].shape[w_ax]) if h_ax != w_ax else (1, ins[0].shape[w_ax])
    r, s = (size[h_ax], size[w_ax]) if h_ax != w_ax else (1, size[w_ax])
    attrs = {"N": ins[0].numel // max(1, hh * ww), "C": 1, "H": hh, "W": ww, "R": r, "S": s,
             "stride_h": stride[h_ax] if h_ax != w_ax else 1, "stride_w": stride[w_ax],
             "pad_h": pads[h_ax] if h_ax != w_ax else 0, "pad_w": pads[w_ax],
             "mode": "max" if fn == "maximum" else "avg"}  # fmt: skip
    return Mapped("pool", attrs)


class _Module:
    """The parsed computations, with flops of called computations memoised."""

    def __init__(self, comps: dict[str, _Comp], where: str) -> None:
        self.comps, self.where = comps, where
        self._flops: dict[str, int] = {}

    def comp(self, ref: str, line: int) -> _Comp:
        name = ref.strip().lstrip("%")
        if name not in self.comps:
            raise InputError(f"line {line}: unknown computation {name!r}", self.where)
        return self.comps[name]

    def flops_of(self, comp: _Comp, stack: tuple[str, ...] = ()) -> int:
        if comp.name in stack:
            raise InputError(f"computation {comp.name!r} calls itself", self.where)
        if comp.name not in self._flops:
            shapes = {i.name: i.shape for i in comp.instrs}
            total = 0
            for ins in comp.instrs:
                m = self.map(ins, [shapes.get(o) for o in ins.operands], (*stack, comp.name))
                total += kinds.flops(m.kind, m.attrs) if m.kind != "view" else 0
            self._flops[comp.name] = total
        return self._flops[comp.name]

    def map(self, ins: _Instr, ops: list[Any], stack: tuple[str, ...] = ()) -> Mapped:
        """Kind and attrs of one instruction (``ops``: operand types)."""
        out = ins.shape if isinstance(ins.shape, TensorMeta) else None
        arrays = [t for t in ops if isinstance(t, TensorMeta)]
        numel = out.numel if out else sum(t.numel for t in _leaves(ins.shape))
        op = ins.opcode
        if op in ("fusion", "call", "while", "conditional", "async-start"):
            key = {"fusion": "calls", "call": "to_apply", "while": "body"}.get(op, "calls")
            flops = sum(
                self.flops_of(self.comp(ref, ins.line), stack)
                for ref in ins.attrs.get(key, "").strip("{}").split(",")
                if ref.strip()
            )
            nbytes = sum(t.nbytes for t in arrays) + sum(t.nbytes for t in _leaves(ins.shape))
            attrs: dict[str, Any] = {"flops": flops, "bytes": nbytes, "numel": numel}
            if "kind" in ins.attrs:
                attrs["fusion_kind"] = ins.attrs["kind"]
            return Mapped("fused", attrs)
        if op == "dot" and len(arrays) >= 2:
            return _dot(arrays, ins.attrs)
        if op == "convolution" and out is not None and "dim_labels" in ins.attrs:
            return _conv(arrays, out, ins.attrs)
        if op == "reduce" and arrays:
            half = max(1, len(arrays) // 2)
            return Mapped(
                "reduce", {"numel": sum(t.numel for t in arrays[:half]), "out_numel": numel}
            )
        if op == "reduce-window" and arrays and out is not None:
            fn = self._root_op(ins.attrs.get("to_apply", ""), ins.line)
            return _reduce_window(arrays, out, ins.attrs, fn)
        if op in _VIEWS:
            return Mapped("view", {"numel": numel}, aliasing=True)
        if op in _ELEMENTWISE:
            return Mapped("elementwise", {"numel": numel, "arity": max(1, len(arrays)), "fn": op})
        if op in _COPIES or op == "tuple":
            return Mapped("copy", {"numel": numel})
        return Mapped("copy", {"numel": numel}, known=False)

    def _root_op(self, ref: str, line: int) -> str:
        if not ref:
            return ""
        comp = self.comp(ref, line)
        return next((i.opcode for i in comp.instrs if i.root), "")


def _leaves(shape: Any) -> list[TensorMeta]:
    if isinstance(shape, TensorMeta):
        return [shape]
    if isinstance(shape, tuple):
        return [t for x in shape for t in _leaves(x)]
    return []


def from_hlo_text(text: str, name: str | None = None, where: str = "<hlo>") -> OpGraph:
    """Build the op graph of the ``ENTRY`` computation of an HLO module.

    Raises
    ------
    InputError
        Malformed text (the message gives the line), no ``ENTRY`` computation, an operand or
        a called computation that is not defined.

    Examples
    --------
    >>> bad = "HloModule m\\nENTRY e {\\n  x = f32[4] parameter(0)\\n  ROOT y = f32[4] abs(z)\\n}"
    >>> from_hlo_text(bad)
    Traceback (most recent call last):
    ...
    opsched.errors.InputError: <hlo>: line 4: operand 'z' of 'y' is not defined
    """
    comps = _parse(text, where)
    entry = next((c for c in comps.values() if c.entry), None)
    if entry is None:
        raise InputError("no ENTRY computation", where)
    mod = re.search(r"HloModule\s+([\w.\-]+)", text)
    module = _Module(comps, where)
    b = GraphBuilder(name or (mod.group(1) if mod else entry.name), where=where, source="hlo")
    b.attrs["entry"] = entry.name
    shapes: dict[str, Any] = {}
    tuples: dict[str, list[str]] = {}
    root: list[str] = []
    for ins in entry.instrs:
        for o in ins.operands:
            if o not in shapes:
                raise InputError(
                    f"line {ins.line}: operand {o!r} of {ins.name!r} is not defined", where
                )
        shapes[ins.name] = ins.shape
        if ins.root:
            root = tuples.get(ins.name, [ins.name]) if ins.opcode != "tuple" else ins.operands
        if ins.opcode == "parameter":
            leaves = _leaves(ins.shape)
            if len(leaves) == 1:
                b.add_input(ins.name, ins.name, leaves[0])
            elif leaves:  # a tuple parameter: one input of all its bytes
                total = sum(t.nbytes for t in leaves) // kinds.DTYPE_BYTES[leaves[0].dtype]
                b.add_input(ins.name, ins.name, TensorMeta((total,), leaves[0].dtype))
            else:
                b.add_persistent(ins.name, 0)
            continue
        if ins.opcode == "constant":
            b.add_persistent(ins.name, sum(t.nbytes for t in _leaves(ins.shape)))
            continue
        if ins.opcode == "tuple":  # no kernel: its elements are the values
            tuples[ins.name] = ins.operands
            b.add_persistent(ins.name, 0)
            continue
        if ins.opcode == "get-tuple-element" and ins.operands[0] in tuples:
            idx = int(ins.attrs.get("index", "0"))
            b.alias(ins.name, tuples[ins.operands[0]][idx])
            continue
        outs = _leaves(ins.shape)
        if not outs:  # tokens, after-all
            b.add_persistent(ins.name, 0)
            continue
        try:
            m = module.map(ins, [shapes[o] for o in ins.operands])
        except (KeyError, IndexError, ValueError):
            raise InputError(
                f"line {ins.line}: cannot read {ins.opcode} {ins.name!r}", where
            ) from None
        if not m.known:
            b.unmapped(ins.opcode)
        attrs = {**m.attrs, "hlo_op": ins.opcode}
        keys = [o for o in ins.operands if b.has(o)]
        b.add_op(ins.name, m.kind, attrs, keys, outs, key=ins.name, aliasing=m.aliasing)
    b.mark_outputs(r for r in root if b.has(r))
    return b.build()


def read_hlo(path: str | os.PathLike[str]) -> OpGraph:
    """Read an HLO text file (``.hlo``, ``.hlo.txt``); the graph is named after the file."""
    p = Path(path)
    stem = p.name.removesuffix(".txt").removesuffix(".hlo")
    return from_hlo_text(read_text(p), name=stem, where=str(p))

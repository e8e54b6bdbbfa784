"""HLO opcodes -> the op kinds of :mod:`opsched.ir.kinds`.

:class:`OpMapper` gives the kind and shape attrs of one parsed instruction
(:class:`~opsched.importers.hlo_text.Instr`): ``dot`` -> ``matmul`` (batch, contracting and
free dimensions), ``convolution`` -> ``conv2d`` (``dim_labels`` and ``window`` read, then the
ATen convolution rule), ``reduce`` -> ``reduce``, ``reduce-window`` -> ``pool``, arithmetic ->
``elementwise``, data movement -> ``copy``, views -> ``view``. A ``fusion``, ``call``,
``while`` or ``conditional`` becomes ``fused``, its ``flops`` summed over the called
computations (a ``conditional``'s: its costliest branch, since one runs; memoised, a
computation calling itself is an error) and its ``bytes`` its operands read once (an
operand passed twice counted once) plus its result written once.

Examples
--------
>>> from opsched.importers.hlo_text import parse_computations
>>> dims = ("lhs_batch_dims={0}, lhs_contracting_dims={2}, "
...         "rhs_batch_dims={0}, rhs_contracting_dims={1}")
>>> comps = parse_computations(f'''ENTRY e {{
...   a = f32[2,3,4] parameter(0)
...   b = f32[2,4,5] parameter(1)
...   ROOT d = f32[2,3,5] dot(a, b), {dims}
... }}''', "<hlo>")
>>> a, b, d = comps["e"].instrs
>>> OpMapper(comps, "<hlo>").map(d, [a.shape, b.shape]).attrs
{'M': 3, 'N': 5, 'K': 4, 'B': 2}
"""

from __future__ import annotations

import math
from typing import Any

from opsched.errors import InputError
from opsched.importers._build import TensorMeta
from opsched.importers.hlo_text import Computation, Instr, leaves
from opsched.importers.torch.aten import Mapped, map_aten
from opsched.ir import kinds

__all__ = ["OpMapper", "start_outputs"]


def _words(text: str) -> list[str]:
    return text.split()


_ELEMENTWISE = set(
    _words(
        """
    add subtract multiply divide maximum minimum power remainder atan2 and or xor not
    negate abs sign exponential exponential-minus-one log log-plus-one logistic tanh
    sqrt rsqrt cbrt sine cosine tan erf floor ceil round-nearest-afz round-nearest-even
    compare select clamp convert is-finite popcnt count-leading-zeros shift-left
    shift-right-arithmetic shift-right-logical real imag complex iota rng rng-bit-generator
    stochastic-convert reduce-precision map
    """
    )
)
_COPIES = set(
    _words(
        """
    broadcast transpose copy concatenate slice dynamic-slice dynamic-update-slice pad
    gather scatter reverse sort all-reduce all-gather reduce-scatter all-to-all
    collective-permute copy-start send recv outfeed infeed all-reduce-start
    all-gather-start collective-permute-start
    """
    )
)
#: XLA prints the optimization barrier as ``opt-barrier``: it passes its operand through.
_VIEWS = {"bitcast", "reshape", "get-tuple-element", "opt-barrier", "domain"}
#: The second half of an asynchronous pair (or an ``async-update`` between the two): its
#: value is what its start already holds, so it runs no kernel and holds no memory of its own
#: (a view of the start).
_ASYNC_DONE = set(
    _words(
        "copy-done async-update async-done all-reduce-done all-gather-done collective-permute-done "
        "send-done recv-done"
    )
)
#: The element of an asynchronous start's tuple that is its operand passed through
#: (``copy-start`` returns (destination, source, context); the others lead with theirs).
_PASSED_THROUGH = {"copy-start": 1, "async-start": 0, "all-gather-start": 0,
                   "collective-permute-start": 0, "send": 0}  # fmt: skip


def start_outputs(ins: Instr) -> list[TensorMeta]:
    r"""The arrays an instruction allocates: its type's arrays, less the element an
    asynchronous start passes through from its operand (counted there already).

    >>> from opsched.importers.hlo_text import parse_computations
    >>> comps = parse_computations("ENTRY e {\n  p = f32[8] parameter(0)\n"
    ...     "  s = (f32[8], f32[8], u32[]) copy-start(p)\n  ROOT d = f32[8] copy-done(s)\n}",
    ...     "<doc>")
    >>> [t.nbytes for t in start_outputs(comps["e"].instrs[1])]
    [32, 4]
    """
    at = _PASSED_THROUGH.get(ins.opcode)
    if at is None or not isinstance(ins.shape, tuple) or len(ins.shape) <= at:
        return leaves(ins.shape)
    return leaves(ins.shape[:at] + ins.shape[at + 1 :])


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
        return TensorMeta(tuple(t.shape[p] for p in pos), t.dtype, bits=t.bits)

    x, w = order(ins[0], lhs_l, "b", "f"), order(ins[1], rhs_l, "o", "i")
    y = order(out, out_l, "b", "f")
    win = _window(a)
    groups = int(a.get("feature_group_count", "1"))
    dil = win.get("rhs_dilate", [1] * len(sp))
    lhs = win.get("lhs_dilate", [1] * len(sp))
    if any(s > 1 for s in lhs):
        # an input dilated by s is a transposed convolution of stride s (XLA lowers
        # ConvTranspose so): its padding is the kernel's reach less the window's pad. Read
        # as a plain convolution it had 5x the work and an output size its shape denied.
        reach = [d * (k - 1) for d, k in zip(dil, w.shape[2:], strict=True)]
        pad = [max(r - p, 0) for r, p in zip(reach, win.get("pad", [0] * len(sp)), strict=True)]
        call = [x, w, None, lhs, pad, dil, True, [0] * len(sp), groups]
        return map_aten("convolution", call, {}, [y])
    call = [x, w, None, win.get("stride", [1] * len(sp)), win.get("pad", [0] * len(sp)),
            dil, False, [0] * len(sp), groups]  # fmt: skip
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


class OpMapper:
    """Maps the instructions of a parsed module, with flops of called computations memoised.

    Parameters
    ----------
    comps
        The module's computations (:func:`~opsched.importers.hlo_text.parse_computations`).
    where
        The file name (or ``"<hlo>"``) that errors name.
    """

    def __init__(self, comps: dict[str, Computation], where: str) -> None:
        self.comps, self.where = comps, where
        self._flops: dict[str, int] = {}

    def comp(self, ref: str, line: int) -> Computation:
        """The computation named by ``ref`` (``%`` allowed); an error if there is none."""
        name = ref.strip().lstrip("%")
        if name not in self.comps:
            raise InputError(f"line {line}: unknown computation {name!r}", self.where)
        return self.comps[name]

    def flops_of(self, comp: Computation, stack: tuple[str, ...] = ()) -> int:
        """Total flops of ``comp``'s instructions (``stack``: the computations calling it)."""
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

    def map(self, ins: Instr, ops: list[Any], stack: tuple[str, ...] = ()) -> Mapped:
        """Kind and attrs of one instruction (``ops``: operand types)."""
        out = ins.shape if isinstance(ins.shape, TensorMeta) else None
        arrays = [t for t in ops if isinstance(t, TensorMeta)]
        numel = out.numel if out else sum(t.numel for t in start_outputs(ins))
        if ins.shape is None:  # a token result (outfeed): it moves what it reads
            numel = sum(t.numel for t in arrays)
        op = ins.opcode
        if op in ("fusion", "call", "while", "conditional", "async-start"):
            keys: tuple[str, ...]
            if op == "conditional":  # one branch runs: the costliest bounds it
                keys = ("branch_computations", "true_computation", "false_computation")
            else:
                keys = ({"fusion": "calls", "call": "to_apply", "while": "body"}.get(op, "calls"),)
            per_comp = [
                self.flops_of(self.comp(ref, ins.line), stack)
                for key in keys
                for ref in ins.attrs.get(key, "").strip("{}").split(",")
                if ref.strip()
            ]
            flops = max(per_comp, default=0) if op == "conditional" else sum(per_comp)
            # each operand read once, however often it is passed (conditional(p, x, x)); a
            # tuple operand (a while's loop state) is read as its arrays
            once = dict(zip(ins.operands, ops, strict=False))
            read = sum(t.nbytes for op in once.values() for t in leaves(op))
            nbytes = read + sum(t.nbytes for t in start_outputs(ins))
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
        if op in _VIEWS or op in _ASYNC_DONE:
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

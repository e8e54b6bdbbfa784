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

This module builds the graph; the text parser is :mod:`opsched.importers.hlo_text` and the
opcode-to-kind mapping :mod:`opsched.importers.hlo_kinds`.

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

import os
import re
from pathlib import Path
from typing import Any

from opsched._files import read_text
from opsched.errors import InputError, OpschedError
from opsched.importers._build import GraphBuilder, TensorMeta
from opsched.importers.hlo_kinds import OpMapper, start_outputs
from opsched.importers.hlo_text import Instr, leaves, parse_computations, parse_type
from opsched.ir import kinds
from opsched.ir.graph import OpGraph

__all__ = ["from_hlo_text", "parse_type", "read_hlo"]


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
    comps = parse_computations(text, where)
    entry = next((c for c in comps.values() if c.entry), None)
    if entry is None:
        raise InputError("no ENTRY computation", where)
    mod = re.search(r"HloModule\s+([\w.\-]+)", text)
    module = OpMapper(comps, where)
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
        if ins.root:  # a tuple (or an element of one) marks what it is made of
            root = [ins.name]
        if ins.opcode == "parameter":
            arrays = leaves(ins.shape)
            if len(arrays) == 1:
                b.add_input(ins.name, ins.name, arrays[0])
            elif arrays:  # a tuple parameter: one input of all its bytes (as int8 when its
                # dtypes differ: (f32[1], s8[3]) had been counted as 7 // 4 floats, 4 bytes)
                dts = {t.dtype for t in arrays}
                dt = arrays[0].dtype if len(dts) == 1 else "int8"
                total = sum(t.nbytes for t in arrays) // kinds.DTYPE_BYTES[dt]
                b.add_input(ins.name, ins.name, TensorMeta((total,), dt))
            else:
                b.add_persistent(ins.name, 0)
            continue
        if ins.opcode == "constant":
            b.add_persistent(ins.name, sum(t.nbytes for t in leaves(ins.shape)))
            continue
        if ins.opcode == "tuple":  # no kernel: a reader of it (a while) reads its elements
            tuples[ins.name] = ins.operands
            b.group(ins.name, ins.operands)
            continue
        if ins.opcode == "get-tuple-element":
            idx = _tuple_index(ins, shapes, where)
            if ins.operands[0] in tuples:  # the element itself, nested tuples followed
                elem = tuples[ins.operands[0]][idx]
                b.alias(ins.name, elem)
                if elem in tuples:
                    tuples[ins.name] = tuples[elem]
                continue
        outs = start_outputs(ins)
        if not outs and (ins.opcode == "after-all" or not ins.operands):
            # a token that joins others: what reads it runs after all they order
            b.group(ins.name, ins.operands)
            continue
        try:
            m = module.map(ins, [shapes[o] for o in ins.operands])
        except OpschedError as e:  # names the problem; the file and line are added here
            raise e.located(f"{where}: line {ins.line}") from None
        except (KeyError, IndexError, ValueError):
            raise InputError(
                f"line {ins.line}: cannot read {ins.opcode} {ins.name!r}", where
            ) from None
        if not m.known:
            b.unmapped(ins.opcode)
        attrs = {**m.attrs, "hlo_op": ins.opcode}
        keys = [o for o in ins.operands if b.has(o)]
        b.add_op(ins.name, m.kind, attrs, keys, outs, key=ins.name, aliasing=m.aliasing,
                 after=_control_predecessors(ins, shapes, where))  # fmt: skip
    b.mark_outputs(r for r in root if b.has(r))
    return b.build()


def _tuple_index(ins: Instr, shapes: dict[str, Any], where: str) -> int:
    """The element a ``get-tuple-element`` takes: its ``index``, checked against its one
    operand's tuple type."""
    if len(ins.operands) != 1:
        raise InputError(f"line {ins.line}: get-tuple-element {ins.name!r} takes one operand, "
                         f"got {len(ins.operands)}", where)  # fmt: skip
    raw = ins.attrs.get("index", "")
    if not raw.isdigit():
        raise InputError(f"line {ins.line}: get-tuple-element {ins.name!r} needs an index=N, "
                         f"got {raw!r}", where)  # fmt: skip
    of = shapes[ins.operands[0]]
    if not isinstance(of, tuple):
        raise InputError(f"line {ins.line}: get-tuple-element {ins.name!r}: operand "
                         f"{ins.operands[0]!r} is not a tuple", where)  # fmt: skip
    if int(raw) >= len(of):
        raise InputError(f"line {ins.line}: get-tuple-element {ins.name!r}: index {raw} of "
                         f"{ins.operands[0]!r}, a tuple of {len(of)} elements", where)  # fmt: skip
    return int(raw)


def _control_predecessors(ins: Instr, shapes: dict[str, Any], where: str) -> list[str]:
    """The instructions ``ins`` must run after without reading them
    (``control-predecessors={a, b}``); each must be defined earlier, as XLA prints them."""
    names = [n.strip().lstrip("%") for n in ins.attrs.get("control-predecessors", "").strip(
        "{}").split(",")]  # fmt: skip
    for n in names:
        if n and n not in shapes:
            raise InputError(f"line {ins.line}: control predecessor {n!r} of {ins.name!r} is "
                             "not defined before it", where)  # fmt: skip
    return [n for n in names if n]


def read_hlo(path: str | os.PathLike[str]) -> OpGraph:
    """Read an HLO text file (``.hlo``, ``.hlo.txt``); the graph is named after the file."""
    p = Path(path)
    stem = p.name.removesuffix(".txt").removesuffix(".hlo")
    return from_hlo_text(read_text(p), name=stem, where=str(p))

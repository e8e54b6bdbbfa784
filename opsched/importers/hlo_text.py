"""The XLA HLO text parser: computations, instructions and types, with no opsched kinds.

:func:`parse_computations` splits a module's text into its computations and each of them into
:class:`Instr` records (name, result type, opcode, operand names, ``key=value`` attributes,
line number). :func:`parse_type` reads one HLO type (arrays with layouts, tuples, tokens) into
:class:`~opsched.importers._build.TensorMeta`. What an instruction means as an op (its kind and
shape attrs) is decided in :mod:`opsched.importers.hlo_kinds`; the graph is built in
:mod:`opsched.importers.hlo`.

Examples
--------
>>> comps = parse_computations('''ENTRY e {
...   x = f32[4]{0} parameter(0)
...   ROOT y = f32[4]{0} add(x, x), metadata={op_name="a,b"}
... }''', "<hlo>")
>>> ins = comps["e"].instrs[1]
>>> ins.opcode, ins.operands, ins.root, ins.line, sorted(ins.attrs)
('add', ['x', 'x'], True, 3, ['metadata'])
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from opsched.errors import InputError, OpschedError
from opsched.importers._build import TensorMeta, dtype_name

__all__ = ["Computation", "Instr", "leaves", "parse_computations", "parse_type"]

_WIDTH = {"pred": 1, "s1": 1, "u1": 1, "s2": 1, "u2": 1, "s4": 1, "u4": 1, "s8": 1, "u8": 1,
          "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4, "s64": 8,
          "u64": 8, "f64": 8, "c64": 8, "c128": 16}  # fmt: skip
#: XLA's small floating-point types (f8e4m3fn, f8e5m2fnuz, f8e8m0fnu, f6e2m3fn, f4e2m1fn, and
#: those to come): a byte an element, unless a layout packs them (``E(4)``). Like the
#: sub-byte integers, XLA stores them one to a byte by default.
_SMALL_FLOAT = re.compile(r"f[1-8]e\d+m\d+[a-z]*")
#: A layout's element size in bits (``s4[64]{0:E(4)}``: packed, two elements to a byte).
_PACKED = re.compile(r"E\((\d+)\)")
_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*(\(.*\))?\s*(->.*)?\{\s*$")
_ARRAY = re.compile(r"([a-z]+[0-9a-z]*)\[([^\]]*)\]")
_INSTR = re.compile(r"^(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
#: A quoted string (kept) or a ``/*...*/`` comment (dropped): XLA writes ``/*index=5*/``
#: before every fifth element of a long tuple type and operand list.
_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|/\*.*?\*/')


@dataclass
class Instr:
    """One HLO instruction as written: ``name = type opcode(operands), key=value, ...``."""

    name: str
    shape: Any  # TensorMeta, a tuple of shapes, or None (token)
    opcode: str
    operands: list[str]
    attrs: dict[str, str]
    line: int
    root: bool = False


@dataclass
class Computation:
    """A named block of instructions; ``entry`` for the module's ``ENTRY`` computation."""

    name: str
    entry: bool
    instrs: list[Instr] = field(default_factory=list)


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
    TensorMeta(shape=(8, 64), dtype='float32', contiguous=True, bits=0)
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
    if "?" in dims:  # an unbounded dynamic dimension: no size to count bytes by
        raise ValueError(
            f"unbounded dynamic dimension in {m.group(0)} (opsched needs its size or a bound, <=N)"
        )
    try:
        shape = [int(d.replace("<=", "")) for d in dims.split(",") if d.strip()]
    except ValueError:
        raise ValueError(f"cannot read the dimensions of {m.group(0)}") from None
    neg = next((d for d in shape if d < 0), None)
    if neg is not None:  # a tuple's element shapes are parsed here too
        written = m.group(0) if len(m.group(0)) <= 40 else m.group(0)[:37] + "..."
        raise ValueError(f"negative dimension {neg} in {written}")
    end = m.end()
    bits = 0
    if end < len(text) and text[end] == "{":
        start = end
        end = _match(text, end, "{", "}")
        if end < 0:
            raise ValueError("unterminated layout")
        packed = _PACKED.search(text, start, end)  # E(4): 4 bits an element, two to a byte
        if packed is not None and 0 < int(packed.group(1)) < 8:
            bits = int(packed.group(1))
    width = _WIDTH.get(prim)
    if width is None and _SMALL_FLOAT.fullmatch(prim):
        width = 1
    if width is None:
        raise ValueError(f"unknown element type {prim!r}")
    return TensorMeta(tuple(shape), dtype_name(prim, width), bits=bits), end


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


def _parse_instr(body: str, root: bool, name: str, line: int) -> Instr:
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
    return Instr(name, shape, opcode, operands, attrs, line, root)


def parse_computations(text: str, where: str) -> dict[str, Computation]:
    """The computations of an HLO module's text, by name, in the order written.

    Raises
    ------
    InputError
        A line that is not an instruction (the message gives its number and ``where``), a
        type or opcode that cannot be read, or a computation not closed with ``}``.

    Examples
    --------
    >>> parse_computations("ENTRY e {\\n  x = f32[4] parameter(0)\\n", "m.hlo")
    Traceback (most recent call last):
    ...
    opsched.errors.InputError: m.hlo: computation 'e' is not closed with '}' (truncated?)
    """
    comps: dict[str, Computation] = {}
    cur: Computation | None = None
    names: dict[str, int] = {}  # the current computation's instructions: their lines
    for n, raw in enumerate(text.splitlines(), start=1):
        line = _COMMENT.sub(lambda c: c[0] if c[0].startswith('"') else "", raw).strip()
        if not line or line.startswith("//"):
            continue
        if cur is None:
            m = _HEADER.match(line)
            if m and not line.startswith("HloModule"):
                cur = Computation(m.group(2), bool(m.group(1)))
                if cur.name in comps:
                    raise InputError(f"line {n}: a second computation named {cur.name!r}", where)
                if cur.entry and any(c.entry for c in comps.values()):
                    raise InputError(f"line {n}: a second ENTRY computation ({cur.name!r})", where)
                comps[cur.name] = cur
                names = {}
            continue
        if line == "}" or line.startswith("},"):  # "}, execution_thread=..." closes one too
            cur = None
            continue
        m = _INSTR.match(line)
        if m is None:
            raise InputError(f"line {n}: expected 'name = type opcode(operands)'", where)
        if m.group(2) in names:
            raise InputError(f"line {n}: instruction {m.group(2)!r} is defined again (first on "
                             f"line {names[m.group(2)]})", where)  # fmt: skip
        names[m.group(2)] = n
        if m.group(1) and any(i.root for i in cur.instrs):
            raise InputError(f"line {n}: a second ROOT in computation {cur.name!r}", where)
        try:
            cur.instrs.append(_parse_instr(m.group(3), bool(m.group(1)), m.group(2), n))
        except OpschedError:  # already names the problem (and is a ValueError)
            raise
        except ValueError as e:
            raise InputError(f"line {n}: {e}", where) from None
    if cur is not None:
        raise InputError(f"computation {cur.name!r} is not closed with '}}' (truncated?)", where)
    return comps


def leaves(shape: Any) -> list[TensorMeta]:
    """The arrays of a parsed type, tuples flattened in order (tokens have none).

    Examples
    --------
    >>> t, _ = parse_type("(f32[2], (s8[3], token[]))")
    >>> [x.shape for x in leaves(t)]
    [(2,), (3,)]
    """
    if isinstance(shape, TensorMeta):
        return [shape]
    if isinstance(shape, tuple):
        return [t for x in shape for t in leaves(x)]
    return []

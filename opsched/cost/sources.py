"""How the rows of each timing source map onto op kinds: their size and dtype cells, and one
rule per source (DeepBench, NeuSight, Vidur, profiler tables) from a row to ``(kind, attrs)``.

:func:`opsched.cost.data.canonical_rows` calls these for every row of a table; a row no rule
maps (an op NeuSight timed that no kind models) raises ``ValueError`` and is left out, and a
cell that holds a number no size or dtype can be raises :class:`BadCell`, which names its row.

Examples
--------
>>> size_cell("64"), deepbench_dtype("FP16")
(64, ('float16', 'fp16'))
>>> profiled_kind("aten::mm", [[64, 32], [32, 16]], ["float", "float"])[0]
'matmul'
"""

from __future__ import annotations

import json
import math
from typing import Any

from opsched.cost.aten import (
    ELEMENTWISE_FNS,
    TERNARY_FNS,
    UNARY_FNS,
    aten_dtype,
    aten_kind,
    input_bytes,
)
from opsched.cost.mathmode import FP16_FP32_MATH
from opsched.ir import kinds

__all__ = [
    "COMM_PREFIXES",
    "DEEPBENCH_KERNEL_COLUMNS",
    "TORCH_DTYPES",
    "BadCell",
    "deepbench_conv_attrs",
    "deepbench_dtype",
    "neusight_op",
    "profiled_kind",
    "profiler_op",
    "size_cell",
    "vidur_op",
]

#: Op names of collective communication (their time is the other ranks' as much as this GPU's).
COMM_PREFIXES = ("record_param_comms", "c10d::", "nccl:", "nccl::")

#: dtype column of DeepBench-schema tables; ``tf32`` and ``bf16`` appear only in the rows
#: ``opsched cost collect`` times (:mod:`opsched.cost.collect_deepbench`): ``tf32`` is float32
#: run with TF32 allowed.
DEEPBENCH_DTYPES = {"fp32": "float32", "fp16": "float16", "int8": "int8", "tf32": "float32",
                     "bf16": "bfloat16", "fp16_storage_fp32_math": FP16_FP32_MATH}  # fmt: skip
#: DeepBench-schema target -> the column of collected rows naming its longest kernel.
DEEPBENCH_KERNEL_COLUMNS = {"conv2d": "fwd_kernel", "conv2d_bwd_data": "bwd_data_kernel",
                             "conv2d_bwd_filter": "bwd_filter_kernel", "": "kernel"}  # fmt: skip
#: dtype column of NeuSight- and SDPA-schema tables, torch's names (NeuSight: float32 only;
#: ``opsched cost collect`` also writes float16 / bfloat16 rows); a blank NeuSight one is
#: float32, a row of another dtype is left out.
TORCH_DTYPES = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16",
                    "fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}  # fmt: skip
#: Every spelling of a DeepBench-schema dtype, lower case: DeepBench's, torch's, ``half``...
DEEPBENCH_SPELLINGS = {**TORCH_DTYPES, "float": "float32", "single": "float32",
                        "half": "float16", **DEEPBENCH_DTYPES}  # fmt: skip
#: torch's names of a tensor dtype (``torch.half``, ``float16``, ``fp16``...), lower case
TORCH_SPELLINGS = {**TORCH_DTYPES, "half": "float16", "float": "float32"}


def torch_dtype(cell: object) -> str:
    """The dtype a table's torch dtype cell names, or ``""`` for one of no class.

    >>> torch_dtype("torch.half"), torch_dtype(" Float16"), torch_dtype("float64")
    ('float16', 'float16', '')
    """
    return TORCH_SPELLINGS.get(str(cell).strip().lower().removeprefix("torch."), "")


NEUSIGHT_BINARY = {"add", "mul", "div", "pow", "sub"}
#: NeuSight ops read as an elementwise kernel of one operand; any op of no rule is left out.
NEUSIGHT_UNARY = {"relu", "gelu", "tanh", "exp", "sigmoid", "silu", "neg", "abs", "sqrt"}


class BadCell(Exception):
    """A cell that holds a number, but not one a size or dtype can be: the row is named in an
    :class:`~opsched.errors.InputError` (a blank or unparseable cell leaves its row out)."""


def size_cell(v: Any) -> int:
    """A size cell as an integer: NaN raises ``ValueError`` (the row is left out), a number
    outside ``[0, 2**62]`` or with a fraction (2.5; 2.0 is 2) :class:`BadCell`."""
    f = float(v)
    if math.isnan(f):
        raise ValueError(f"bad size {v!r}")
    if not 0 <= f <= kinds.MAX_SIZE or not f.is_integer():
        raise BadCell(f"size {v!r} is not an integer in [0, 2**62]")
    return round(f)


def deepbench_dtype(raw: Any) -> tuple[str, str]:
    """The dtype of a DeepBench-schema row and its name as spelt in the table, lower case
    (``tf32`` is float32 with TF32 allowed): DeepBench's own names and torch's, any case; a
    blank cell is float32 (DeepBench's single-precision sheets)."""
    if raw is None or (isinstance(raw, float) and math.isnan(raw)) or str(raw).strip() == "":
        return "float32", ""
    name = str(raw).strip().lower()
    if name not in DEEPBENCH_SPELLINGS:
        known = ", ".join(sorted(DEEPBENCH_SPELLINGS))
        raise BadCell(f"unknown dtype {raw!r} (known: {known})")
    return DEEPBENCH_SPELLINGS[name], name


#: The size columns of a DeepBench convolution row, named as the conv2d attrs.
_DEEPBENCH_CONV_COLUMNS = (
    "N",
    "C",
    "H",
    "W",
    "K",
    "R",
    "S",
    "pad_h",
    "pad_w",
    "stride_h",
    "stride_w",
)


def deepbench_conv_attrs(r: Any) -> dict[str, Any]:
    """The conv2d attrs of a DeepBench-schema convolution row."""
    return {c: size_cell(getattr(r, c)) for c in _DEEPBENCH_CONV_COLUMNS}


class NoRule(ValueError):
    """A row of an op no shape rule knows: left out (not guessed), and named."""

    def __init__(self, source: str, op: str) -> None:
        super().__init__(f"no rule for {source} op {op!r}")
        self.op = op


def _op_name(r: Any) -> str:
    """The row's op name; a blank cell is a row without a readable shape, not an op."""
    raw = r.op
    if raw is None or (isinstance(raw, float) and math.isnan(raw)) or not str(raw).strip():
        raise ValueError("blank op cell")
    return str(raw).strip()


#: Elementwise ops of more than one tensor operand, by NeuSight's names or the profiler's.
_MANY_OPERANDS = frozenset(NEUSIGHT_BINARY | (ELEMENTWISE_FNS - UNARY_FNS))


def _elementwise(op: str) -> tuple[str, int] | None:
    """``(fn, tensor operands)`` of a NeuSight-named elementwise op, None if it is none:
    NeuSight's own names, and the elementwise ops the profiler rules know (a collected or
    held-back table may time others: softplus, maximum, where); a trailing ``u`` on an op
    of two or three operands takes a scalar for one of them (NeuSight's ``addu``).

    >>> _elementwise("addu"), _elementwise("relu"), _elementwise("where"), _elementwise("zap")
    (('add', 1), ('relu', 1), ('where', 3), None)
    """
    if op in _MANY_OPERANDS:
        return op, 3 if op in TERNARY_FNS else 2
    if op in NEUSIGHT_UNARY or op in UNARY_FNS:
        return op, 1
    if op.endswith("u") and op[:-1] in _MANY_OPERANDS:
        return op[:-1], 2 if op[:-1] in TERNARY_FNS else 1
    return None


_NEUSIGHT_SHAPED = ("linear", "bmm", "conv", "ln", "softmax")


def neusight_named(op: str) -> bool:
    """Whether NeuSight's own rules read ``op`` (its GEMMs, convolutions, norms, softmax and
    elementwise ops); other ops are read as the profiler's ATen op of that name.

    >>> neusight_named("addu"), neusight_named("ln"), neusight_named("sum")
    (True, True, False)
    """
    return op in _NEUSIGHT_SHAPED or _elementwise(op) is not None


def neusight_op(r: Any, other: bool = False) -> tuple[str, dict[str, Any]]:
    """Kind and attrs of a NeuSight-schema row.

    An op NeuSight's rules do not name (a collected or held-back table may time ``sum``,
    ``layer_norm``, ``max_pool2d``...) raises :class:`NoRule` (a fit leaves it out); with
    ``other`` (a prediction) it is read as the profiler reads ``aten::<op>`` over one tensor
    of ``B x H_dim`` elements: a shape rule where one applies, else the catch-all with the
    row's ``flops`` and ``bytes_min``. With neither a ``B x H_dim`` shape nor a byte count it
    has no readable shape.
    """
    op = _op_name(r)
    ew = _elementwise(op)
    if op not in _NEUSIGHT_SHAPED and ew is None:
        if not other:
            raise NoRule("NeuSight", op)  # not fitted on a guess
        return _neusight_other(r, op)
    if op in ("linear", "bmm"):
        # NeuSight's columns: N is the contracted dimension and K the output columns.
        b, m, n_in, n_out = size_cell(r.B), size_cell(r.M), size_cell(r.N), size_cell(r.K)
        if op == "linear":
            return "matmul", {"M": b * m, "N": n_out, "K": n_in}
        return "matmul", {"B": b, "M": m, "N": n_out, "K": n_in}
    if op == "conv":
        k, s, p = size_cell(r.kernel), size_cell(r.stride), size_cell(r.pad)
        n, c, h, w = (size_cell(v) for v in (r.B, r.Cin, r.H, r.W))
        return "conv2d", {"N": n, "C": c, "H": h, "W": w, "K": size_cell(r.Cout), "R": k, "S": k,
                          "stride_h": s, "stride_w": s, "pad_h": p, "pad_w": p}  # fmt: skip
    rows, cols = size_cell(r.B), size_cell(r.H_dim)
    if op == "ln":
        return "layernorm", {"rows": rows, "cols": cols}
    if op == "softmax":
        return "softmax", {"rows": rows, "cols": cols}
    assert ew is not None
    return "elementwise", {"numel": rows * cols, "arity": ew[1], "fn": ew[0]}


def _finite(v: Any) -> bool:
    """Whether a table cell holds a finite number (not blank, text or NaN)."""
    return isinstance(v, int | float) and math.isfinite(v)


def _neusight_other(r: Any, op: str) -> tuple[str, dict[str, Any]]:
    try:
        dims: list[Any] = [[size_cell(r.B), size_cell(r.H_dim)]]
    except (ValueError, TypeError, AttributeError):
        dims = []
    by = getattr(r, "bytes_min", None)
    if not dims and not _finite(by):
        raise ValueError(f"no B x H_dim shape and no bytes_min for NeuSight op {op!r}")
    raw = str(getattr(r, "dtype", "") or "").removeprefix("torch.")
    spelt = {"float16": "half", "half": "half", "bfloat16": "bfloat16"}.get(raw, "float")
    name = op if "::" in op else f"aten::{op}"
    return profiled_kind(name, dims, [spelt] if dims else [], "", "",
                         getattr(r, "flops", None), by)  # fmt: skip


def vidur_op(r: Any) -> tuple[str, dict[str, Any]]:
    op = _op_name(r)
    if op.endswith("_proj"):
        return "matmul", {"M": size_cell(r.M), "N": size_cell(r.N), "K": size_cell(r.K)}
    if op.endswith("layernorm") or op == "emb":
        tokens, embd = size_cell(r.num_tokens), size_cell(r.n_embd)
        if op == "emb":
            return "embedding", {"tokens": tokens, "dim": embd}
        kind = "layernorm" if "phi" in str(getattr(r, "model", "")).lower() else "rmsnorm"
        return kind, {"rows": tokens, "cols": embd}
    if op not in ("add", "mlp_act", "attn_rope"):
        raise NoRule("Vidur", op)  # named before its size cells are read
    elems = size_cell(r.elems)
    if op == "add":
        return "elementwise", {"numel": elems, "arity": 2, "fn": "add"}
    if op == "mlp_act":
        gated = str(getattr(r, "gated_mlp", "True")).lower() == "true"
        return "elementwise", {"numel": elems, "arity": 2 if gated else 1,
                               "fn": "silu_mul" if gated else "gelu"}  # fmt: skip
    return "elementwise", {"numel": elems, "arity": 1, "fn": "rope"}  # attn_rope


def profiler_op(
    r: Any, dims_col: str, types_col: str, shape: str | None = None, n_kernels: Any = None
) -> tuple[str, dict[str, Any]]:
    """Kind and attrs of a profiler row; ``shape``, when given, is read in place of the row's
    own ``shape`` cell (a kernel table's paired backward leaves, which have none), and
    ``n_kernels`` in place of its ``n_kernels`` cell (a kernel table has none: the kernel
    rows of the op's instance)."""
    dims = json.loads(getattr(r, dims_col)) if isinstance(getattr(r, dims_col), str) else []
    types = json.loads(getattr(r, types_col)) if isinstance(getattr(r, types_col), str) else []
    kern = getattr(r, "kernels", "")
    if shape is None:
        shape = getattr(r, "shape", "")
    return profiled_kind(
        str(r.op),
        dims,
        types,
        shape if isinstance(shape, str) else "",
        kern if isinstance(kern, str) else "",
        getattr(r, "flops", None),
        getattr(r, "bytes_min", None),
        getattr(r, "n_kernels", None) if n_kernels is None else n_kernels,
    )


def _kernel_count(cell: Any, listed: int) -> int:
    """An ``n_kernels`` cell as a count; a blank one (None, NaN, empty) gives ``listed``.

    >>> _kernel_count(float("nan"), 3), _kernel_count("6", 3)
    (3, 6)
    >>> _kernel_count(2.5, 1)
    Traceback (most recent call last):
    opsched.cost.sources.BadCell: n_kernels 2.5 is not a count of kernels
    """
    if cell is None or (isinstance(cell, str) and not cell.strip()):
        return listed
    try:
        f = float(cell)
    except (TypeError, ValueError):
        raise BadCell(f"n_kernels {cell!r} is not a count of kernels") from None
    if math.isnan(f):
        return listed
    if not (0 <= f <= kinds.MAX_SIZE and f == int(f)) or isinstance(cell, bool):
        raise BadCell(f"n_kernels {cell!r} is not a count of kernels")
    return int(f)


def profiled_kind(
    op: str,
    dims: list[Any],
    types: list[Any],
    shape_text: str = "",
    kernel_names: str = "",
    flops: Any = None,
    bytes_min: Any = None,
    n_kernels: Any = None,
) -> tuple[str, dict[str, Any]]:
    """Kind and attrs of a profiled aten op, as the fit reads a profiler row: the shape rules
    of :func:`~opsched.cost.aten.aten_kind` where one applies, else ``opaque`` with the row's
    own FLOP and byte counts; without a byte count, the bytes of the tensor inputs it records
    (0 when it records none). Also prices the kind-less ops of an imported trace
    (:func:`opsched.cost.apply.apply`).

    An ``opaque`` op also carries its name (``fn``, so the k-fold groups of the catch-all
    are an op's shapes, not every op of the same byte count), the kernels it launched
    (``n_kernels``: the row's count, else the names in ``kernel_names``; at least 1) and
    ``comm``, 1 for a collective (an op named in :data:`COMM_PREFIXES`, or one that ran an
    NCCL kernel): features of the catch-all's curve
    (:func:`opsched.cost.features.feature_matrix`).

    >>> profiled_kind("aten::mm", [[64, 32], [32, 16]], ["float", "float"])[0]
    'matmul'
    >>> profiled_kind("fbgemm::permute", [[300]], ["int"])  # doctest: +NORMALIZE_WHITESPACE
    ('opaque', {'flops': 0, 'bytes': 1200, 'numel': 300, 'dtype': 'int32',
                'fn': 'fbgemm::permute', 'n_kernels': 1, 'comm': 0})
    >>> profiled_kind("record_param_comms", [], [], "", "ncclKernel_AllReduce | x")[1]["comm"]
    1
    """
    found = aten_kind(op, dims, types, shape_text, kernel_names)
    if found is not None:
        return found
    # counts, not sizes: a fraction (a table's averaged FLOPs) is rounded, not refused
    fl = size_cell(round(flops)) if _finite(flops) else 0
    by = size_cell(round(bytes_min)) if _finite(bytes_min) else input_bytes(dims, types)
    names = [k for k in kernel_names.split(" | ") if k.strip()]
    count = _kernel_count(n_kernels, len(names))
    comm = op.startswith(COMM_PREFIXES) or any("nccl" in k.lower() for k in names)
    return "opaque", {"flops": fl, "bytes": by, "numel": max(1, by // 4),
                      "dtype": aten_dtype(types), "fn": op, "n_kernels": max(1, count),
                      "comm": int(comm)}  # fmt: skip

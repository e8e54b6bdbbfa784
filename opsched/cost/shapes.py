"""The op shapes ``opsched cost collect`` times, and their FLOP / byte counts.

- :func:`default_grid`: the built-in sweep (ResNet-style convolutions, GEMMs, elementwise
  and normalisation rows);
- :func:`specs_from_rows`: the shapes of an existing timing table in the NeuSight column
  schema, to re-time on another device. A user with a new GPU who wants to know how well
  the cost model transfers to it runs ``opsched cost collect --device cuda --shapes
  neusight_ops.csv.gz --per-op 30`` and ``opsched cost evaluate`` on the output. Rows whose
  op the collector does not time, and convolutions with a non-square input (the collector
  builds square ones), are skipped and counted; a shape measured on several GPUs is timed
  once;
- :func:`op_counts`: FLOPs and minimal bytes in the NeuSight table's conventions.

Examples
--------
>>> specs = default_grid(quick=True)
>>> sorted({s["op"] for s in specs})[:5]
['add', 'addu', 'bmm', 'conv', 'div']
>>> op_counts({"op": "bmm", "B": 2, "M": 4, "N": 8, "K": 16}, 4)
(2048, 1792)
>>> import pandas as pd
>>> t = pd.DataFrame({"op": ["bmm", "bmm", "relu", "lstm"], "B": [2, 2, 64, 1],
...                   "M": [8, 8, None, None], "N": [16, 16, None, None],
...                   "K": [4, 4, None, None], "H_dim": [None, None, 128, None]})
>>> specs, skipped = specs_from_rows(t)
>>> specs
[{'op': 'bmm', 'B': 2, 'M': 8, 'N': 16, 'K': 4}, {'op': 'relu', 'B': 64, 'H_dim': 128}]
>>> skipped
1
"""

from __future__ import annotations

import math
import random
from typing import Any

from opsched.errors import InputError

__all__ = [
    "BINARY_OPS",
    "DTYPE_BYTES",
    "OPS",
    "SCALAR_OPS",
    "SPEC_FIELDS",
    "UNARY_OPS",
    "default_grid",
    "op_counts",
    "out_hw",
    "shape_text",
    "specs_from_rows",
]

BINARY_OPS = ("add", "mul", "div", "pow")
SCALAR_OPS = ("addu", "mulu", "divu", "powu")
UNARY_OPS = ("relu", "gelu", "tanh")
OPS = ("linear", "bmm", "conv", *BINARY_OPS, *SCALAR_OPS, *UNARY_OPS, "ln", "softmax")
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def default_grid(quick: bool = False) -> list[dict[str, Any]]:
    """The shapes timed by :func:`collect`: a few tiny ones with ``quick``, else a sweep."""
    if quick:
        lin = [(1, 64, 64, 64), (1, 128, 256, 64)]
        bmm = [(4, 32, 32, 32)]
        conv = [(2, 8, 16, 3, 16, 1, 1), (2, 16, 16, 1, 16, 2, 0)]
        rows = [(64, 128)]
    else:
        sizes = (128, 512, 2048)
        lin = [(1, m, n, k) for m in (16, 256, 2048) for n in sizes for k in sizes]
        bmm = [
            (b, m, n, k) for b in (8, 64) for m in (64, 256) for n in (64, 256) for k in (64, 256)
        ]
        conv = [  # N, Cin, Cout, kernel, H, stride, pad: ResNet-style layers, batch 8 and 32
            (n, *layer)
            for n in (8, 32)
            for layer in (
                (3, 64, 7, 224, 2, 3),
                (64, 64, 3, 56, 1, 1),
                (64, 256, 1, 56, 1, 0),
                (128, 128, 3, 28, 1, 1),
                (256, 512, 1, 56, 2, 0),
                (256, 256, 3, 14, 1, 1),
                (512, 512, 3, 7, 1, 1),
                (1024, 256, 1, 14, 1, 0),
            )
        ]
        rows = [(256, 256), (1024, 1024), (4096, 1024), (4096, 4096), (16384, 4096)]
    specs: list[dict[str, Any]] = []
    specs += [{"op": "linear", "B": b, "M": m, "N": n, "K": k} for b, m, n, k in lin]
    specs += [{"op": "bmm", "B": b, "M": m, "N": n, "K": k} for b, m, n, k in bmm]
    specs += [
        {
            "op": "conv",
            "B": n,
            "Cin": ci,
            "Cout": co,
            "kernel": kk,
            "H": h,
            "W": h,
            "stride": st,
            "pad": pd,
        }
        for n, ci, co, kk, h, st, pd in conv
    ]
    for name in (*BINARY_OPS, *SCALAR_OPS, *UNARY_OPS, "ln", "softmax"):
        specs += [{"op": name, "B": b, "H_dim": hd} for b, hd in rows]
    return specs


def out_hw(spec: dict[str, Any]) -> int:
    return (spec["H"] + 2 * spec["pad"] - spec["kernel"]) // spec["stride"] + 1


def op_counts(spec: dict[str, Any], elem: int) -> tuple[int, int]:
    """FLOPs and minimal bytes of one op, in the NeuSight table's conventions."""
    op = spec["op"]
    if op == "linear":
        b, m, n, k = spec["B"], spec["M"], spec["N"], spec["K"]
        return 2 * b * m * n * k + b * m * k, elem * (b * m * n + k * n + k + b * m * k)
    if op == "bmm":
        b, m, n, k = spec["B"], spec["M"], spec["N"], spec["K"]
        return 2 * b * m * n * k, elem * (b * m * n + b * n * k + b * m * k)
    if op == "conv":
        b, ci, co, kk, h = spec["B"], spec["Cin"], spec["Cout"], spec["kernel"], spec["H"]
        p = out_hw(spec)
        return 2 * b * co * ci * kk * kk * p * p, elem * (
            b * ci * h * h + co * ci * kk * kk + b * co * p * p
        )
    n = spec["B"] * spec["H_dim"]
    if op in BINARY_OPS:
        return n, 3 * elem * n
    if op == "ln":
        return 8 * n, elem * (2 * n + 2 * spec["H_dim"])
    if op == "softmax":
        return 5 * n, 2 * elem * n
    return n, 2 * elem * n  # scalar and unary elementwise


def shape_text(spec: dict[str, Any]) -> str:
    op = spec["op"]
    if op == "linear":
        return f"x=[{spec['B']},{spec['M']},{spec['N']}] W=[{spec['K']},{spec['N']}] bias"
    if op == "bmm":
        b = spec["B"]
        return f"a=[{b},{spec['M']},{spec['N']}] b=[{b},{spec['N']},{spec['K']}]"
    if op == "conv":
        s, p = spec, out_hw(spec)
        return (
            f"x=[{s['B']},{s['Cin']},{s['H']},{s['W']}] w=[{s['Cout']},{s['Cin']},"
            f"{s['kernel']},{s['kernel']}] stride={s['stride']} pad={s['pad']} "
            f"out=[{s['B']},{s['Cout']},{p},{p}] bias=False"
        )
    x = f"x=[{spec['B']},{spec['H_dim']}]"
    return x + (" y=[same]" if op in BINARY_OPS else " scalar" if op in SCALAR_OPS else "")


#: op -> the integer columns that define its shape (NeuSight schema).
SPEC_FIELDS: dict[str, tuple[str, ...]] = {
    "linear": ("B", "M", "N", "K"),
    "bmm": ("B", "M", "N", "K"),
    "conv": ("B", "Cin", "Cout", "kernel", "H", "W", "stride", "pad"),
}
_ROW_FIELDS = ("B", "H_dim")  # every other op collect knows: a B x H_dim tensor


def _positive_int(v: Any, col: str, source: str, idx: int) -> int:
    try:
        f = float(v)
    except (TypeError, ValueError):
        f = math.nan
    if not math.isfinite(f) or f != int(f) or f < 0:
        what = "a non-negative integer" if math.isfinite(f) else "a number"
        # idx + 2: the header is line 1
        raise InputError(f"{source} row {idx + 2}: column {col} is {v!r}, not {what}")
    return int(f)


def specs_from_rows(
    frame: Any, per_op: int | None = None, seed: int = 0, source: str = "shapes table"
) -> tuple[list[dict[str, Any]], int]:
    """The distinct shapes of ``frame`` as collector specs, and how many rows were skipped.

    ``per_op`` keeps at most that many shapes of each op, drawn evenly over the op's shapes
    sorted by size (so a sample spans small and large ones); ``seed`` only breaks ties in
    that order. The result is ordered by op, then size.

    Raises
    ------
    InputError
        The table lacks the ``op`` column or a column an op needs, or a shape value is not a
        non-negative integer (naming the row).
    """
    if "op" not in frame.columns:
        raise InputError(f"{source}: no 'op' column (shapes come from NeuSight-schema tables)")
    by_op: dict[str, dict[tuple[int, ...], dict[str, Any]]] = {}
    for op in set(frame["op"]) & set(OPS):
        missing = [c for c in SPEC_FIELDS.get(op, _ROW_FIELDS) if c not in frame.columns]
        if missing:
            raise InputError(f"{source}: op {op} needs column(s) {', '.join(missing)}")
    skipped = 0
    for idx, rec in enumerate(frame.to_dict("records")):
        op = rec["op"]
        if op not in OPS:
            skipped += 1
            continue
        fields = SPEC_FIELDS.get(op, _ROW_FIELDS)
        vals = tuple(_positive_int(rec[c], c, source, idx) for c in fields)
        spec = {"op": op, **dict(zip(fields, vals, strict=True))}
        if op == "conv" and spec["H"] != spec["W"]:
            skipped += 1
            continue
        by_op.setdefault(op, {}).setdefault(vals, spec)
    rng = random.Random(seed)
    specs: list[dict[str, Any]] = []
    for op in sorted(by_op):
        shapes = list(by_op[op].values())
        rng.shuffle(shapes)  # ties in size keep a seeded order
        shapes.sort(key=lambda s: op_counts(s, 4))  # by FLOPs, then bytes
        if per_op is not None and len(shapes) > per_op:
            step = len(shapes) / per_op
            shapes = [shapes[int(i * step + step / 2)] for i in range(per_op)]
        specs += shapes
    return specs, skipped

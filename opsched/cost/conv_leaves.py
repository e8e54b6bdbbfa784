"""Shapes of cuDNN's backward-convolution leaves in a kernel-level profiler table.

Older PyTorch runs a convolution's backward as two leaf ops under
``aten::cudnn_convolution_backward``: ``..._backward_input`` records ``(input size,
grad_output, weight)`` and ``..._backward_weight`` records ``(weight size, grad_output,
input)``, the sizes as int lists whose values the profiler does not keep. So neither leaf
alone gives its convolution: the data half lacks the input's height and width (its
stride), the filter half the filter's size. The per-op tables carry a curated ``shape``
column for this (``dy=[..] w=[..] (dgrad)``); a kernel-level table (``profiler_kernels``)
does not, and its rows had been priced as ``opaque`` ops.

The two halves of one backward run one after the other on the same thread, the data half
first, so :func:`leaf_shapes` pairs each data leaf with the next of the table's leaf
instances (ordered by thread and start time, read from ``op_instance`` =
``pid:tid:start``) and each filter leaf with the one before, when that one is the other
half, on the same ``grad_output``, with the weight's filter count matching ``grad_output``'s
channels and its input channels dividing the input's. The
pair gives ``dy``, ``w``, ``x`` and the stride (input height over output height), written as
the shape text the per-op tables use, which :func:`opsched.cost.aten.aten_kind` reads. A
leaf without such a neighbour (the first convolution computes no input gradient) keeps no
shape and stays ``opaque``.

Examples
--------
>>> import pandas as pd
>>> df = pd.DataFrame({
...     "op": ["aten::cudnn_convolution_backward_input", "aten::cudnn_convolution_backward_weight"],
...     "op_instance": ["1:2:100", "1:2:150"],
...     "op_input_dims": ["[[], [8, 16, 7, 7], [16, 4, 3, 3]]",
...                       "[[], [8, 16, 7, 7], [8, 4, 14, 14]]"],
... })
>>> leaf_shapes(df)[0]
'dy=[8,16,7,7] w=[16,4,3,3] x=[8,4,14,14] stride~2'
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["LEAVES", "leaf_shapes", "op_table_shapes"]

#: The two leaf ops and the half each computes.
LEAVES = {
    "aten::cudnn_convolution_backward_input": "data",
    "aten::cudnn_convolution_backward_weight": "filter",
}
_INSTANCE = re.compile(r"^(\d+):(\d+):(\d+)$")


def _tensors(cell: Any) -> tuple[list[int], list[int]] | None:
    """``grad_output`` and the other tensor (weight or input) of a leaf's recorded dims."""
    try:
        dims = json.loads(cell) if isinstance(cell, str) else None
        dy, other = dims[1], dims[2]  # type: ignore[index]
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    if not (isinstance(dy, list) and isinstance(other, list) and len(dy) == len(other) == 4):
        return None
    if not all(isinstance(v, int) and v > 0 for v in dy + other):
        return None
    return dy, other


def _stride(size: int, out: int, window: int) -> int | None:
    """The least stride that sweeps a ``window`` over ``size`` (padded by 0 to ``window // 2``
    on each side) to ``out`` positions; None if none up to 8 does."""
    for s in range(1, 9):
        if any((size + 2 * p - window) // s + 1 == out for p in range(window // 2 + 1)):
            return s
    return None


def _text(dy: list[int], w: list[int], x: list[int]) -> str | None:
    """The pair's shape text; None if no stride fits (read along the width where the
    height is 1, as a 1-D convolution run as 2-D)."""
    axis = 2 if dy[2] > 1 or x[2] > 1 else 3
    stride = _stride(x[axis], dy[axis], w[axis])
    if stride is None:
        return None
    f = lambda v: "[" + ",".join(map(str, v)) + "]"  # noqa: E731
    return f"dy={f(dy)} w={f(w)} x={f(x)} stride~{stride}"


def leaf_shapes(df: Any) -> dict[int, str]:
    """Row position -> shape text for the backward leaves of ``df`` whose other half was
    found (see the module docstring); other rows are not in the result. Rows without an
    instance id are not paired; ids not of the form ``pid:tid:start`` are ordered by row
    position, as one thread. With a ``source`` column, each source is its own trace."""
    if not {"op", "op_instance", "op_input_dims"} <= set(df.columns):
        return {}
    sources = df["source"].tolist() if "source" in df.columns else [None] * len(df)
    first: dict[Any, int] = {}  # (source, instance) -> its first row position
    rows: dict[Any, list[int]] = {}
    for pos, (op, inst, src) in enumerate(zip(df["op"], df["op_instance"], sources, strict=True)):
        if op in LEAVES and isinstance(inst, str):
            first.setdefault((src, inst), pos)
            rows.setdefault((src, inst), []).append(pos)
    leaves = []
    for key, pos in first.items():
        got = _tensors(df["op_input_dims"].iloc[pos])
        if got is None:
            continue
        m = _INSTANCE.match(key[1])
        tid, start = ((m.group(1), m.group(2)), int(m.group(3))) if m else (None, pos)
        leaves.append((str((key[0], tid)), start, LEAVES[df["op"].iloc[pos]], got, key))
    leaves.sort(key=lambda v: (v[0], v[1]))
    out: dict[int, str] = {}
    for i, (thread, _, half, (dy, other), key) in enumerate(leaves):
        # PyTorch runs the data half first, then the filter half
        j = i + 1 if half == "data" else i - 1
        if not 0 <= j < len(leaves):
            continue
        thread2, _, half2, (dy2, other2), _ = leaves[j]
        if thread2 != thread or half2 == half or dy2 != dy:
            continue
        w, x = (other, other2) if half == "data" else (other2, other)
        # K filters of C / groups channels each, over the same batch
        if w[0] != dy[1] or x[1] % w[1] != 0 or x[0] != dy[0]:
            continue
        text = _text(dy, w, x)
        if text is not None:
            for pos in rows[key]:
                out[pos] = text
    return out


def _dims_key(cell: Any) -> str | None:
    """A recorded-dims cell in one spelling (None when it does not parse)."""
    try:
        return json.dumps(json.loads(cell)) if isinstance(cell, str) else None
    except ValueError:
        return None


def _sources(df: Any, use: bool) -> list[str | None]:
    """Each row's ``source``, blank cells as None; all None unless ``use``."""
    from opsched.cost.data import blank_cell  # data imports this module

    if not use:
        return [None] * len(df)
    return [None if blank_cell(s) else str(s).strip() for s in df["source"].tolist()]


def op_table_shapes(ops: Any, kernels: Any) -> dict[int, str]:
    """Row position -> shape text for the backward leaves of a per-op table (``ops``,
    schema ``profiler_ops``), read from the kernel-level table of the same traces.

    The per-op tables' curated ``shape`` cannot tell a leaf's stride (the data half's text
    is ``dy=[..] w=[..]``) nor, where the profiler kept only ``grad_output`` and the
    input, a filter half's filter size, so two convolutions of one ``grad_output`` share a
    text: in ``kineto_resnet50_v100_ops.csv.gz`` the stride-2 data halves read as stride 1
    (72 rows), and 12 filter halves of a 1x1 convolution read as 3x3. The kernel table
    has the instances, which :func:`leaf_shapes` pairs. Each per-op row is matched to an
    instance of the kernel table with the same source (where both tables have one; blank
    cells alike), op, recorded dims and GPU time (the sum of the instance's kernel times,
    rounded to 0.001 us on both sides, so both must come from the same recorded times; an
    instance with a kernel of no time matches nothing); a row takes the paired text only
    when every instance it could match has the same one, else it keeps its own.

    >>> import pandas as pd
    >>> kern = pd.DataFrame({
    ...     "op": ["aten::cudnn_convolution_backward_input"] * 2
    ...           + ["aten::cudnn_convolution_backward_weight"],
    ...     "op_instance": ["1:2:100", "1:2:100", "1:2:150"],
    ...     "op_input_dims": ["[[], [8, 16, 7, 7], [16, 4, 3, 3]]"] * 2
    ...                      + ["[[], [8, 16, 7, 7], [8, 4, 14, 14]]"],
    ...     "kernel_dur_us": [3.0, 40.0, 50.0]})
    >>> ops = pd.DataFrame({"op": ["aten::cudnn_convolution_backward_input"],
    ...     "input_dims": ["[[], [8, 16, 7, 7], [16, 4, 3, 3]]"], "gpu_time_us": [43.0]})
    >>> op_table_shapes(ops, kern)
    {0: 'dy=[8,16,7,7] w=[16,4,3,3] x=[8,4,14,14] stride~2'}
    """
    need_k = {"op", "op_instance", "op_input_dims", "kernel_dur_us"}
    if not (need_k <= set(kernels.columns) and {"op", "input_dims", "gpu_time_us"}
            <= set(ops.columns)):  # fmt: skip
        return {}
    if not ops["op"].isin(list(LEAVES)).any():
        return {}
    texts = leaf_shapes(kernels)
    both = "source" in kernels.columns and "source" in ops.columns
    k_src = _sources(kernels, both)
    inst: dict[Any, list[Any]] = {}  # (source, instance) -> [op, dims, time, text]
    cols = (kernels[c] for c in ("op", "op_instance", "op_input_dims", "kernel_dur_us"))
    for pos, (op, name, dims, dur) in enumerate(zip(*cols, strict=True)):
        if op not in LEAVES or not isinstance(name, str):
            continue
        got = inst.setdefault((k_src[pos], name), [op, _dims_key(dims), 0.0, texts.get(pos)])
        try:
            got[2] += float(dur)
        except (TypeError, ValueError):  # a kernel without a time: the sum is unknown
            got[2] = math.nan
    seen: dict[tuple[Any, ...], set[str | None]] = {}
    for (src, _), (op, dims, t, text) in inst.items():
        if math.isfinite(t):
            seen.setdefault((src, op, dims, round(t, 3)), set()).add(text)
    o_src = _sources(ops, both)
    out: dict[int, str] = {}
    for pos, (op, dims, t) in enumerate(
        zip(ops["op"], ops["input_dims"], ops["gpu_time_us"], strict=True)
    ):
        if op not in LEAVES:
            continue
        try:
            key = (o_src[pos], op, _dims_key(dims), round(float(t), 3))
        except (TypeError, ValueError):
            continue
        found = seen.get(key, set())
        text = next(iter(found)) if len(found) == 1 else None
        if text is not None:
            out[pos] = text
    return out

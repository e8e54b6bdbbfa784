"""Fill an op graph's durations, output sizes and SM demands from a GPU's cost profile.

Examples
--------
>>> from opsched.ir import Op, OpGraph
>>> g = OpGraph((Op("x", kind="input", attrs={"numel": 1024}),
...              Op("mm", deps=("x",), kind="matmul", attrs={"M": 32, "N": 32, "K": 32})))
>>> out = apply(g, "T4", "float16")
>>> out["x"].duration, out["x"].output_bytes, out["mm"].output_bytes, out.resources["sm"]
(0.0, 2048, 2048, 40)
>>> out["mm"].duration > 0, out["mm"].demands["sm"], out.attrs["time_unit"]
(True, 1, 'us')
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from opsched.cost.batch import distinct_ops
from opsched.cost.mathmode import MathMode, kernel_math_mode, with_math_dtype
from opsched.errors import GraphError
from opsched.ir import Op, OpGraph, kinds
from opsched.ir.graph import require_graph

__all__ = ["MAX_TICKS", "apply"]

#: Most ticks an op's duration may be (2**53: past it, a float no longer holds every integer).
MAX_TICKS = float(2**53)


def apply(
    graph: OpGraph,
    gpu: str,
    dtype: str | None = None,
    tick_us: float | None = None,
    allow_tf32: bool | None = None,
) -> OpGraph:
    """Return ``graph`` with every op costed on ``gpu``.

    Parameters
    ----------
    graph
        Ops with a ``kind`` of :mod:`opsched.ir.kinds` and its shape ``attrs``.
    gpu
        GPU name (``"A100-SXM4-80GB"``, ``"H200"``... see :func:`opsched.cost.known_gpus`).
    dtype
        Precision of every op (written into ``attrs["dtype"]``); None keeps each op's own
        dtype (float32 when absent).
    tick_us
        If given, durations become integer ticks of this many microseconds (rounded, at least
        1 for an op that takes time), for solvers that need integers; otherwise microseconds.
    allow_tf32
        Math mode of float32 GEMMs and convolutions on GPUs with TF32 tensor cores
        (:mod:`opsched.cost.mathmode`): None follows PyTorch's defaults (convolutions in TF32,
        matmuls in FP32), except for an op whose recorded kernel names
        (``attrs["kernels"]``, from ``opsched import-trace``) show the math it ran, which is
        priced so and marked ``attrs["math_mode"]``; True / False runs every one in TF32 /
        FP32. Op dtypes stay as they are.

    Returns
    -------
    OpGraph
        ``duration`` = predicted kernel time (us, or ticks); ``output_bytes`` =
        ``output_numel x dtype size`` (0 for ``view`` and for an op marked
        ``attrs["aliases"]``, in place; at least the graph's own figure in that dtype, for an
        op of several outputs); ``persistent_bytes`` converted to ``dtype`` where the graph
        records its own (``attrs["dtype"]``); ``demands["sm"]`` = the op's
        SM footprint (thread blocks it launches, 1..SM count; 0 for ``view`` / ``input``);
        graph ``resources["sm"]`` = the GPU's SM count; ``attrs["time_unit"]`` says the unit.

    Raises
    ------
    GraphError
        An op without a kind, with an unknown kind or missing shape attrs (the op is named).
    InputError
        Unknown GPU.
    """
    require_graph(graph, "apply(graph, gpu)")
    from opsched.cost.profile import load_profile  # pandas, numba: loaded when pricing

    profile = load_profile(gpu)
    if dtype is not None:
        kinds.dtype_bytes({"dtype": dtype})
    if tick_us is not None and not (tick_us > 0 and math.isfinite(tick_us)):
        raise GraphError(f"tick must be a positive number of microseconds, got {tick_us!r}")
    traced: dict[int, float] = {}  # communication ops: index -> traced time (us)
    at, kind_list, attrs_list = [], [], []  # the ops to price: index, kind, attrs
    recorded: list[str] = []  # kind-less ops priced from their trace record
    shown: dict[int, dict[str, Any]] = {}  # op index -> attrs written, where priced otherwise
    for i, op in enumerate(graph.ops):
        if op.kind is None and _communication(op):
            traced[i] = float(op.attrs["gpu_time_us"])
            continue
        kind, a = op.kind, dict(op.attrs)
        if kind is None:
            found = _recorded_kind(op)
            if found is None:
                raise GraphError(
                    "op has no kind; the cost model needs kind and attrs", f"op {op.name!r}"
                )
            kind, a = found[0], a | found[1]
            recorded.append(op.name)
        if dtype is not None:
            a = _retyped(kind, a, dtype)
        mode = _kernels_math_mode(op) if allow_tf32 is None else None
        if mode is not None:  # a traced op: its kernels show the math it ran
            priced_as = dict(with_math_dtype(kind, a, profile.spec, mode=mode))
            if priced_as != a:
                shown[i] = a | {"math_mode": "tf32" if mode[0] else "fp32"}
                a = priced_as
        at.append(i)
        kind_list.append(kind)
        attrs_list.append(a)
    if recorded:
        warnings.warn(
            f"cost model: {len(recorded)} ops without a kind (first {recorded[0]!r}) priced "
            "from what their trace recorded: their shapes, as the timing rows are, or where no "
            "shape rule applies their kernels' launches",
            stacklevel=2,
        )
    if traced:
        warnings.warn(
            f"cost model: {len(traced)} communication ops (NCCL kernels; first "
            f"{graph.ops[min(traced)].name!r}) keep their traced time: the model prices "
            "compute kernels only",
            stacklevel=2,
        )
    # an op's price, output size and SM footprint follow from its kind and attrs: each is
    # worked out once per distinct op (predict_many would group them again otherwise)
    first, inverse = distinct_ops(kind_list, attrs_list)
    kinds_d, attrs_d = [kind_list[i] for i in first], [attrs_list[i] for i in first]
    try:
        times_d = profile.predict_many(kinds_d, attrs_d, allow_tf32=allow_tf32)
    except GraphError:
        for i, kind, a in zip(first, kinds_d, attrs_d, strict=True):  # find the op to blame
            try:
                profile.predict_many([kind], [a], allow_tf32=allow_tf32)
            except GraphError as e:
                raise GraphError(e.message, f"op {graph.ops[at[i]].name!r}") from None
        raise
    shapes = []
    for kind, a, t in zip(kinds_d, attrs_d, times_d, strict=True):
        out_bytes = 0 if kind == "view" else kinds.output_numel(kind, a) * kinds.dtype_bytes(a)
        shapes.append((float(t), out_bytes, profile.footprint(kind, a)))
    rows = zip(at, kind_list, attrs_list, inverse.tolist(), strict=True)
    priced = {i: (k, a, shapes[j]) for i, k, a, j in rows}  # op index -> its price
    ops = []
    for i, op in enumerate(graph.ops):
        if i in traced:  # as traced, on one SM (NCCL runs a few thread blocks)
            kind_i, a, (dur, out_bytes, sm) = None, dict(op.attrs), (traced[i], op.output_bytes, 1)
        else:
            kind_i, a, (dur, out_bytes, sm) = priced[i]
            a = shown.get(i, a)
        if tick_us is not None and dur > 0:
            ticks = dur / tick_us
            if not ticks <= MAX_TICKS:  # inf under a subnormal tick
                raise GraphError(
                    f"a tick of {tick_us:g} us makes this op {ticks:.3g} ticks long, over "
                    f"{MAX_TICKS:.3g} (2**53, the integers a float holds); use a longer tick",
                    f"op {op.name!r}",
                )
            dur = float(max(1, round(ticks)))
        out_bytes = _kept_bytes(op, kind_i, a, out_bytes)
        demands = dict(op.demands) | {"sm": sm}
        ops.append(Op(name=op.name, duration=dur, deps=op.deps, output_bytes=out_bytes,
                      workspace_bytes=op.workspace_bytes, demands=demands, kind=kind_i,
                      output=op.output, attrs=a, reads=op.reads, writes=op.writes))  # fmt: skip
    unit = "us" if tick_us is None else f"tick of {tick_us:g} us"
    # the durations are the cost model's now: a builder's placeholder note no longer holds
    attrs = {k: v for k, v in graph.attrs.items() if k != "duration_unit"} | {
        "time_unit": unit,
        "cost_model": {
            "gpu": profile.gpu,
            "dtype": dtype,
            "tick_us": tick_us,
            "allow_tf32": allow_tf32,
        },
    }
    resources = dict(graph.resources) | {"sm": profile.spec.sm_count}
    weights = graph.persistent_bytes
    built = graph.attrs.get("dtype")
    if dtype is not None and isinstance(built, str) and built in kinds.DTYPE_BYTES:
        # the weights are in the graph's dtype too: a float32 build applied in float16 had
        # kept float32 weights (twice the persistent bytes of the same network built in
        # float16) and said float32
        ratio = kinds.dtype_bytes({"dtype": dtype}) / kinds.dtype_bytes({"dtype": built})
        weights, attrs = round(weights * ratio), attrs | {"dtype": dtype}
    return graph.replace_ops(ops, resources=resources, attrs=attrs, persistent_bytes=weights)


def _kept_bytes(op: Op, kind: str | None, attrs: dict[str, Any], from_shapes: int) -> int:
    """The output size of ``op`` as priced in ``attrs``' dtype: the shapes' (one output), but
    no less than the graph's own figure scaled to that dtype (an op of several outputs, an
    ONNX ``Split``, had been cut to its first), and nothing for an op the importer marks as
    writing into memory it does not own (``attrs["aliases"]``: in-place ops), or a view."""
    if kind == "view" or op.attrs.get("aliases"):
        return 0
    if op.output_bytes <= 0 or kind is None:
        return from_shapes
    stated = kinds.dtype_bytes(op.attrs) if "dtype" in op.attrs else kinds.dtype_bytes(attrs)
    return max(from_shapes, round(op.output_bytes * kinds.dtype_bytes(attrs) / stated))


def _kernels_math_mode(op: Op) -> MathMode | None:
    """The math mode the names of a traced op's kernels show (``attrs["kernels"]``, as
    ``opsched import-trace`` records them), None where it has none or they do not say.

    PyTorch's default runs a float32 GEMM in FP32, but a trace records what ran: the HTA
    A100 trace's float32 ``mm`` / ``linear`` launched TF32 tensor-op GEMMs
    (``cutlass_80_tensorop_s1688gemm``), which the FP32 peak had priced 8-9x too slow.

    >>> _kernels_math_mode(Op("a", 1, attrs={"kernels": ["cutlass_80_tensorop_s1688gemm"]}))
    (True, True)
    >>> _kernels_math_mode(Op("a", 1)) is None
    True
    """
    names = op.attrs.get("kernels")
    if not isinstance(names, list | tuple) or not names:
        return None
    return kernel_math_mode(" ".join(str(n) for n in names))


def _retyped(kind: str, attrs: dict[str, Any], dtype: str) -> dict[str, Any]:
    """``attrs`` in ``dtype``: a stated ``bytes`` (the zoo states each op's traffic) is that
    of the dtype the graph was built in, so it is dropped where the shapes give the traffic,
    and scaled by the element sizes where they do not (``fused`` and ``opaque`` ops).

    >>> _retyped("matmul", {"M": 2, "N": 2, "K": 2, "bytes": 48, "dtype": "float32"}, "float16")
    {'M': 2, 'N': 2, 'K': 2, 'dtype': 'float16'}
    >>> _retyped("opaque", {"flops": 0, "bytes": 48, "numel": 4}, "float16")["bytes"]
    24
    """
    before = kinds.dtype_bytes(attrs)
    out = {**attrs, "dtype": dtype}
    if "bytes" not in attrs or kinds.dtype_bytes(out) == before:
        return out
    if "bytes" in kinds.KINDS.get(kind, ()):  # the stated traffic is all there is
        return out | {"bytes": round(float(attrs["bytes"]) * kinds.dtype_bytes(out) / before)}
    return {k: v for k, v in out.items() if k != "bytes"}


def _communication(op: Op) -> bool:
    """A traced op without a kind that ran NCCL kernels only (an all-reduce, an all-to-all),
    with its traced GPU time."""
    kernels = op.attrs.get("kernels")
    t = op.attrs.get("gpu_time_us")
    return (
        isinstance(kernels, list)
        and bool(kernels)
        and all(str(k).startswith("nccl") for k in kernels)
        and isinstance(t, int | float)
        and math.isfinite(t)
        and t >= 0
    )


def _recorded_kind(op: Op) -> tuple[str, dict[str, Any]] | None:
    """Kind and attrs of an op without a kind from what a profiler trace recorded of it (the
    importer keeps ``aten_op`` and, when shapes were recorded, ``input_dims``,
    ``input_types`` and ``kernels``), read as the fit reads a profiler row
    (:func:`opsched.cost.data.profiled_kind`). Where no shape rule applies, its kernels'
    launches (``launches``, :func:`opsched.cost.launch.launches_kind`) come before the
    ``opaque`` catch-all.
    None for an op with neither an ``aten_op`` nor launches that price it."""
    from opsched.cost.launch import launches_kind
    from opsched.cost.sources import BadCell, profiled_kind

    a = op.attrs
    name, dims, types = a.get("aten_op"), a.get("input_dims", []), a.get("input_types")
    found = None
    if isinstance(name, str) and isinstance(dims, list):
        kernels = a.get("kernels")
        kernel_names = " | ".join(map(str, kernels)) if isinstance(kernels, list) else ""
        try:  # the importer's own count: its kernels list keeps a few distinct names only
            found = profiled_kind(name, dims, types if isinstance(types, list) else [], "",
                                  kernel_names, n_kernels=a.get("n_kernels"))  # fmt: skip
        except BadCell as e:
            raise GraphError(str(e), f"op {op.name!r}") from None
        if found[0] != "opaque":
            return found
    # no shape rule: the kernels' launches where every one has a rule, else the catch-all
    return launches_kind(a.get("launches")) or found

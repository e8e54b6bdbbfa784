"""The op-kind vocabulary shared by the cost model, the model zoo and the importers.

Every op whose ``kind`` is one of :data:`KINDS` describes its shape in ``attrs`` with the
keys listed there (all integers unless noted) plus an optional ``dtype`` (default
``"float32"``). From those, :func:`flops` and :func:`bytes_min` give the work the cost model
starts from, and :func:`output_numel` the size of the op's result, so every producer of
graphs (zoo, torch / ONNX / HLO importers, fusion) and the cost model agree on one meaning.

Conventions
-----------
- ``matmul``: ``C[M,N] = A[M,K] @ B[K,N]``, optional batch ``B`` (``bmm`` is ``matmul`` with
  ``B > 1``; ``linear`` layers are matmuls with ``M`` = rows of the input).
- ``conv2d`` (and ``conv2d_bwd_data`` / ``conv2d_bwd_filter``): NCHW input ``N,C,H,W``, ``K``
  filters of ``R x S``, ``stride_h, stride_w, pad_h, pad_w`` (default 1 and 0), ``groups``
  (default 1). Output ``P x Q`` follows from them. FLOPs are the direct-convolution count
  ``2*N*K*(C/groups)*R*S*P*Q``.
- ``elementwise``: ``numel`` elements, ``arity`` inputs (1 unary, 2 binary; default 1),
  ``fn`` (``"relu"``, ``"add"``...). One FLOP per element and input.
- ``softmax``, ``layernorm``, ``rmsnorm``: ``rows x cols``, normalised along ``cols``.
- ``batchnorm``: ``numel`` elements (inference form: one read, one write), optional
  ``channels`` (``C`` of an ``N, C, ...`` input) and ``training`` (1: batch statistics, whose
  kernels run one thread block per channel, read by the cost model; ``fn = "backward"``
  implies it).
- ``pool``: like ``conv2d`` without ``K`` (channels kept), ``mode`` ``"max"`` or ``"avg"``;
  ``R = H, S = W`` is global pooling.
- ``reduce``: ``numel`` in, ``out_numel`` out (sum / mean over some axes).
- ``embedding``: ``tokens`` lookups of ``dim`` values (table of ``vocab`` rows).
- ``attention``: fused scaled-dot-product attention, ``B`` (batch x heads), ``Sq``, ``Skv``,
  ``D`` (head dimension), optional ``causal`` (0 / 1 or a bool, default 0: query ``i`` then
  sees keys ``0..i``, PyTorch's ``is_causal``, and only those score pairs count as work).
- ``copy``: ``numel`` elements moved (concat, transpose, layout change).
- ``view``: reshape / slice with no kernel: zero FLOPs and bytes, ``numel`` of the result.
- ``input``: a graph input or weight load, ``numel`` of the tensor; no compute.
- ``fused``: the result of the fusion pass, ``flops``, ``bytes`` and ``numel`` given directly.
- ``opaque``: an op no shape rule covers (an unrecognised aten op in a profiler table, an
  fbgemm or NCCL call): ``flops`` and ``bytes`` as recorded (or estimated), ``numel``;
  optionally its name ``fn``, the kernels it launched ``n_kernels`` and ``comm`` (1: a
  collective), which the cost model prices by.

Any op may also carry ``flops`` and ``bytes`` in ``attrs``; they then override the formulas.

Examples
--------
>>> flops("matmul", {"M": 64, "N": 32, "K": 16})
65536
>>> bytes_min("matmul", {"M": 64, "N": 32, "K": 16, "dtype": "float16"})
7168
>>> conv_out_hw({"H": 224, "W": 224, "R": 7, "S": 7, "stride_h": 2, "stride_w": 2,
...              "pad_h": 3, "pad_w": 3})
(112, 112)
>>> output_numel("conv2d", {"N": 1, "C": 3, "H": 224, "W": 224, "K": 64, "R": 7, "S": 7,
...              "stride_h": 2, "stride_w": 2, "pad_h": 3, "pad_w": 3})
802816
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opsched.errors import GraphError
from opsched.ir.op import MAX_SIZE as OP_MAX_SIZE

__all__ = [
    "DTYPE_BYTES",
    "FLAG_ATTRS",
    "KINDS",
    "MAX_SIZE",
    "SIZE_ATTRS",
    "attention_pairs",
    "batchnorm_blocks",
    "bytes_min",
    "check_sizes",
    "conv_out_hw",
    "dtype_bytes",
    "flops",
    "fused_of",
    "output_numel",
]

#: Element size of every dtype the cost model knows.
DTYPE_BYTES: Mapping[str, int] = {
    "float64": 8,
    "float32": 4,
    "tf32": 4,
    "float16": 2,
    "float16_fp32math": 2,  # half-precision storage, FP32 arithmetic (cost model only)
    "bfloat16": 2,
    "float8": 1,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "bool": 1,
    "complex64": 8,
    "complex128": 16,
}

#: kind -> required attrs (optional ones are documented in the module docstring).
KINDS: Mapping[str, tuple[str, ...]] = {
    "matmul": ("M", "N", "K"),
    "conv2d": ("N", "C", "H", "W", "K", "R", "S"),
    "conv2d_bwd_data": ("N", "C", "H", "W", "K", "R", "S"),
    "conv2d_bwd_filter": ("N", "C", "H", "W", "K", "R", "S"),
    "elementwise": ("numel",),
    "softmax": ("rows", "cols"),
    "layernorm": ("rows", "cols"),
    "rmsnorm": ("rows", "cols"),
    "batchnorm": ("numel",),
    "pool": ("N", "C", "H", "W", "R", "S"),
    "reduce": ("numel", "out_numel"),
    "embedding": ("tokens", "dim"),
    "attention": ("B", "Sq", "Skv", "D"),
    "copy": ("numel",),
    "view": ("numel",),
    "input": ("numel",),
    "fused": ("flops", "bytes", "numel"),
    "opaque": ("flops", "bytes", "numel"),
}


def dtype_bytes(attrs: Mapping[str, Any]) -> int:
    """Element size of ``attrs["dtype"]`` (default float32); unknown dtypes raise GraphError."""
    dt = attrs.get("dtype", "float32")
    try:
        return DTYPE_BYTES[dt]
    except KeyError:
        raise GraphError(f"unknown dtype {dt!r}; known: {', '.join(DTYPE_BYTES)}") from None


def _get(attrs: Mapping[str, Any], key: str, kind: str, default: int | None = None) -> int:
    v = attrs.get(key, default)
    if type(v) is int and 0 <= v <= MAX_SIZE:  # the common case, checked first
        return v
    if v is None:
        raise GraphError(f"{kind} op needs attrs[{key!r}]")
    if not _size_like(v):
        raise GraphError(_not_a_size(kind, key, v))
    return int(v)


#: Largest size any attr may state: the bound on an op's byte sizes
#: (:data:`opsched.ir.op.MAX_SIZE`); a product of up to 16 such sizes stays a finite float,
#: so FLOP and byte counts never overflow (``1e300`` elements is a typo, not a tensor).
MAX_SIZE = OP_MAX_SIZE


def _size_like(v: Any) -> bool:
    """A non-negative integer up to :data:`MAX_SIZE`, or a float equal to one (not NaN)."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= MAX_SIZE:
        return False
    return isinstance(v, int) or v == int(v)


def _not_a_size(kind: str, key: str, v: Any) -> str:
    return f"{kind} attrs[{key!r}] must be a non-negative integer up to 2**62, got {v!r}"


def conv_out_hw(attrs: Mapping[str, Any], kind: str = "conv2d") -> tuple[int, int]:
    """Output height and width of a convolution or pooling window over ``H x W``."""
    h, w = _get(attrs, "H", kind), _get(attrs, "W", kind)
    r, s = _get(attrs, "R", kind), _get(attrs, "S", kind)
    sh, sw = _get(attrs, "stride_h", kind, 1), _get(attrs, "stride_w", kind, 1)
    ph, pw = _get(attrs, "pad_h", kind, 0), _get(attrs, "pad_w", kind, 0)
    dh, dw = _get(attrs, "dilation_h", kind, 1), _get(attrs, "dilation_w", kind, 1)
    if sh == 0 or sw == 0:
        raise GraphError(f"{kind} stride must be >= 1")
    p = (h + 2 * ph - dh * (r - 1) - 1) // sh + 1
    q = (w + 2 * pw - dw * (s - 1) - 1) // sw + 1
    if p <= 0 or q <= 0:
        raise GraphError(f"{kind} window {r}x{s} does not fit the {h}x{w} input")
    return p, q


#: Attrs that are sizes or counts wherever they appear (required or optional): each must be a
#: non-negative integer (an integral float passes, as in every getter here).
SIZE_ATTRS = frozenset({"B", "M", "N", "K", "C", "H", "W", "R", "S", "stride_h", "stride_w",
                        "pad_h", "pad_w", "dilation_h", "dilation_w", "groups", "numel",
                        "arity", "rows", "cols", "out_numel", "tokens", "dim", "vocab", "Sq",
                        "Skv", "D", "flops", "bytes", "channels", "n_kernels"})  # fmt: skip

#: Attrs that are flags wherever they appear: 0 / 1 or a bool (a batch norm's ``training``,
#: an opaque op's ``comm``: a collective; ``causal`` is an attention op's, :func:`_causal`).
FLAG_ATTRS = frozenset({"training", "comm"})


def check_sizes(kind: str, attrs: Mapping[str, Any]) -> None:
    """Raise :class:`GraphError` naming the first size attr (:data:`SIZE_ATTRS`) of ``attrs``
    that is not a non-negative integer, a flag (``causal``, :data:`FLAG_ATTRS`) that is not
    0 / 1 or a bool, or a convolution's ``groups`` that does not divide its channel counts.

    >>> check_sizes("matmul", {"M": 4, "N": 4.0, "K": 4, "fn": "x"})
    >>> check_sizes("elementwise", {"numel": None})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    opsched.errors.GraphError: elementwise attrs['numel'] must be a non-negative ... got None
    >>> check_sizes("conv2d", {"C": 64, "K": 64, "groups": 7})
    Traceback (most recent call last):
    opsched.errors.GraphError: conv2d attrs groups = 7 does not divide C = 64
    >>> check_sizes("opaque", {"comm": True, "n_kernels": 3})
    >>> check_sizes("opaque", {"comm": 7})
    Traceback (most recent call last):
    opsched.errors.GraphError: opaque attrs['comm'] must be 0 or 1 (or a bool), got 7
    """
    for key in SIZE_ATTRS.intersection(attrs):
        v = attrs[key]
        if not (type(v) is int and 0 <= v <= MAX_SIZE) and not _size_like(v):
            raise GraphError(_not_a_size(kind, key, v))
    for key in FLAG_ATTRS.intersection(attrs):
        v = attrs[key]
        if not (isinstance(v, bool) or (_size_like(v) and float(v) in (0.0, 1.0))):
            raise GraphError(f"{kind} attrs[{key!r}] must be 0 or 1 (or a bool), got {v!r}")
    if "causal" in attrs:
        _causal(attrs)
    groups = attrs.get("groups")
    if kind.startswith("conv2d") and type(groups) is int and groups > 1:
        for key in ("C", "K"):  # both channel counts split into the groups
            v = attrs.get(key)
            if type(v) is int and v % groups:
                raise GraphError(f"{kind} attrs groups = {groups} does not divide {key} = {v}")


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise GraphError(f"unknown op kind {kind!r}; known: {', '.join(KINDS)}")


def output_numel(kind: str, attrs: Mapping[str, Any]) -> int:
    """Number of elements of the op's output tensor."""
    _check_kind(kind)
    g = lambda k, d=None: _get(attrs, k, kind, d)  # noqa: E731
    if kind == "matmul":
        return g("B", 1) * g("M") * g("N")
    if kind in ("conv2d", "conv2d_bwd_data", "pool"):
        p, q = conv_out_hw(attrs, kind)
        if kind == "conv2d_bwd_data":
            return g("N") * g("C") * g("H") * g("W")
        return g("N") * (g("C") if kind == "pool" else g("K")) * p * q
    if kind == "conv2d_bwd_filter":
        return g("K") * (g("C") // max(1, g("groups", 1))) * g("R") * g("S")
    if kind in ("softmax", "layernorm", "rmsnorm"):
        return g("rows") * g("cols")
    if kind == "reduce":
        return g("out_numel")
    if kind == "embedding":
        return g("tokens") * g("dim")
    if kind == "attention":
        return g("B") * g("Sq") * g("D")
    return g("numel")


def flops(kind: str, attrs: Mapping[str, Any]) -> int:
    """Floating-point operations of one op (``attrs["flops"]`` wins when present)."""
    _check_kind(kind)
    if "flops" in attrs:
        return _get(attrs, "flops", kind)
    g = lambda k, d=None: _get(attrs, k, kind, d)  # noqa: E731
    if kind == "matmul":
        return 2 * g("B", 1) * g("M") * g("N") * g("K")
    if kind.startswith("conv2d"):
        p, q = conv_out_hw(attrs, kind)
        groups = max(1, g("groups", 1))
        return 2 * g("N") * g("K") * (g("C") // groups) * g("R") * g("S") * p * q
    if kind == "pool":
        p, q = conv_out_hw(attrs, kind)
        return g("N") * g("C") * p * q * g("R") * g("S")
    if kind == "elementwise":
        return g("numel") * max(1, g("arity", 1))
    if kind in ("softmax", "layernorm", "rmsnorm"):
        return {"softmax": 5, "layernorm": 8, "rmsnorm": 4}[kind] * g("rows") * g("cols")
    if kind == "batchnorm":
        return 2 * g("numel")
    if kind == "reduce":
        return g("numel")
    if kind == "attention":
        b, d, pairs = g("B"), g("D"), attention_pairs(attrs)
        return 4 * b * pairs * d + 5 * b * pairs
    return 0


def attention_pairs(attrs: Mapping[str, Any]) -> int:
    """Query-key pairs one head of an ``attention`` op scores: ``Sq * Skv``, or with
    ``causal`` (query ``i`` sees keys ``0..i``, the mask PyTorch's ``is_causal`` builds) the
    pairs on and below the diagonal.

    >>> attention_pairs({"Sq": 4, "Skv": 4}), attention_pairs({"Sq": 4, "Skv": 4, "causal": 1})
    (16, 10)
    """
    sq, skv = _get(attrs, "Sq", "attention"), _get(attrs, "Skv", "attention")
    if not _causal(attrs):
        return sq * skv
    full = min(sq, skv)  # queries 0..full-1 see i + 1 keys, the rest all skv
    return full * (full + 1) // 2 + (sq - full) * skv


def batchnorm_blocks(attrs: Mapping[str, Any]) -> int:
    """Thread blocks of a training batch norm's per-channel kernels: its ``channels`` where
    it computes batch statistics (``training`` set, or ``fn = "backward"``); 0 for an
    inference batch norm (elementwise) or one without a channel count.

    >>> batchnorm_blocks({"numel": 4096, "channels": 64, "training": 1})
    64
    >>> batchnorm_blocks({"numel": 4096, "channels": 64})  # inference form
    0
    """
    channels = int(attrs.get("channels", 0) or 0)
    if attrs.get("training") or attrs.get("fn") == "backward":
        return max(channels, 0)
    return 0


def _causal(attrs: Mapping[str, Any]) -> int:
    """The ``causal`` flag of an attention op (0 / 1 or a bool; default 0), checked."""
    raw = attrs.get("causal", 0)
    causal = int(raw) if isinstance(raw, bool) else _get(attrs, "causal", "attention", 0)
    if causal > 1:
        raise GraphError(f"attention attrs['causal'] must be 0 or 1, got {causal!r}")
    return causal


def bytes_min(kind: str, attrs: Mapping[str, Any]) -> int:
    """Bytes moved if each operand is read once and the output written once."""
    _check_kind(kind)
    if "bytes" in attrs:
        return _get(attrs, "bytes", kind)
    e = dtype_bytes(attrs)
    g = lambda k, d=None: _get(attrs, k, kind, d)  # noqa: E731
    out = output_numel(kind, attrs)
    if kind == "matmul":
        b = g("B", 1)
        return e * (b * g("M") * g("K") + b * g("K") * g("N") + out)
    if kind.startswith("conv2d"):
        p, q = conv_out_hw(attrs, kind)
        groups = max(1, g("groups", 1))
        x = g("N") * g("C") * g("H") * g("W")
        w = g("K") * (g("C") // groups) * g("R") * g("S")
        y = g("N") * g("K") * p * q
        return e * (x + w + y)
    if kind == "pool":
        return e * (g("N") * g("C") * g("H") * g("W") + out)
    if kind == "elementwise":
        return e * g("numel") * (max(1, g("arity", 1)) + 1)
    if kind in ("softmax", "layernorm", "rmsnorm", "batchnorm", "copy"):
        return 2 * e * out
    if kind == "reduce":
        return e * (g("numel") + out)
    if kind == "embedding":
        return e * 2 * out
    if kind == "attention":
        b, sq, skv, d = g("B"), g("Sq"), g("Skv"), g("D")
        return e * (2 * b * sq * d + 2 * b * skv * d)
    return 0


def fused_of(parts: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """Attrs of a ``fused`` op made of ``(kind, attrs)`` parts: their summed FLOPs, bytes and
    output elements, and the parts themselves (``{"kind": ..., **attrs}``), which the cost
    model prices one by one.

    Examples
    --------
    >>> a = {"M": 2, "N": 3, "K": 4}
    >>> f = fused_of([("matmul", a), ("matmul", a)])
    >>> f["flops"], f["numel"], [p["kind"] for p in f["parts"]]
    (96, 12, ['matmul', 'matmul'])
    """
    return {
        "flops": sum(flops(k, a) for k, a in parts),
        "bytes": sum(bytes_min(k, a) for k, a in parts),
        "numel": sum(output_numel(k, a) for k, a in parts),
        "parts": [{"kind": k, **a} for k, a in parts],
    }

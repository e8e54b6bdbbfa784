"""From an aten op's recorded input shapes to an op kind of :mod:`opsched.ir.kinds`.

``record_shapes=True`` gives each CPU op its ``Input Dims`` (one list per argument, ``[]`` for
non-tensors) and ``Input type``; newer PyTorch also records ``Concrete Inputs`` (the values of
scalar and list arguments). :func:`infer_kind` maps an op to a kind and its attrs only when the
shapes determine them; otherwise it returns ``(None, {})`` and the op keeps no kind.

Rules (the first tensor argument is ``x``):

- ``mm`` ``[M,K]@[K,N]``, ``addmm`` ``(bias, [M,K], [K,N])``, ``bmm``/``baddbmm``
  ``[B,M,K]@[B,K,N]``, ``linear`` ``(x[...,K], w[N,K])`` with ``M`` = rows of ``x``,
  ``matmul`` (2-D/3-D operands) -> ``matmul``.
- ``conv2d``/``convolution``/``_convolution``/``cudnn_convolution`` -> ``conv2d``: stride,
  padding, dilation and groups from ``Concrete Inputs`` when recorded; otherwise ``groups =
  C / w[1]``, dilation 1, and stride/padding inferred from the output height, taken from the
  next op on the thread whose first input is ``[N, K, P, Q]`` (``out_hint``), trying "same"
  padding ``(R-1)//2`` first and then 0.
- ``convolution_backward`` ``(dy, x, w)`` / ``cudnn_convolution_backward`` ``(x, dy, w)`` ->
  ``fused`` of a ``conv2d_bwd_data`` and a ``conv2d_bwd_filter`` part (only the parts that
  ran).
- unary / binary pointwise ops -> ``elementwise`` (``numel`` of the largest tensor, ``arity``
  = tensor operands); copies, casts and concatenation -> ``copy``.
- ``softmax``/``log_softmax`` (and backward) -> ``softmax``, ``layer_norm`` (and native /
  backward) -> ``layernorm``, ``rms_norm`` -> ``rmsnorm`` (rows x last dim);
  ``batch_norm`` variants -> ``batchnorm``; ``embedding`` -> ``embedding``;
  scaled-dot-product attention -> ``attention`` (``B`` = batch x heads).
- pooling and reductions need their window / reduced axes, which only ``Concrete Inputs``
  hold: ``max_pool2d``/``avg_pool2d`` map to ``pool`` when they are recorded, else no kind.

Examples
--------
>>> infer_kind("aten::addmm", [[1000], [32, 2048], [2048, 1000], [], []],
...            ["float", "float", "float", "Int", "Int"])
('matmul', {'M': 32, 'N': 1000, 'K': 2048, 'dtype': 'float32'})
>>> kind, a = infer_kind("aten::conv2d", [[32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], []],
...                      ["float"] * 2, out_hint=[32, 64, 112, 112])
>>> kind, a["stride_h"], a["pad_h"]
('conv2d', 2, 3)
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from typing import Any

from opsched.errors import GraphError
from opsched.importers._build import ATTENTION_CAUSAL_ARG, causal_flag
from opsched.importers.trace.aten_names import (
    _BATCHNORM,
    _BINARY,
    _CONV,
    _CONV_BWD,
    _COPY,
    _DTYPES,
    _LAYERNORM,
    _MATMUL,
    _POOL,
    _RMSNORM,
    _SOFTMAX,
    _UNARY,
    attention_attrs,
    conv_backward_operands,
)
from opsched.ir import kinds as K

__all__ = ["dtype_of", "infer_kind", "numel", "shape_text", "tensor_dims"]


def _short(name: str) -> str:
    return name.split("::", 1)[1] if name.startswith("aten::") else name


def numel(dims: Sequence[int]) -> int:
    """Number of elements of a tensor of shape ``dims``.

    >>> numel([32, 3, 224, 224])
    4816896
    """
    return math.prod(int(d) for d in dims)


def tensor_dims(dims: Sequence[Any] | None) -> list[list[int]]:
    """The non-empty integer shape lists among recorded ``Input Dims`` (tensor arguments)."""
    out = []
    for d in dims or []:
        if isinstance(d, list) and d and all(isinstance(x, int) and x >= 0 for x in d):
            out.append([int(x) for x in d])
    return out


def dtype_of(dims: Sequence[Any] | None, types: Sequence[Any] | None) -> str:
    """The kinds-vocabulary dtype of the first tensor argument (default ``float32``)."""
    for d, ty in zip(dims or [], types or [], strict=False):
        if isinstance(d, list) and d and isinstance(ty, str) and ty in _DTYPES:
            return _DTYPES[ty]
    return "float32"


def _concrete(concrete: Sequence[Any] | None, i: int) -> Any:
    if not concrete or i >= len(concrete) or concrete[i] in ("", None):
        return None
    v = concrete[i]
    if isinstance(v, str):
        try:
            v = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            return None
    return v


def _pair(v: Any) -> tuple[int, int] | None:
    if isinstance(v, int) and not isinstance(v, bool):
        return v, v
    if isinstance(v, list | tuple) and len(v) in (1, 2) and all(isinstance(x, int) for x in v):
        return (int(v[0]), int(v[-1]))
    return None


# argument positions of stride, padding, dilation, groups in each convolution signature
_CONV_ARGS = {
    "conv2d": (3, 4, 5, 6),
    "convolution": (3, 4, 5, 8),
    "_convolution": (3, 4, 5, 8),
    "cudnn_convolution": (3, 2, 4, 5),
}


def _conv(n: str, ts: list[list[int]], concrete: Any, out_hint: Any) -> dict[str, Any] | None:
    if len(ts) < 2 or len(ts[0]) != 4 or len(ts[1]) != 4:
        return None
    (nb, c, h, w), (k, cg, r, s) = ts[0], ts[1]
    a: dict[str, Any] = {"N": nb, "C": c, "H": h, "W": w, "K": k, "R": r, "S": s}
    pos = _CONV_ARGS.get(n)
    if pos is not None and concrete:
        st, pd, dl = (_pair(_concrete(concrete, i)) for i in pos[:3])
        g = _concrete(concrete, pos[3])
        if st and pd:
            a |= {"stride_h": st[0], "stride_w": st[1], "pad_h": pd[0], "pad_w": pd[1]}
            if dl and dl != (1, 1):
                a |= {"dilation_h": dl[0], "dilation_w": dl[1]}
            if isinstance(g, int) and g > 1:
                a["groups"] = g
            return a
    if cg <= 0 or c % cg:
        return None
    if c // cg > 1:
        a["groups"] = c // cg
    hint = [int(x) for x in out_hint] if isinstance(out_hint, list | tuple) else None
    if not hint or len(hint) != 4 or hint[0] != nb or hint[1] != k:
        return None
    found = _stride_pad(h, r, hint[2]), _stride_pad(w, s, hint[3])
    if found[0] is None or found[1] is None:
        return None
    return a | {
        "stride_h": found[0][0],
        "pad_h": found[0][1],
        "stride_w": found[1][0],
        "pad_w": found[1][1],
    }


def _stride_pad(size: int, win: int, out: int) -> tuple[int, int] | None:
    for pad in dict.fromkeys(((win - 1) // 2, 0)):
        for stride in range(1, 9):
            if (size + 2 * pad - win) // stride + 1 == out:
                return stride, pad
    return None


def _conv_bwd(
    n: str, ts: list[list[int]], parts: set[str] | None, dt: str
) -> dict[str, Any] | None:
    if len(ts) < 3 or any(len(x) != 4 for x in ts[:3]):
        return None
    dy, x = conv_backward_operands(n, ts)
    base = _conv("conv2d", [x, ts[2]], None, dy)
    if base is None:
        return None
    base["dtype"] = dt
    want = parts or {"data", "filter"}
    return K.fused_of([(f"conv2d_bwd_{p}", base) for p in ("data", "filter") if p in want])


def infer_kind(
    name: str,
    dims: Sequence[Any] | None,
    types: Sequence[Any] | None = None,
    concrete: Sequence[Any] | None = None,
    *,
    out_hint: Sequence[int] | None = None,
    parts: set[str] | None = None,
) -> tuple[str | None, dict[str, Any]]:
    """Kind and attrs of op ``name`` from its recorded inputs, or ``(None, {})``.

    ``out_hint`` is the shape of a later op's first input (a convolution's output);
    ``parts`` names the convolution-backward halves that ran (``"data"``, ``"filter"``).
    The attrs always satisfy :data:`opsched.ir.kinds.KINDS`.
    """
    n = _short(name)
    ts = tensor_dims(dims)
    dt = dtype_of(dims, types)
    kind, attrs = _infer(n, ts, concrete, out_hint, parts, dt)
    if kind is None:
        return None, {}
    attrs["dtype"] = dt
    try:  # a shape the formulas reject (e.g. a window larger than the input) gets no kind
        K.flops(kind, attrs), K.bytes_min(kind, attrs), K.output_numel(kind, attrs)
    except GraphError:
        return None, {}
    return kind, attrs


def _infer(
    n: str, ts: list[list[int]], concrete: Any, out_hint: Any, parts: Any, dt: str
) -> tuple[str | None, dict[str, Any]]:
    if n in _MATMUL:
        return _matmul(n, ts)
    if n in _CONV:
        ca = _conv(n, ts, concrete, out_hint)
        return ("conv2d", ca) if ca else (None, {})
    if n in _CONV_BWD:
        a2 = _conv_bwd(n, ts, parts, dt)
        return ("fused", a2) if a2 else (None, {})
    if not ts:
        return None, {}
    x = ts[0]
    if n in _SOFTMAX | _LAYERNORM | _RMSNORM:
        kind = "softmax" if n in _SOFTMAX else "layernorm" if n in _LAYERNORM else "rmsnorm"
        cols = x[-1]
        return kind, {"rows": numel(x) // max(cols, 1) if cols else 0, "cols": cols}
    if n in _BATCHNORM:
        attrs = {"numel": numel(x), "channels": x[1] if len(x) >= 2 else 0}
        if n.endswith("_backward"):
            return "batchnorm", attrs | {"fn": "backward"}
        # argument 5 is the training flag in every forward form; a trace that does not
        # record it is taken as training (batch statistics)
        flag = _concrete(concrete, 5)
        training = "no_training" not in n and (not isinstance(flag, bool) or flag)
        return "batchnorm", attrs | {"training": int(training)}
    if n in _UNARY | _BINARY:
        return "elementwise", {"numel": max(numel(t) for t in ts), "arity": len(ts), "fn": n}
    if n in _COPY:
        total = sum(numel(t) for t in ts) if n in ("cat", "_cat", "stack") else numel(x)
        return "copy", {"numel": total}
    if n in ("embedding", "embedding_bag") and len(ts) >= 2 and len(ts[0]) == 2:
        return "embedding", {"tokens": numel(ts[1]), "dim": ts[0][1], "vocab": ts[0][0]}
    att = attention_attrs(n, ts)
    if att is not None:
        pos = ATTENTION_CAUSAL_ARG.get(n, (-1, ""))[0]
        if pos >= 0 and causal_flag(_concrete(concrete, pos)):
            att["causal"] = 1
        return "attention", att
    if n in _POOL and len(x) == 4:
        win, st, pd = (_pair(_concrete(concrete, i)) for i in (1, 2, 3))
        if win:
            st = st or win
            pd = pd or (0, 0)
            pa: dict[str, Any] = {
                "N": x[0],
                "C": x[1],
                "H": x[2],
                "W": x[3],
                "R": win[0],
                "S": win[1],
                "stride_h": st[0],
                "stride_w": st[1],
                "pad_h": pd[0],
                "pad_w": pd[1],
                "mode": "avg" if "avg" in n else "max",
            }
            return "pool", pa
    return None, {}


def _matmul(n: str, ts: list[list[int]]) -> tuple[str | None, dict[str, Any]]:
    if n in ("addmm", "baddbmm", "_addmm_activation") and len(ts) >= 3:
        ts = ts[1:3]
    if len(ts) < 2:
        return None, {}
    a, b = ts[0], ts[1]
    if n == "linear":
        if len(b) != 2 or a[-1] != b[1]:
            return None, {}
        return "matmul", {"M": numel(a[:-1]), "N": b[0], "K": b[1]}
    if len(a) == 2 and len(b) == 2 and a[1] == b[0]:
        return "matmul", {"M": a[0], "N": b[1], "K": a[1]}
    if len(a) == 3 and len(b) == 3 and a[0] == b[0] and a[2] == b[1]:
        out = {"M": a[1], "N": b[2], "K": a[2]}
        return "matmul", ({"B": a[0]} | out) if a[0] > 1 else out
    if len(a) >= 3 and len(b) == 2 and a[-1] == b[0]:  # batched activations @ weight
        return "matmul", {"M": numel(a[:-1]), "N": b[1], "K": b[0]}
    return None, {}


def shape_text(name: str, kind: str | None, attrs: dict[str, Any], dims: Any) -> str:
    """A short readable shape: ``M=32 N=1000 K=2048 (+bias)``, ``x=[..] w=[..] y=[..]``...

    >>> shape_text("aten::mm", "matmul", {"M": 2, "N": 3, "K": 4}, [[2, 4], [4, 3]])
    'M=2 N=3 K=4'
    """
    n = _short(name)
    if kind == "matmul":
        b = f"B={attrs['B']} " if "B" in attrs else ""
        bias = " (+bias)" if n in ("addmm", "baddbmm") else ""
        return f"{b}M={attrs['M']} N={attrs['N']} K={attrs['K']}{bias}"
    if kind == "conv2d":
        p, q = K.conv_out_hw(attrs)
        a = attrs
        return (
            f"x=[{a['N']},{a['C']},{a['H']},{a['W']}] w=[{a['K']},{a['C'] // a.get('groups', 1)},"
            f"{a['R']},{a['S']}] y=[{a['N']},{a['K']},{p},{q}] stride={a['stride_h']} "
            f"pad={a['pad_h']}"
        )
    if kind == "fused" and attrs.get("parts"):
        a = attrs["parts"][0]
        return (
            f"x=[{a['N']},{a['C']},{a['H']},{a['W']}] w=[{a['K']},"
            f"{a['C'] // a.get('groups', 1)},{a['R']},{a['S']}] stride={a['stride_h']} "
            f"pad={a['pad_h']} ({'+'.join(p['kind'] for p in attrs['parts'])})"
        )
    return "inputs=" + str(tensor_dims(dims)).replace(" ", "")

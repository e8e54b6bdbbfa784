"""A GPU's calibrated cost profile: predict an op's time in microseconds.

Profiles ship as ``opsched/cost/profiles/<GPU>.json`` (``opsched cost fit`` rebuilds them).
Each holds the GPU's specs and, per op family and dtype class, the curve's ``beta``, where it
came from (``fitted`` on the GPU's own timings or ``pooled`` over all GPUs and transferred
through the specs; a transferred one may list a same-chip GPU's curve per kind of timing,
``siblings``, :mod:`opsched.cost.sibling`) and the fixed overhead of each timing method, and
the GPU's kernel floor
(``kernel_floor``: no prediction of an op that launches a kernel is below it; see
:mod:`opsched.cost.floor`) and the convolutions' higher ones (``family_floors``). A document
is checked when it is read (:mod:`opsched.cost.profile_check`).

Examples
--------
>>> p = load_profile("A100-SXM4-80GB")
>>> t = p.predict("matmul", {"M": 4096, "N": 4096, "K": 4096, "dtype": "float16"})
>>> 400 < t < 800      # roofline 440 us at 312 TFLOPS
True
>>> p.predict("view", {"numel": 10})
0.0
>>> tiny = p.predict("matmul", {"M": 2, "N": 2, "K": 2, "dtype": "float16"})
>>> pad = p.predict("matmul", {"M": 64, "N": 64, "K": 64, "dtype": "float16"})
>>> p.kernel_floor <= tiny <= pad + 1e-9  # the bound is priced in a batch: equal up to rounding
True

A small GEMM, norm, convolution or ``opaque`` op is priced at most as its paddings
(:mod:`opsched.cost.paddings`): a tiny GEMM costs what a 64 x 64 x 64 one does at most, a
one-row layernorm what a 64-row one does, a depthwise convolution what the dense one does,
an opaque op moving 640 bytes what one moving 64 KiB does.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import numpy as np

from opsched.cost._profile_price import _empty, price_family
from opsched.cost.batch import check_op, distinct_ops, gc_paused
from opsched.cost.composite import fused_attention, price_attentions, price_fused
from opsched.cost.curve import FREE_OVERHEAD_METHODS
from opsched.cost.features import ZERO_KINDS, as_priced, dtype_class, family_of, roofline_us
from opsched.cost.footprint import sm_footprint
from opsched.cost.gpu_names import resolve_gpu, variants_of
from opsched.cost.mathmode import FP16_FP32_MATH, math_dtype
from opsched.cost.profile_check import PROFILE_FORMAT, check_profile, check_trees
from opsched.cost.profile_files import TREES_FILE as TREES_FILE  # re-exported, as before
from opsched.cost.profile_files import _load_trees, _read_curve
from opsched.cost.sibling import METHOD_KINDS, method_kind
from opsched.cost.specs import GpuSpec, profiles_dir
from opsched.cost.trees import TreeEnsemble
from opsched.errors import GraphError, InputError
from opsched.ir import Op, kinds

__all__ = ["PROFILE_FORMAT", "Profile", "load_profile"]

_WARNED: set[tuple[str, str]] = set()


class Profile:
    """The calibrated curves of one GPU (see :func:`load_profile`).

    Parameters
    ----------
    doc
        An ``opsched-cost-profile/1`` document.
    trees
        Residual trees per family (:mod:`opsched.cost.boost`); None loads the shipped ones,
        ``{}`` uses the curves alone.
    where
        What the document is called in the error a malformed one raises
        (:mod:`opsched.cost.profile_check`); :func:`load_profile` gives its file.
    """

    def __init__(
        self,
        doc: Mapping[str, Any],
        trees: Mapping[str, TreeEnsemble] | None = None,
        where: str = "profile",
    ) -> None:
        self.spec: GpuSpec = check_profile(doc, where)
        self.gpu: str = doc["gpu"]
        self.curves: dict[str, dict[str, Any]] = {
            fam: {cls: _read_curve(c) for cls, c in by.items()} for fam, by in doc["curves"].items()
        }
        if trees is None:
            trees = _load_trees(profiles_dir())
        check_trees(trees, self.spec, "profile trees")
        self.trees: Mapping[str, TreeEnsemble] = trees
        floor = doc.get("kernel_floor") or {}
        #: Least time (us) of any kernel on this GPU (:mod:`opsched.cost.floor`); 0 in a
        #: profile written before the floor existed.
        self.kernel_floor: float = float(floor.get("us", 0.0))
        #: Floors (us) of families whose calls cost more than one launch (the convolutions,
        #: :data:`opsched.cost.floor.FAMILY_FLOOR_FAMILIES`); empty in older profiles.
        self.family_floors: dict[str, float] = {
            fam: float(f["us"]) for fam, f in (doc.get("family_floors") or {}).items()
        }

    def __repr__(self) -> str:
        return f"Profile({self.gpu!r}, {len(self.curves)} families)"

    def curve(self, family: str, dtype: str, method: str | None = None) -> dict[str, Any] | None:
        """The curve of ``family`` for ``dtype``'s class (another class if that one is absent).

        For a transferred curve with a same-chip sibling's curve of ``method``'s kind of
        timing (:mod:`opsched.cost.sibling`), that one, with ``source: sibling``.
        """
        by = self.curves.get(family)
        if not by:
            return None
        cls = dtype_class(dtype)
        if dtype == FP16_FP32_MATH and not _measured(by.get("half"), method):
            cls = "fp32"  # FP32 arithmetic on half tensors: not the tensor-core half curve
            # (the fit's rule: opsched.cost.fit.Model.fp32_math_class)
        order = [cls, *(c for c in ("fp32", "half", "int8") if c != cls)]
        c = next((by[c] for c in order if c in by), None)
        sib = (c or {}).get("siblings", {}).get(method_kind(method)) if method else None
        return sib if sib is not None else c

    def sources(self) -> list[dict[str, Any]]:
        """Where each curve comes from: one row per family and dtype class.

        ``source`` is the profile's (``fitted`` on this GPU's rows, ``donor``: its own
        memory-bound kernels, ``pooled``: transferred through its specs); ``call``,
        ``kernel`` and ``profiler`` say what prices each kind of timing: ``own``, the
        sibling GPU it borrows from (:mod:`opsched.cost.sibling`), or the source.

        Examples
        --------
        >>> rows = load_profile("H100-SXM5").sources()
        >>> [r for r in rows if r["family"] == "matmul" and r["class"] == "fp32"][0]["kernel"]
        'H200'
        """
        out = []
        for fam in sorted(self.curves):
            for cls, c in sorted(self.curves[fam].items()):
                src = str(c.get("source", "fitted"))
                sib = c.get("siblings", {})
                use = {k: "own" if src == "fitted" else sib[k]["gpu"] if k in sib else src
                       for k in ("call", "kernel", "profiler")}  # fmt: skip
                out.append({"family": fam, "class": cls, "source": src,
                            "rows": int(c.get("rows", 0))} | use)  # fmt: skip
        return out

    def roofline(self, kind: str, attrs: Mapping[str, Any]) -> float:
        """Plain roofline time (us) on this GPU: the physical lower limit, no calibration."""
        check_op(kind, attrs)
        if kind in ZERO_KINDS:
            return 0.0
        return roofline_us(kind, attrs, self.spec)

    def predict(
        self,
        op: Any,
        attrs: Mapping[str, Any] | None = None,
        method: str = "kernel",
        allow_tf32: bool | None = None,
    ) -> float:
        """Predicted time in microseconds of one op.

        Parameters
        ----------
        op
            An :class:`~opsched.ir.Op` (its ``kind`` and ``attrs`` are used) or a kind name.
        attrs
            The shape attrs when ``op`` is a kind name.
        method
            Timing method to mimic: ``kernel`` (pure kernel time, the default), ``cupti``,
            ``events`` (one PyTorch call timed with CUDA events) or ``wallclock``.
        allow_tf32
            Math mode of float32 GEMMs and convolutions on GPUs with TF32 tensor cores
            (:mod:`opsched.cost.mathmode`): None follows PyTorch's defaults (convolutions in
            TF32, matmuls in FP32), True / False runs both in TF32 / FP32.
        """
        if isinstance(op, str):
            kind, a = op, {} if attrs is None else attrs
        elif not isinstance(op, Op):
            raise TypeError(f"predict takes an Op or a kind name, got {type(op).__name__}")
        elif op.kind is None:
            raise GraphError("op has no kind", f"op {op.name!r}")
        else:
            kind, a = op.kind, op.attrs
        return float(self.predict_many([kind], [a], method, allow_tf32)[0])

    def predict_many(
        self,
        kind_list: Sequence[str],
        attrs_list: Sequence[Mapping[str, Any]],
        method: str = "kernel",
        allow_tf32: bool | None = None,
    ) -> np.ndarray:
        """Predicted times (us) of many ops at once, vectorised per family.

        ``allow_tf32`` as in :meth:`predict`; a float32 GEMM or convolution run in TF32 is
        priced with ``dtype = "tf32"`` (the TF32 peak, the fp32 curve).

        Examples
        --------
        >>> p = load_profile("A100-SXM4-80GB")
        >>> mm = {"M": 8192, "N": 8192, "K": 8192}
        >>> fp32, tf32 = p.predict_many(["matmul"] * 2, [mm, mm | {"dtype": "tf32"}])
        >>> bool(fp32 > 2 * tf32), bool(p.predict("matmul", mm, allow_tf32=True) == tf32)
        (True, True)
        """
        kind_list, attrs_list = list(kind_list), list(attrs_list)
        if len(kind_list) != len(attrs_list):
            raise ValueError(f"{len(kind_list)} kinds but {len(attrs_list)} attrs")
        if method not in METHOD_KINDS:
            raise ValueError(f"unknown timing method {method!r}; known: {', '.join(METHOD_KINDS)}")
        for a in attrs_list:
            if type(a) is not dict and not isinstance(a, Mapping):
                raise TypeError(
                    f"attrs must be a mapping of shape attrs (e.g. {{'rows': 1024, "
                    f"'cols': 1024}}), got {type(a).__name__}"
                )
        with gc_paused():
            first, inverse = distinct_ops(kind_list, attrs_list)
            if len(first) == len(kind_list):
                return self._predict(kind_list, attrs_list, method, allow_tf32, pad=True)
            # a graph repeats its shapes (layers, blocks, steps): each distinct op priced once
            times = self._predict([kind_list[i] for i in first], [attrs_list[i] for i in first],
                                  method, allow_tf32, pad=True)  # fmt: skip
        return times[inverse]

    def _predict(
        self,
        kind_list: Sequence[str],
        attrs_list: Sequence[Mapping[str, Any]],
        method: str,
        allow_tf32: bool | None,
        pad: bool,
    ) -> np.ndarray:
        """:meth:`predict_many`; ``pad``: bound small ops by their paddings (off for the
        padded ops themselves, which :func:`~opsched.cost.composite.padded_prices` prices
        in one call)."""
        out = np.zeros(len(kind_list))
        groups: dict[tuple[str, str], list[int]] = {}
        unfused: list[tuple[int, str]] = []  # attention priced from its parts, with its dtype
        empty: list[tuple[int, str]] = []  # ops of no output element, with their dtype
        attrs_list = list(attrs_list)
        for i, (kind, a) in enumerate(zip(kind_list, attrs_list, strict=True)):
            check_op(kind, a)
            kinds.dtype_bytes(a)
            if kind in ZERO_KINDS:
                continue
            if kind == "copy":
                # priced as the unary elementwise kernel it is (family_of), from its element
                # count and dtype: a stated "flops": 0 would put its intensity outside the
                # curve's data (docs/cost-model.md, item 6), and stated bytes are those of the
                # dtype the graph was built in, not necessarily the one priced
                attrs_list[i] = {k: v for k, v in a.items() if k not in ("flops", "bytes")}
            # a fill writes its n elements and reads none: the traffic of a plain unary
            # kernel (one read, one write) over n / 2, which is how it is priced
            attrs_list[i] = a = as_priced(kind, a)
            dtype = math_dtype(kind, a, self.spec, allow_tf32)
            if _empty(kind, a):  # PyTorch launches no kernel for it: a call's cost alone
                empty.append((i, dtype))
                continue
            if kind == "attention" and not (
                fused_attention(self.spec, dtype) and self.curve("attention", dtype) is not None
            ):
                unfused.append((i, dtype))
                continue
            if kind == "fused":
                out[i] = price_fused(self, a, method, allow_tf32)
                continue
            fam = family_of(kind, a)
            groups.setdefault((fam, dtype), []).append(i)
        if unfused:
            at = [i for i, _ in unfused]
            out[at] = price_attentions(self, [attrs_list[i] for i in at],
                                       [dt for _, dt in unfused], method)  # fmt: skip
        for (fam, dtype), idx in groups.items():
            attrs = [{**attrs_list[i], "dtype": dtype} for i in idx]
            c = self.curve(fam, dtype, method)
            if c is None:
                if (self.gpu, fam) not in _WARNED:
                    _WARNED.add((self.gpu, fam))
                    warnings.warn(
                        f"cost model: no calibration for {fam!r} ops on {self.gpu}; "
                        "using the plain roofline time",
                        stacklevel=2,
                    )
                out[idx] = [roofline_us(kind_list[i], a, self.spec)
                            for i, a in zip(idx, attrs, strict=True)]  # fmt: skip
                continue
            out[idx] = price_family(self, fam, dtype, c, idx, attrs, kind_list, attrs_list,
                                    method, allow_tf32, pad)  # fmt: skip
        for i, dtype in empty:  # a call's dispatch: the overhead of a plain unary kernel
            c = self.curve("elementwise_unary", dtype, method)
            if c is not None and method in FREE_OVERHEAD_METHODS:
                out[i] = c["overheads"].get(method, 0.0)
        nonzero = np.array([k not in ZERO_KINDS for k in kind_list], dtype=bool)
        out[nonzero] = np.maximum(out[nonzero], self.kernel_floor)
        return out

    def footprint(self, kind: str, attrs: Mapping[str, Any]) -> int:
        """SMs the op can keep busy: its thread blocks (tiles), between 1 and the SM count.

        Examples
        --------
        >>> p = load_profile("T4")
        >>> p.footprint("matmul", {"M": 4096, "N": 4096, "K": 64}), p.spec.sm_count
        (40, 40)
        >>> p.footprint("elementwise", {"numel": 4096})
        4
        """
        return sm_footprint(kind, attrs, self.spec.sm_count)


@cache
def _load(key: str, folder: str) -> Profile:
    path = os.path.join(folder, f"{key}.json")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise InputError(f"no profile for {key} in {folder}; run `opsched cost fit`") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"not a profile ({e})", path) from None
    return Profile(doc, _load_trees(folder), where=path)


def _measured(curve: Mapping[str, Any] | None, method: str | None) -> bool:
    """Whether a curve was fitted on this GPU's rows or, for ``method``, borrows a same-chip
    GPU's curve fitted on its own."""
    if curve is None:
        return False
    if curve.get("source", "fitted") == "fitted":
        return True
    return method is not None and method_kind(method) in curve.get("siblings", {})


def load_profile(gpu: str) -> Profile:
    """The shipped profile of ``gpu`` (any spelling :func:`resolve_gpu` understands).

    Raises
    ------
    InputError
        Unknown GPU (the message lists the known ones).

    Examples
    --------
    >>> load_profile("NVIDIA H100 80GB HBM3").gpu
    'H100-SXM5'

    A bare model name that fits several variants takes the one :func:`resolve_gpu` picks and
    says so, once per name (a warning).
    """
    key = resolve_gpu(gpu)
    _say_variant(gpu, key)
    return _load(key, profiles_dir())


@cache
def _say_variant(gpu: str, key: str) -> None:
    others = [k for k in variants_of(gpu) if k != key]
    if others:
        warnings.warn(
            f"cost model: GPU {gpu!r} taken as {key} (it could also be {', '.join(others)}); "
            "name the variant to choose",
            stacklevel=3,
        )

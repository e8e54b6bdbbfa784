"""Shapes of profiled kernels that no op launched, read from their launch configuration.

A kernel-level profiler table (``profiler_kernels`` schema) links each kernel to the aten op
that launched it, and the op's recorded input shapes price it. Some kernels have no op: the
HTA traces hold 1,437 such rows with a GPU name, mostly PyTorch elementwise kernels and fused
optimizer steps (``multi_tensor_apply_kernel``) launched outside any recorded op. Two kinds
of PyTorch kernel size their grid from the element count alone, so the launch gives the
shape back:

- **Elementwise kernels** (``vectorized_elementwise_kernel``,
  ``unrolled_elementwise_kernel``): each thread takes 4 elements, so a grid of ``gx`` blocks
  of ``bx`` threads covers about ``4 * gx * bx`` elements. Newer PyTorch builds (their kernel
  names spell the pointer array ``std::array<char*, 3ul>``, where older ones wrote
  ``at::detail::Array<char*, 3>``) give each thread of a *vectorized* kernel 8 elements.
  Checked on the linked rows of the shipped tables and traces (launches of 8 blocks or
  more; the op's largest input against the launch): 4 per thread at the 10th, 50th and 90th
  percentiles in the HTA kernel table and the V100 trace, 8 in the three H200 traces (PyTorch
  2.11; float32 and bf16). One-byte types may take 16 there (not in these traces; 8 is used).
  ``elementwise_kernel<nt, vt, ...>`` (the strided path) takes ``vt`` elements per thread,
  ``nt * vt`` per block. The pointer array holds the ``N`` data pointers, inputs and the
  output, so the op reads ``N - 1`` tensors (at least 1).
- **Fused optimizer steps and foreach ops** (``multi_tensor_apply_kernel<TensorListMetadata<D>,
  ...>``): the tensors are cut into chunks of 65,536 elements, one block each, and each
  element touches ``D`` lists (Adam: parameter, gradient, two moments). Priced as an
  elementwise op over ``65,536 * gx`` elements. A foreach functor names what it reads
  (``BinaryOpScalarFunctor<float, depth, r_args_depth, res_arg_index>``): ``r_args_depth``
  reads and one write. Any other functor (Adam, SGD) reads the ``D`` lists and writes back
  ``D - 1`` (all but the gradient). A launch's last chunks may be partly empty, so this is
  an upper estimate.

The element type is the first C++ type named among the template arguments (``float``,
``c10::Half``...). Any other kernel without an op (reductions, GEMMs, NCCL, cub) has no
rule: its grid depends on tuning choices, not on the size alone. Such rows stay unpriced and
are counted as left out.

Examples
--------
>>> launch_kind("void at::native::vectorized_elementwise_kernel<4, at::native::"
...             "CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, ...)",
...             "[16, 1, 1]", "[128, 1, 1]")
('elementwise', {'numel': 8192, 'arity': 2, 'dtype': 'float32'})
>>> kind, attrs = launch_kind("void multi_tensor_apply_kernel<TensorListMetadata<4>, "
...                           "AdamFunctor<float>, float>(int, ...)", "[320, 1, 1]", "[512, 1, 1]")
>>> attrs["numel"], attrs["bytes"]
(20971520, 587202560)
>>> launch_kind("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
...             "(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)"
...             "::UnaryOpFunctor<float, 2, 1, 1>, at::native::Sqrt<float> >(...)",
...             "[320, 1, 1]", "[512, 1, 1]")[1]["bytes"]  # one list read, one written
167772160
"""

from __future__ import annotations

import json
import re
from typing import Any

from opsched.ir.kinds import DTYPE_BYTES, fused_of

__all__ = ["CHUNK", "THREAD_WORK", "THREAD_WORK_NEW", "launch_kind", "launches_kind"]

#: Elements per chunk (one block) of PyTorch's ``multi_tensor_apply`` kernels.
CHUNK = 65536
#: Elements each thread of PyTorch's vectorized and unrolled elementwise kernels takes; a
#: vectorized kernel of a newer build (``std::array`` pointers) takes :data:`THREAD_WORK_NEW`.
THREAD_WORK = 4
THREAD_WORK_NEW = 8

_CTYPES = (
    ("c10::BFloat16", "bfloat16"), ("c10::Half", "float16"), ("double", "float64"),
    ("float", "float32"), ("long", "int64"), ("int", "int32"), ("bool", "bool"),
    ("signed char", "int8"), ("unsigned char", "int8"),
)  # fmt: skip
_CTYPE = re.compile(r"(?<![\w:])(" + "|".join(re.escape(c) for c, _ in _CTYPES) + r")(?![\w])")
_POINTERS = re.compile(r"([Aa])rray<char\s*\*,\s*(\d+)\w*\s*>")
_STRIDED = re.compile(r"elementwise_kernel<(\d+),\s*(\d+),")
_LISTS = re.compile(r"TensorList\w*Metadata<(?:[\w:]+,\s*)?(\d+)>")
#: PyTorch's foreach functors: ``Functor<T, depth, r_args_depth, res_arg_index>``
_FOREACH = re.compile(r"Functor<[\w:]+,\s*(\d+),\s*(\d+),\s*(\d+)\s*>")


def _first_dim(cell: Any) -> int | None:
    """The x size of a ``[x, y, z]`` launch cell (a JSON list), None if unreadable."""
    try:
        dims = json.loads(cell) if isinstance(cell, str) else cell
        x = int(dims[0])
    except (TypeError, ValueError, IndexError, KeyError, json.JSONDecodeError):
        return None
    return x if x > 0 else None


def _dtype(kernel: str) -> str:
    m = _CTYPE.search(kernel)
    return dict(_CTYPES)[m.group(1)] if m else "float32"


def launch_kind(kernel: Any, grid: Any, block: Any) -> tuple[str, dict[str, Any]] | None:
    """``(kind, attrs)`` of a kernel without an op, from its name and launch; None where no
    rule applies (see the module docstring) or the grid or block is unreadable."""
    name = str(kernel).replace("(anonymous namespace)::", "")
    gx, bx = _first_dim(grid), _first_dim(block)
    if gx is None or bx is None:
        return None
    head = re.sub(r"^void\s+", "", name.strip()).split("<", 1)[0].split("(", 1)[0]
    base = head.rsplit("::", 1)[-1]
    dtype = _dtype(name)
    if base == "multi_tensor_apply_kernel":
        m = _LISTS.search(name)
        if m is None:
            return None
        depth = max(1, int(m.group(1)))
        f = _FOREACH.search(name)
        # a foreach functor reads its r_args_depth lists and writes one; an optimizer's
        # (Adam, SGD) reads every list and writes back all but the gradient
        reads, writes = (int(f.group(2)), 1) if f else (depth, max(1, depth - 1))
        numel = CHUNK * gx
        size = DTYPE_BYTES[dtype]
        return "elementwise", {"numel": numel, "arity": max(1, reads), "dtype": dtype,
                               "bytes": size * numel * (reads + writes)}  # fmt: skip
    p = _POINTERS.search(name)
    if base in ("vectorized_elementwise_kernel", "unrolled_elementwise_kernel"):
        # a newer build (std::array pointers) gives a vectorized kernel's threads more work
        newer = base == "vectorized_elementwise_kernel" and p is not None and p.group(1) == "a"
        per_block = (THREAD_WORK_NEW if newer else THREAD_WORK) * bx
    elif base == "elementwise_kernel":
        m = _STRIDED.search(name)
        if m is None:
            return None
        per_block = int(m.group(1)) * int(m.group(2))
    else:
        return None
    arity = max(1, int(p.group(2)) - 1) if p else 1
    return "elementwise", {"numel": per_block * gx, "arity": arity, "dtype": dtype}


def launches_kind(launches: Any) -> tuple[str, dict[str, Any]] | None:
    """The kind of an op from its kernels' launches (``[[name, grid, block], ...]``: the
    importer's ``attrs["launches"]`` and its timing rows' ``launches`` column), by
    :func:`launch_kind`: one kernel's kind, or a ``fused`` op of several; None unless
    every kernel has a launch rule.

    >>> add = "void at::native::vectorized_elementwise_kernel<4, f<float>, Array<char*, 3> >"
    >>> launches_kind([[add, [2, 1, 1], [128, 1, 1]]])
    ('elementwise', {'numel': 1024, 'arity': 2, 'dtype': 'float32'})
    >>> launches_kind([[add, [2, 1, 1], [128, 1, 1]], ["nccl_kernel", [1, 1, 1], [64, 1, 1]]])
    """
    if not isinstance(launches, list) or not launches:
        return None
    parts = []
    for item in launches:
        found = launch_kind(*item) if isinstance(item, list) and len(item) == 3 else None
        if found is None:
            return None
        parts.append(found)
    if len(parts) == 1:
        return parts[0]
    return "fused", {**fused_of(parts), "dtype": parts[0][1]["dtype"]}

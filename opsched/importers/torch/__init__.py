"""Import a PyTorch module as an op graph (torch is an optional extra).

:func:`from_torch` captures ``module(*example_inputs)`` with ``torch.export.export`` (the
capture ``torch.compile`` builds on) and falls back to ``torch.fx.symbolic_trace`` plus
``ShapeProp`` when export fails. Every ATen op becomes an op of a kind of
:mod:`opsched.ir.kinds` with its shape attrs, ``flops``, ``bytes`` and ``output_bytes``; data
flow gives the deps; parameters, buffers and constants are not ops, their bytes are the
graph's ``persistent_bytes``; user inputs are ``input`` ops. Ops the table does not know keep
their ATen name in ``attrs["aten"]`` (every op does), take a generic kind (``elementwise`` or
``copy``) and are listed in one :class:`~opsched.importers._build.ImporterWarning`.
Durations are 0: a cost model assigns them.

Examples
--------
>>> import torch
>>> mlp = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU()).eval()
>>> g = from_torch(mlp, (torch.randn(8, 64),), name="mlp")
>>> [(op.kind, op.attrs["flops"]) for op in g.ops]
[('input', 0), ('matmul', 32768), ('elementwise', 256)]
>>> g.persistent_bytes  # (64 * 32 + 32) float32 weights
8320
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from opsched._files import note_input
from opsched.errors import InputError, ProblemError
from opsched.importers._build import GraphBuilder, dtype_name
from opsched.ir.graph import OpGraph

__all__ = ["INSTALL_HINT", "from_exported", "from_torch", "read_pt2"]

INSTALL_HINT = "pip install torch==2.13.0"


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise ProblemError(f"the torch importer needs PyTorch: {INSTALL_HINT}") from None
    return torch


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:300]


def _dtype(dtype: Any) -> str | None:
    if dtype is None:
        return None
    return dtype_name(str(dtype), getattr(dtype, "itemsize", None))


def from_exported(ep: Any, name: str = "torch", dtype: Any = None, where: str = "torch") -> OpGraph:
    """Build the graph of a ``torch.export.ExportedProgram``.

    Parameters
    ----------
    ep
        The exported program (``torch.export.export(module, args)`` or a loaded ``.pt2``).
    name
        Graph name.
    dtype
        Model every floating-point tensor at this dtype (``"float16"``, ``torch.bfloat16``).
    where
        Prefix of error messages (the file the program came from).

    Examples
    --------
    >>> import torch
    >>> ep = torch.export.export(torch.nn.Softmax(dim=-1), (torch.randn(4, 10),))
    >>> g = from_exported(ep, name="sm")
    >>> g["softmax"].kind, g["softmax"].attrs["rows"], g["softmax"].attrs["cols"]
    ('softmax', 4, 10)
    """
    from opsched.importers.torch.capture import walk_exported

    b = GraphBuilder(name, where=where, source="torch", dtype=_dtype(dtype))
    b.attrs["capture"] = "torch.export"
    walk_exported(b, ep)
    return b.build()


def from_torch(
    module: Any,
    example_inputs: Any,
    name: str | None = None,
    dtype: Any = None,
) -> OpGraph:
    """Capture ``module(*example_inputs)`` and return its op graph.

    Parameters
    ----------
    module
        A ``torch.nn.Module`` (put it in ``eval()`` mode for an inference graph), or an
        ``ExportedProgram`` (``example_inputs`` is then ignored).
    example_inputs
        A tuple of example arguments (a single tensor is accepted too); their shapes fix the
        graph's shapes.
    name
        Graph name (default: the module's class name).
    dtype
        Model floating-point tensors at this dtype instead of the captured one.

    Returns
    -------
    OpGraph
        ``attrs["capture"]`` says which capture worked (``"torch.export"`` or
        ``"fx.symbolic_trace"``; then ``attrs["export_error"]`` says why export failed).

    Raises
    ------
    ProblemError
        torch is not installed (with the install hint).
    InputError
        Neither capture works on the module (both reasons in one line), or a shape is not
        static.

    Examples
    --------
    >>> import torch
    >>> conv = torch.nn.Conv2d(3, 16, 3, padding=1)
    >>> g = from_torch(conv, (torch.randn(1, 3, 32, 32),))
    >>> op = g.ops[1]
    >>> op.kind, op.attrs["flops"] == 2 * 16 * 3 * 3 * 3 * 32 * 32, op.output_bytes
    ('conv2d', True, 65536)
    """
    torch = _torch()
    if isinstance(module, torch.export.ExportedProgram):
        return from_exported(module, name or "exported", dtype)
    if not isinstance(module, torch.nn.Module):
        raise InputError(f"expected a torch.nn.Module, got {type(module).__name__}", "torch")
    if not isinstance(example_inputs, tuple):
        example_inputs = (
            tuple(example_inputs) if isinstance(example_inputs, list) else (example_inputs,)
        )
    gname = name or type(module).__name__
    try:
        ep = torch.export.export(module, example_inputs)
    except Exception as e:
        export_error = _first_line(e)
    else:
        return from_exported(ep, gname, dtype, where=gname)
    return _from_symbolic_trace(torch, module, example_inputs, gname, dtype, export_error)


def _from_symbolic_trace(
    torch: Any, module: Any, inputs: tuple[Any, ...], name: str, dtype: Any, export_error: str
) -> OpGraph:
    from torch.fx.passes.shape_prop import ShapeProp

    from opsched.importers.torch.capture import walk_fx

    try:
        gm = torch.fx.symbolic_trace(module)
        ShapeProp(gm).propagate(*inputs)
    except Exception as e:
        raise InputError(
            f"cannot capture the module: torch.export failed ({export_error}); "
            f"fx.symbolic_trace failed ({_first_line(e)})",
            name,
        ) from None
    b = GraphBuilder(name, where=name, source="torch", dtype=_dtype(dtype))
    b.attrs.update(capture="fx.symbolic_trace", export_error=export_error)
    walk_fx(b, gm, module)
    return b.build()


def read_pt2(path: str | os.PathLike[str]) -> OpGraph:
    """Read a program saved with ``torch.export.save`` (``.pt2``); named after the file.

    Raises
    ------
    InputError
        Missing file, or not a ``.pt2`` archive torch can load (one line, naming the file).
    """
    torch = _torch()
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", str(p))
    note_input(p)
    import zipfile

    if not zipfile.is_zipfile(p):  # torch would log a whole traceback before it raises
        raise InputError("not a torch.export archive (not a zip file)", str(p))
    try:
        ep = torch.export.load(str(p))
    except Exception as e:
        raise InputError(f"not a torch.export archive ({_first_line(e)})", str(p)) from None
    return from_exported(ep, p.stem, where=str(p))

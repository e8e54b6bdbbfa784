"""Compiled inner loops, with the same code runnable as plain Python.

Graph sweeps and list scheduling are sequential loops over arrays; at a million ops a
Python loop costs seconds, so those loops are written once in the subset of Python that
numba compiles (NumPy arrays, scalars, no objects) and decorated with :func:`kernel`.

:func:`call` picks how to run one: compiled for large inputs (the first compiled call of a
session loads the machine code from numba's on-disk cache, or compiles it once, about a
second per kernel, done once per installation), interpreted for toy ones (a few dozen ops),
where even loading the compiled code would cost more than it saves. The
environment variable ``OPSCHED_JIT`` overrides the choice: ``1`` always compiles, ``0``
never does (useful to debug a kernel with pdb). Tests run both ways and compare.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "COMPILE_MIN_SIZE",
    "JIT_MIN_SIZE",
    "call",
    "clock",
    "compiled",
    "kernel",
    "kernels_digest",
    "plain",
    "ready",
    "without_compiling",
]

#: Inputs at least this large (ops + edges) run compiled when ``OPSCHED_JIT`` is unset.
#: Interpreted, a kernel is ~1000x slower (NumPy scalar access), so only toy graphs stay so.
JIT_MIN_SIZE = 100

_numba: Any
try:  # numba is a dependency, but a broken install should only cost speed
    import numba as _numba
except Exception:  # pragma: no cover
    _numba = None


def kernel(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``fn`` as a kernel: compiled lazily with numba, the original kept as ``py_func``."""
    if _numba is None:  # pragma: no cover
        fn.py_func = fn  # type: ignore[attr-defined]
        return fn
    return _numba.njit(cache=True, nogil=True)(fn)


def _clock() -> float:
    """``time.perf_counter()``, callable from a kernel (through numba's object mode), so a
    long kernel can stop at a wall-clock deadline. Not ``nogil``: object mode holds the GIL
    for the few microseconds of the call, and numba warns if a ``nogil`` function uses it."""
    if _numba is None:  # pragma: no cover
        return time.perf_counter()
    with _numba.objmode(t="float64"):
        t = time.perf_counter()
    return t


clock: Callable[[], float] = (
    _numba.njit(cache=True)(_clock) if _numba is not None else time.perf_counter
)


def compiled(size: int) -> bool:
    """Whether a kernel call on an input of ``size`` runs compiled (see module docstring)."""
    mode = os.environ.get("OPSCHED_JIT", "")
    return (mode == "1" or (mode != "0" and size >= JIT_MIN_SIZE)) and _numba is not None


#: Under :func:`without_compiling`, inputs at least this large still run compiled when the
#: kernel must be compiled first (about a second per kernel, once per installation):
#: interpreted, 20,000 elements take about as long as one compile.
COMPILE_MIN_SIZE = 20_000

_READY: set[Callable[..., Any]] = set()
_AVOID = contextvars.ContextVar("opsched_avoid_compiling", default=False)


@contextlib.contextmanager
def without_compiling() -> Iterator[None]:
    """Within this block a kernel that is neither compiled in this process nor in numba's
    cache runs interpreted on inputs below :data:`COMPILE_MIN_SIZE` instead of compiling.

    For work under a time limit: on a fresh installation the first ``opsched solve`` of a
    300-op graph with ``--time-limit 2`` had spent 12 s compiling the heuristic start's
    kernels, work that takes milliseconds interpreted (:func:`opsched.solver.solve_cpsat`
    runs in this block). Outside it the first large call compiles, for every later one."""
    token = _AVOID.set(True)
    try:
        yield
    finally:
        _AVOID.reset(token)


def call(fn: Callable[..., Any], size: int, *args: Any) -> Any:
    """Run kernel ``fn`` on ``args``, compiled if ``size`` is large (see module docstring
    and :func:`without_compiling`)."""
    if not compiled(size):
        return plain(fn)(*args)
    avoid = _AVOID.get() and size < COMPILE_MIN_SIZE and os.environ.get("OPSCHED_JIT") != "1"
    if avoid and fn not in _READY:
        if not ready(fn):
            return plain(fn)(*args)
        _READY.add(fn)
    return fn(*args)


_PLAIN: dict[Any, Callable[..., Any]] = {}


def plain(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Kernel ``fn``'s Python code, calling the Python code of the kernels it calls.

    ``fn.py_func`` alone still called its helpers (``_heap_push``...) as compiled
    functions, and calling one from Python compiles it: an interpreted run compiled four
    helpers, a second and more on a fresh installation."""
    done = _PLAIN.get(fn)
    if done is not None:
        return done
    py = getattr(fn, "py_func", fn)
    if not isinstance(py, types.FunctionType):  # not a numba kernel: its own Python form
        return py
    names = dict(py.__globals__)
    out = types.FunctionType(py.__code__, names, py.__name__, py.__defaults__, py.__closure__)
    _PLAIN[fn] = out  # before the helpers: a kernel that calls itself finds this one
    for key, value in py.__globals__.items():
        if value is fn:  # a kernel that calls itself
            names[key] = out
        elif hasattr(value, "py_func") and hasattr(value, "overloads"):
            names[key] = plain(value)
    return out


def ready(fn: Callable[..., Any]) -> bool:
    """Whether kernel ``fn`` can run compiled without compiling first.

    True when it was compiled in this process, or when numba's on-disk cache holds machine
    code built from its current source (loading that takes well under a second; compiling
    a large kernel takes seconds). This reads numba's cache index, which is not public
    API: on any surprise it answers False (the caller then plans for a compile).
    """
    if _numba is None:  # pragma: no cover
        return False
    try:
        if fn.overloads:  # type: ignore[attr-defined]
            return True
        return bool(fn._cache._cache_file._load_index())  # type: ignore[attr-defined]
    except Exception:  # pragma: no cover
        return False


def kernels_digest(module: types.ModuleType) -> str:
    """A digest of the source of every kernel defined in ``module``.

    numba's on-disk cache of a kernel checks only the time stamp of the kernel's own file,
    yet a kernel compiles the kernels it calls from other files into itself. A module whose
    kernels call another module's keeps this digest of that module as a constant, and a
    test compares the two (``tests/test_jit_cache.py``): a change to the called kernels then
    fails that test until the constant is updated, and updating it changes the caller's
    file, which makes numba compile the caller afresh.

    >>> import opsched.heuristics._kernels as k
    >>> len(kernels_digest(k))
    16
    """
    import hashlib
    import inspect

    parts = []
    for name in sorted(vars(module)):
        fn = getattr(getattr(module, name), "py_func", None)
        if fn is not None and getattr(fn, "__module__", None) == module.__name__:
            parts.append(inspect.getsource(fn))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]

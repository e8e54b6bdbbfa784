"""Names a package exports, imported on first use (PEP 562).

``import opsched`` (and so every ``opsched`` command) had imported every subsystem it
re-exports: OR-Tools, pandas, numba and scipy, about 2 s of CPU before a command's first
line ran. A package lists its exports as ``{name: module}``; :func:`lazy_exports` gives the
module-level ``__getattr__`` and ``__dir__`` that import a name's module when the name is
first read and keep the value in the package's namespace. Type checkers read the same names
from the package's ``if TYPE_CHECKING:`` imports.

Examples
--------
>>> import sys
>>> getattr_, dir_ = lazy_exports("pkg", {"sqrt": "math", "json": "json"}, {})
>>> getattr_("sqrt")(9.0), getattr_("json") is sys.modules["json"]
(3.0, True)
>>> getattr_("nope")
Traceback (most recent call last):
AttributeError: module 'pkg' has no attribute 'nope'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps each exported name to the
    module that defines it (a name equal to the module's own last component, and not an
    attribute of it, is the module itself: ``"registry": "opsched.registry"``); ``namespace``
    is the package's ``globals()``, where a loaded name is kept so later reads are plain."""

    def __getattr__(name: str) -> Any:
        where = exports.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(where)
        value = getattr(module, name) if hasattr(module, name) else module
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__

"""Graph transforms: dependency derivation from read/write sets, buffer renaming, cutting out
pieces (cells, stages). Fusion lives in :mod:`opsched.transforms.fusion`."""

from typing import TYPE_CHECKING

from opsched._lazy import lazy_exports

#: Loaded on first use (:mod:`opsched._lazy`), so that the command line's modules here import
#: only what a command needs.
_LAZY: dict[str, str] = {
    "NamedDependency": "opsched.transforms.deps",
    "RenameReport": "opsched.transforms.deps",
    "dependency_edges": "opsched.transforms.deps",
    "derive_deps": "opsched.transforms.deps",
    "extract": "opsched.transforms.subgraph",
    "program_order_chain": "opsched.transforms.deps",
    "rename_buffers": "opsched.transforms.deps",
    "select": "opsched.transforms.subgraph",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from opsched.transforms.deps import (
        NamedDependency,
        RenameReport,
        dependency_edges,
        derive_deps,
        program_order_chain,
        rename_buffers,
    )
    from opsched.transforms.subgraph import extract, select


__all__ = [
    "NamedDependency",
    "RenameReport",
    "dependency_edges",
    "derive_deps",
    "extract",
    "program_order_chain",
    "rename_buffers",
    "select",
]

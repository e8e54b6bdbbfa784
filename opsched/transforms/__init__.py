"""Graph transforms: dependency derivation from read/write sets, buffer renaming, cutting out
pieces (cells, stages). Fusion lives in :mod:`opsched.transforms.fusion`."""

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

"""Graph transforms: dependency derivation from read/write sets, buffer renaming."""

from opsched.transforms.deps import (
    NamedDependency,
    RenameReport,
    dependency_edges,
    derive_deps,
    program_order_chain,
    rename_buffers,
)

__all__ = [
    "NamedDependency",
    "RenameReport",
    "dependency_edges",
    "derive_deps",
    "program_order_chain",
    "rename_buffers",
]

"""The op-graph intermediate representation and its JSON format."""

from opsched.ir.graph import DEFAULT_DEMANDS, MAX_SIZE, Op, OpGraph
from opsched.ir.jsonio import (
    GRAPH_FORMAT,
    graph_from_dict,
    graph_to_dict,
    read_graph_json,
    write_graph_json,
)
from opsched.ir.program import DEP_KINDS, Dependency, derive_dependencies

__all__ = [
    "DEFAULT_DEMANDS",
    "DEP_KINDS",
    "GRAPH_FORMAT",
    "MAX_SIZE",
    "Dependency",
    "Op",
    "OpGraph",
    "derive_dependencies",
    "graph_from_dict",
    "graph_to_dict",
    "read_graph_json",
    "write_graph_json",
]

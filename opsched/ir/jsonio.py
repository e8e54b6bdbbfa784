"""Reading and writing the ``opsched-graph/1`` JSON format.

The format (documented in ``docs/formats.md``)::

    {"format": "opsched-graph/1", "name": "seed-demo", "persistent_bytes": 0,
     "resources": {"dma": 2},
     "ops": [{"name": "Input", "duration": 1},
             {"name": "Conv1", "duration": 1, "deps": ["Input"], "output_bytes": 4096,
              "workspace_bytes": 0, "kind": "conv2d", "demands": {"units": 1}}]}

Ops may instead be given in *program form*, with ``reads``/``writes`` buffer lists; their
dependencies (RAW, WAR and WAW) are then derived from program order and added to any explicit
``deps``. Every error names the op (by name and position) and the field at fault.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, cast

from opsched._files import read_text, refuse_lone_surrogates, write_text_atomic
from opsched.errors import GraphError, InputError
from opsched.ir.graph import Op, OpGraph, require_graph
from opsched.ir.program import derive_dependencies

__all__ = [
    "GRAPH_FORMAT",
    "INDENT_MAX_OPS",
    "graph_from_dict",
    "graph_to_dict",
    "read_graph_json",
    "write_graph_json",
    "write_json_atomic",
]

GRAPH_FORMAT = "opsched-graph/1"

_OP_KEYS = {
    "name",
    "duration",
    "deps",
    "output_bytes",
    "workspace_bytes",
    "demands",
    "kind",
    "output",
    "attrs",
    "reads",
    "writes",
}
_GRAPH_KEYS = {"format", "name", "persistent_bytes", "resources", "ops", "attrs", "derive_deps"}


def _op_from_record(rec: Any, i: int) -> Op:
    if not isinstance(rec, Mapping):
        raise GraphError(f"must be an object, got {type(rec).__name__}", f"ops[{i}]")
    name = rec.get("name")
    where = f"op {name!r} (ops[{i}])" if isinstance(name, str) and name else f"ops[{i}]"
    if "name" not in rec:
        raise GraphError("missing required field 'name'", where)
    unknown = set(rec) - _OP_KEYS
    if unknown:
        raise GraphError(f"unknown field(s) {sorted(unknown)}", where)
    for key in ("deps", "reads", "writes"):
        if key in rec and not isinstance(rec[key], list):
            raise GraphError(f"{key} must be a list of names, got {rec[key]!r}", where)
    if "demands" in rec and not isinstance(rec["demands"], Mapping):
        raise GraphError(f"demands must be an object, got {rec['demands']!r}", where)
    try:
        return Op(
            name=cast(str, name),
            duration=rec.get("duration", 0),
            deps=tuple(rec.get("deps", ())),
            output_bytes=rec.get("output_bytes", 0),
            workspace_bytes=rec.get("workspace_bytes", 0),
            demands=dict(rec["demands"]) if "demands" in rec else {"units": 1},
            kind=rec.get("kind"),
            output=rec.get("output", False),
            attrs=rec.get("attrs", {}),
            reads=tuple(rec.get("reads", ())),
            writes=tuple(rec.get("writes", ())),
        )
    except GraphError as e:
        raise GraphError(e.message, where) from None


def graph_from_dict(data: Mapping[str, Any]) -> OpGraph:
    """Build an :class:`~opsched.ir.graph.OpGraph` from an ``opsched-graph/1`` document.

    Examples
    --------
    Program form: ``b`` and ``c`` read what ``a`` wrote, so both depend on ``a``.

    >>> g = graph_from_dict({"format": "opsched-graph/1", "ops": [
    ...     {"name": "a", "duration": 1, "writes": ["x"]},
    ...     {"name": "b", "duration": 1, "reads": ["x"], "writes": ["y"]},
    ...     {"name": "c", "duration": 1, "reads": ["x"], "writes": ["z"]}]})
    >>> [op.deps for op in g.ops]
    [(), ('a',), ('a',)]
    """
    if not isinstance(data, Mapping):
        raise GraphError(f"a graph document must be a JSON object, got {type(data).__name__}")
    fmt = data.get("format", GRAPH_FORMAT)
    if fmt != GRAPH_FORMAT:
        raise GraphError(f"unsupported format {fmt!r} (expected {GRAPH_FORMAT!r})", "format")
    unknown = set(data) - _GRAPH_KEYS
    if unknown:
        raise GraphError(f"unknown top-level field(s) {sorted(unknown)}")
    if "ops" not in data:
        raise GraphError("missing required field 'ops'")
    records = data["ops"]
    if not isinstance(records, list):
        raise GraphError(f"'ops' must be a list, got {type(records).__name__}")
    ops = [_op_from_record(rec, i) for i, rec in enumerate(records)]
    derive = data.get("derive_deps", True)
    if not isinstance(derive, bool):
        raise GraphError(f"derive_deps must be true or false, got {derive!r}", "derive_deps")
    if derive and any(op.reads or op.writes for op in ops):
        ops = _with_program_deps(ops)
    name = data.get("name", "graph")
    if not isinstance(name, str):
        raise GraphError(f"graph name must be a string, got {name!r}", "name")
    resources = data.get("resources", {})
    if not isinstance(resources, Mapping):
        raise GraphError(f"resources must be an object, got {resources!r}", "resources")
    attrs = data.get("attrs", {})
    if not isinstance(attrs, Mapping):
        raise GraphError(f"attrs must be an object, got {attrs!r}", "attrs")
    return OpGraph(
        tuple(ops),
        name=name,
        persistent_bytes=data.get("persistent_bytes", 0),
        resources=dict(resources),
        attrs=dict(attrs),
    )


def _with_program_deps(ops: list[Op]) -> list[Op]:
    """Add the RAW/WAR/WAW edges implied by reads/writes in program order to explicit deps."""
    from dataclasses import replace

    edges = derive_dependencies([op.reads for op in ops], [op.writes for op in ops])
    extra: list[dict[str, None]] = [dict.fromkeys(op.deps) for op in ops]
    for e in edges:
        extra[e.dst][ops[e.src].name] = None
    return [replace(op, deps=tuple(extra[i])) for i, op in enumerate(ops)]


def graph_to_dict(graph: OpGraph) -> dict[str, Any]:
    """Serialise ``graph`` as an ``opsched-graph/1`` document (defaults left out)."""
    ops: list[dict[str, Any]] = []
    for op in graph.ops:
        rec: dict[str, Any] = {"name": op.name, "duration": _num(op.duration)}
        if op.deps:
            rec["deps"] = list(op.deps)
        if op.output_bytes:
            rec["output_bytes"] = op.output_bytes
        if op.workspace_bytes:
            rec["workspace_bytes"] = op.workspace_bytes
        if dict(op.demands) != {"units": 1}:
            rec["demands"] = dict(op.demands)
        if op.kind is not None:
            rec["kind"] = op.kind
        if op.output:
            rec["output"] = True
        if op.attrs:
            rec["attrs"] = dict(op.attrs)
        if op.reads:
            rec["reads"] = list(op.reads)
        if op.writes:
            rec["writes"] = list(op.writes)
        ops.append(rec)
    doc: dict[str, Any] = {
        "format": GRAPH_FORMAT,
        "name": graph.name,
        "persistent_bytes": graph.persistent_bytes,
    }
    if graph.resources:
        doc["resources"] = dict(graph.resources)
    if graph.attrs:
        doc["attrs"] = dict(graph.attrs)
    if any(op.reads or op.writes for op in graph.ops):
        # the deps are already those wanted (a RAW-only graph from derive_deps or
        # rename_buffers would otherwise gain its WAR/WAW edges back when read)
        doc["derive_deps"] = False
    doc["ops"] = ops
    return doc


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else x


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refused where a key repeats (Python's reader would keep the last value
    and drop the others without a word)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"the key {k!r} appears twice in one object")
        out[k] = v
    return out


def load_json_file(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file; errors become :class:`InputError` with ``file:line:col``."""
    text = read_text(path)
    try:
        # NaN and Infinity parse as floats; the graph checks then reject them naming the op
        doc = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as e:
        raise InputError(f"invalid JSON: {e.msg}", f"{path}:{e.lineno}:{e.colno}") from None
    except ValueError as e:
        raise InputError(f"invalid JSON: {e}", str(path)) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", str(path)) from None
    refuse_lone_surrogates(doc, text, str(path))
    return doc


def read_graph_json(path: str | os.PathLike[str]) -> OpGraph:
    """Read an ``opsched-graph/1`` JSON file. Errors name the file and the op at fault."""
    data = load_json_file(path)
    try:
        return graph_from_dict(data)
    except GraphError as e:
        raise e.located(str(path)) from None


def write_json_atomic(doc: Any, path: str | os.PathLike[str], indent: int | None = 1) -> None:
    """Write ``doc`` as JSON to ``path`` atomically (never a half-written file)."""
    write_text_atomic(json.dumps(doc, indent=indent, allow_nan=False) + "\n", path)


#: Graphs and schedules of more ops are written without indentation: Python's encoder
#: indents in interpreted code, 4-8x slower than its compiled compact one (5.6 s against
#: 0.7-1.5 s for a 400,000-op graph) and with every piece of the text held as a string
#: until they are joined (some hundreds of MB more at the peak).
INDENT_MAX_OPS = 10_000


def write_graph_json(graph: OpGraph, path: str | os.PathLike[str]) -> None:
    """Write ``graph`` to ``path`` as ``opsched-graph/1`` (atomically); one field per line
    up to :data:`INDENT_MAX_OPS` ops, compact beyond."""
    require_graph(graph, "write_graph_json(graph, path)")
    indent = 1 if graph.num_ops <= INDENT_MAX_OPS else None
    write_json_atomic(graph_to_dict(graph), path, indent=indent)

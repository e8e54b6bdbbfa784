"""The op-graph IR: :class:`Op` and :class:`OpGraph`.

An :class:`OpGraph` is an immutable DAG of operators. Each op has a duration, an output tensor
size, a workspace size and integer resource demands. Inputs are checked once, on construction,
with one-line messages that name the op; the derived lookup tables (name index, CSR adjacency,
NumPy arrays) are built lazily afterwards and cached.

Examples
--------
>>> g = OpGraph.from_dict({"name": "tiny", "ops": [
...     {"name": "a", "duration": 2, "output_bytes": 8},
...     {"name": "b", "duration": 1, "deps": ["a"]}]})
>>> g.num_ops, g.num_edges, g.work
(2, 1, 3.0)
>>> g.successors("a")
['b']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from opsched.errors import GraphError
from opsched.ir.op import DEFAULT_DEMANDS, MAX_SIZE, Op, check_number, check_size

__all__ = [
    "DEFAULT_DEMANDS",
    "MAX_SIZE",
    "MAX_TOTAL_TIME",
    "Op",
    "OpGraph",
    "check_number",
    "check_size",
]

#: A graph's durations must total less: whole-number times below it are exact in float64.
MAX_TOTAL_TIME = 2**53


def require_graph(graph: Any, who: str) -> None:
    """Raise a ``TypeError`` naming ``who`` unless ``graph`` is an :class:`OpGraph` (a
    problem passed where its graph belongs: ``problem.graph``)."""
    if not isinstance(graph, OpGraph):
        hint = " (a Problem's graph is problem.graph)" if hasattr(graph, "graph") else ""
        raise TypeError(f"{who} takes an OpGraph, got {type(graph).__name__}{hint}")


@dataclass(frozen=True, eq=False)
class OpGraph:
    """An immutable DAG of :class:`Op`.

    Parameters
    ----------
    ops
        The ops, in file (program) order. The order matters for stable tie-breaking: Kahn's
        topological order, the greedy ready queue and dependency derivation all follow it.
        The edges are the ops' ``deps`` alone: ops given in program form (``reads`` /
        ``writes``) need :func:`opsched.derive_deps` (a graph file's are derived when it is
        read), and :class:`~opsched.problem.Problem` refuses a graph whose ``deps`` miss a
        read-after-write edge.
    name
        Graph name, carried into schedules and reports.
    persistent_bytes
        Memory that is always resident (weights).
    resources
        Default capacities of named resources (a :class:`~opsched.problem.Machine` may override
        them).
    attrs
        Free metadata (source file, header values, provenance).

    Raises
    ------
    GraphError
        On a duplicate name, an unknown dependency or a cycle (the message names its ops).
    """

    ops: tuple[Op, ...]
    name: str = "graph"
    persistent_bytes: int = 0
    resources: Mapping[str, int] = field(default_factory=dict)
    attrs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.ops, Op):
            raise TypeError("OpGraph takes a sequence of ops, got one Op: OpGraph((op,))")
        if isinstance(self.ops, str | bytes) or not isinstance(self.ops, Iterable):
            raise TypeError(
                f"OpGraph: ops must be a sequence of Op, got {type(self.ops).__name__} "
                "(OpGraph((Op('a', 1), Op('b', 2, deps=('a',)))))"
            )
        if not isinstance(self.name, str):
            raise GraphError(f"graph name must be a string, got {self.name!r}", "name")
        object.__setattr__(self, "ops", tuple(self.ops))
        for i, op in enumerate(self.ops):
            if not isinstance(op, Op):
                raise GraphError(f"ops[{i}] is not an Op")
        object.__setattr__(
            self,
            "persistent_bytes",
            check_size(self.persistent_bytes, "persistent_bytes", f"graph {self.name!r}"),
        )
        if not isinstance(self.resources, Mapping):
            raise GraphError("resources must be an object of name -> capacity")
        for r in self.resources:
            if not isinstance(r, str) or not r:
                raise GraphError(f"resource names must be non-empty strings, got {r!r}")
            if r == "units":  # a graph giving it would be overridden by the machine unseen
                raise GraphError(
                    "resources: 'units' is the machine's unit count, given with --units or"
                    " Machine(units=...), not by the graph"
                )
        object.__setattr__(
            self,
            "resources",
            {
                r: check_size(c, f"capacity of resource {r!r}", f"graph {self.name!r}")
                for r, c in self.resources.items()
            },
        )
        index: dict[str, int] = {}
        for i, op in enumerate(self.ops):
            if op.name in index:
                raise GraphError(
                    f"duplicate op name (ops[{index[op.name]}] and ops[{i}])", f"op {op.name!r}"
                )
            index[op.name] = i
        object.__setattr__(self, "_index", index)
        try:
            self.__dict__["_csr"] = self._build_csr()
        except KeyError:
            for op in self.ops:
                for d in op.deps:
                    if d not in index:
                        raise GraphError(f"unknown dependency {d!r}", f"op {op.name!r}") from None
            raise  # pragma: no cover
        self._check_totals()
        # a cycle leaves Kahn's order short; only then search for one to name it
        from opsched._jit import call
        from opsched.analysis._kernels import kahn_order

        n = len(self.ops)
        order = call(kahn_order, n + self.num_edges, n, self.pred_ptr, self.succ_ptr,
                     self.succ_idx)  # fmt: skip
        if len(order) < n:
            cycle = self._find_cycle()
            # names as they are, but quoted where they hold a line break or another control
            shown = " -> ".join(c if c.isprintable() else repr(c) for c in [*cycle, cycle[0]])
            raise GraphError(f"dependency cycle: {shown}")

    def _check_totals(self) -> None:
        """Each size is at most 2^62, but memory sums them (in int64) and a schedule sums
        durations (in float64, exact for whole numbers up to 2^53): refuse totals past that."""
        total = (
            self.persistent_bytes
            + float(self.output_sizes.sum(dtype=np.float64))
            + float(self.workspace_sizes.sum(dtype=np.float64))
        )
        if total > MAX_SIZE:
            raise GraphError(
                f"persistent, output and workspace bytes total {total:.3g}, more than 2^62 "
                "(memory is summed in 64-bit integers)",
                f"graph {self.name!r}",
            )
        work = float(self.durations.sum())
        if work >= MAX_TOTAL_TIME:  # a float sum just past 2^53 rounds to it, not below
            raise GraphError(
                f"durations total {work:.3g}, 2^53 or more (times past it are not exact "
                "in floating point; use a coarser time unit)",
                f"graph {self.name!r}",
            )

    # ------------------------------------------------------------------ construction helpers
    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OpGraph:
        """Build a graph from an ``opsched-graph/1`` document (see :mod:`opsched.ir.jsonio`)."""
        from opsched.ir.jsonio import graph_from_dict

        return graph_from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        """Return the ``opsched-graph/1`` document of this graph."""
        from opsched.ir.jsonio import graph_to_dict

        return graph_to_dict(self)

    def replace_ops(self, ops: Sequence[Op], **changes: Any) -> OpGraph:
        """Return a new graph with ``ops`` (and optionally other fields) replaced."""
        fields: dict[str, Any] = {
            "name": self.name,
            "persistent_bytes": self.persistent_bytes,
            "resources": self.resources,
            "attrs": self.attrs,
        }
        fields.update(changes)
        return OpGraph(tuple(ops), **fields)

    # ------------------------------------------------------------------ lookups
    def __len__(self) -> int:
        return len(self.ops)

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops)

    def __contains__(self, name: object) -> bool:
        return name in self._index  # type: ignore[attr-defined]

    def __getitem__(self, name: str) -> Op:
        try:
            return self.ops[self._index[name]]  # type: ignore[attr-defined]
        except KeyError:
            raise GraphError(f"unknown op {name!r}", f"graph {self.name!r}") from None

    def index(self, name: str) -> int:
        """Position of op ``name`` in :attr:`ops` (raises :class:`GraphError` if unknown)."""
        try:
            return int(self._index[name])  # type: ignore[attr-defined]
        except KeyError:
            raise GraphError(f"unknown op {name!r}", f"graph {self.name!r}") from None

    @cached_property
    def names(self) -> list[str]:
        """Op names in file order (one shared list: do not modify it)."""
        return [op.name for op in self.ops]

    @property
    def num_ops(self) -> int:
        return len(self.ops)

    @property
    def num_edges(self) -> int:
        return int(self.pred_ptr[-1])

    @property
    def work(self) -> float:
        """Sum of all durations (the serial, one-unit execution time)."""
        return float(self.durations.sum())

    def predecessors(self, name: str) -> list[str]:
        return list(self[name].deps)

    def successors(self, name: str) -> list[str]:
        i = self.index(name)
        return [self.ops[j].name for j in self.succ_idx[self.succ_ptr[i] : self.succ_ptr[i + 1]]]

    def consumers(self) -> list[list[int]]:
        """For each op (by index), the indices of the ops that list it in ``deps``."""
        return [
            self.succ_idx[self.succ_ptr[i] : self.succ_ptr[i + 1]].tolist()
            for i in range(self.num_ops)
        ]

    def resource_names(self) -> list[str]:
        """Every resource named by an op demand or a graph capacity, ``units`` first."""
        seen: dict[str, None] = {"units": None}
        for r in self.resources:
            seen[r] = None
        for r in self._demand_arrays:
            seen[r] = None
        return list(seen)

    # ------------------------------------------------------------------ array views (cached)
    @cached_property
    def durations(self) -> np.ndarray:
        """Durations as a float64 array, in op order."""
        return np.fromiter((op.duration for op in self.ops), dtype=np.float64, count=self.num_ops)

    @cached_property
    def output_sizes(self) -> np.ndarray:
        return np.fromiter((op.output_bytes for op in self.ops), dtype=np.int64, count=self.num_ops)

    @cached_property
    def workspace_sizes(self) -> np.ndarray:
        return np.fromiter(
            (op.workspace_bytes for op in self.ops), dtype=np.int64, count=self.num_ops
        )

    def demand_array(self, resource: str) -> np.ndarray:
        """Demand of every op for ``resource`` (0 where it names none); do not modify it."""
        arrays = self._demand_arrays
        if resource not in arrays:
            return np.zeros(self.num_ops, dtype=np.int64)
        return arrays[resource]

    @cached_property
    def _demand_arrays(self) -> dict[str, np.ndarray]:
        """Resource -> demand of every op, built in one pass over the ops."""
        n = self.num_ops
        units = np.fromiter((op.demands.get("units", 0) for op in self.ops), np.int64, count=n)
        out = {"units": units}
        others = {r for op in self.ops if len(op.demands) > 1 or "units" not in op.demands
                  for r in op.demands if r != "units"}  # fmt: skip
        for r in sorted(others):
            out[r] = np.fromiter((op.demands.get(r, 0) for op in self.ops), np.int64, count=n)
        for a in out.values():
            a.flags.writeable = False
        return out

    @cached_property
    def _csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return self._build_csr()

    def _build_csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        n = len(self.ops)
        index = self._index  # type: ignore[attr-defined]
        counts = np.fromiter((len(op.deps) for op in self.ops), dtype=np.int64, count=n)
        pred_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=pred_ptr[1:])
        pred_idx = np.fromiter(
            (index[d] for op in self.ops for d in op.deps), dtype=np.int64, count=int(pred_ptr[-1])
        )
        # successors: a stable counting sort of the edges by source keeps file order per source
        dst = np.repeat(np.arange(n, dtype=np.int64), counts)
        order = np.argsort(pred_idx, kind="stable")
        succ_idx = dst[order]
        succ_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(pred_idx, minlength=n), out=succ_ptr[1:])
        return pred_ptr, pred_idx, succ_ptr, succ_idx

    @property
    def pred_ptr(self) -> np.ndarray:
        """CSR row pointer: the preds of op i are ``pred_idx[pred_ptr[i] : pred_ptr[i + 1]]``."""
        return self._csr[0]

    @property
    def pred_idx(self) -> np.ndarray:
        return self._csr[1]

    @property
    def succ_ptr(self) -> np.ndarray:
        """CSR row pointer of successors (consumers), in file order of the consumer."""
        return self._csr[2]

    @property
    def succ_idx(self) -> np.ndarray:
        return self._csr[3]

    # ------------------------------------------------------------------ checks
    def _find_cycle(self) -> list[str]:
        """Return the ops of one dependency cycle, or ``[]`` for a DAG (iterative DFS)."""
        n = len(self.ops)
        index = self._index  # type: ignore[attr-defined]
        state = [0] * n  # 0 new, 1 on stack, 2 done
        for root in range(n):
            if state[root]:
                continue
            stack: list[tuple[int, int]] = [(root, 0)]
            path: list[int] = [root]
            state[root] = 1
            while stack:
                v, k = stack[-1]
                deps = self.ops[v].deps
                if k < len(deps):
                    stack[-1] = (v, k + 1)
                    w = index[deps[k]]
                    if state[w] == 1:
                        cyc = path[path.index(w) :]
                        # deps point backwards in time: reverse to show data flow order
                        return [self.ops[i].name for i in reversed(cyc)]
                    if state[w] == 0:
                        state[w] = 1
                        stack.append((w, 0))
                        path.append(w)
                else:
                    state[v] = 2
                    stack.pop()
                    path.pop()
        return []

    # ------------------------------------------------------------------ interop
    def to_networkx(self) -> Any:
        """Return a :class:`networkx.DiGraph` with op fields as node attributes."""
        from opsched.ir.nx import to_networkx

        return to_networkx(self)

    def summary(self) -> str:
        """One line: name, ops, edges, work."""
        return f"{self.name}: {self.num_ops} ops, {self.num_edges} edges, work {self.work:g}"

    def __repr__(self) -> str:
        return f"OpGraph({self.summary()})"

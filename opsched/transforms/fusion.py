"""Operator fusion: Conv+BN+ReLU, GEMM+bias+activation and elementwise chains.

:func:`fuse` walks the graph in topological order and grows a fusion group from each op that
can lead one (``conv2d``, ``matmul``, ``elementwise``, ``batchnorm``) by absorbing its
consumer while every condition holds:

* the consumer is an epilogue op (``elementwise`` or ``batchnorm``) with the same number of
  elements as the group's current output;
* legality: the group's current output has exactly one consumer and is not a graph output,
  so the intermediate tensor is needed by nobody else and never has to exist in memory.
  Contracting an op into its only consumer cannot close a cycle;
* limits: at most ``max_ops`` ops in a group and, if given, at most ``max_bytes`` of memory
  traffic for the fused op;
* with ``new_inputs=False``, the consumer brings no new input produced by another op (see
  :func:`fuse`): fusing a residual add makes the whole group wait for the other branch,
  which can lengthen the schedule (measured on ResNet-50 in ``docs/generators.md``).

A group becomes one op of kind ``"fused"`` (see :mod:`opsched.ir.kinds`) with attrs
``flops`` (the members' sum), ``bytes`` (one read of the group's inputs and one write of its
output: each internal tensor's write and read are removed, so N chained unary ops go from 2N
tensor accesses to 2), ``numel`` and ``dtype`` of the output, and ``fused_from`` (member
names). It keeps the last member's output tensor and ``output`` flag, depends on every
member's outside inputs, holds the largest workspace and, per resource, the largest demand of
its members that take time (a zero-duration op holds nothing), and is named ``"a+b+c"`` after
them.

Duration rule: a member's time is taken to scale with its ``flops + bytes``; fusion removes
the member's share of the eliminated traffic, so member ``i`` contributes
``d_i * (flops_i + bytes_i') / (flops_i + bytes_i)``, ``bytes_i'`` being its bytes without
the removed accesses. The fused duration is the sum, rounded up to an integer when every
duration of the graph is an integer (it never exceeds the members' total). The cost model
(``opsched.cost``) prices ``fused`` ops by roofline from ``flops`` and ``bytes`` instead.

Ops whose kind is not in the kinds vocabulary, or whose attrs do not give their cost, are
left alone (counted in :attr:`FusionReport.uncosted`).

This module rewrites the graph and reports; finding the groups (costs, chains, pattern
names) is :mod:`opsched.transforms.fusion_patterns`.

Examples
--------
>>> from opsched.ir import Op, OpGraph
>>> ew = lambda n, deps, fn: Op(n, 1, deps=deps, kind="elementwise", output_bytes=400,
...                             attrs={"numel": 100, "fn": fn})
>>> g = OpGraph((ew("a", (), "exp"), ew("b", ("a",), "neg"), ew("c", ("b",), "relu")))
>>> fused, rep = fuse(g)
>>> [op.name for op in fused.ops], fused.ops[0].attrs["bytes"], rep.bytes_saved
(['a+b+c'], 800, 1600)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from opsched.errors import ProblemError
from opsched.ir.graph import Op, OpGraph
from opsched.transforms.fusion_patterns import (
    EPILOGUE_KINDS,
    HEAD_KINDS,
    OpCost,
    find_groups,
    op_cost,
    pattern_name,
    reread_saving,
)

__all__ = ["EPILOGUE_KINDS", "HEAD_KINDS", "FusedGroup", "FusionReport", "fuse"]


@dataclass(frozen=True)
class FusedGroup:
    """One fused op: its new name, its members (in data-flow order) and what it saves."""

    name: str
    members: tuple[str, ...]
    pattern: str
    flops: int
    bytes: int
    bytes_saved: int
    duration_before: float
    duration_after: float


@dataclass
class FusionReport:
    """What :func:`fuse` did: op counts, memory traffic, materialised tensors, work."""

    ops_before: int
    ops_after: int
    bytes_before: int
    bytes_after: int
    intermediate_bytes: int
    work_before: float
    work_after: float
    uncosted: int
    groups: list[FusedGroup] = field(default_factory=list)

    @property
    def bytes_saved(self) -> int:
        """Memory traffic removed (internal tensors no longer written and read back)."""
        return self.bytes_before - self.bytes_after

    def by_pattern(self) -> dict[str, int]:
        """Number of fused ops per pattern (``"conv2d+batchnorm+relu"``...)."""
        out: dict[str, int] = {}
        for grp in self.groups:
            out[grp.pattern] = out.get(grp.pattern, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))

    def __repr__(self) -> str:
        # one line: a notebook cell echoing the report of a large model printed every group
        return (f"<FusionReport ops {self.ops_before} -> {self.ops_after} ({len(self.groups)} "
                f"fused ops), saved {self.bytes_saved} B>")  # fmt: skip

    def summary(self) -> str:
        """A few lines: ops before/after, bytes saved, patterns."""
        pct = 100.0 * self.bytes_saved / self.bytes_before if self.bytes_before else 0.0
        lines = [
            f"ops {self.ops_before} -> {self.ops_after} ({len(self.groups)} fused ops)",
            f"memory traffic {self.bytes_before} -> {self.bytes_after} B "
            f"(saved {self.bytes_saved} B, {pct:.1f} %)",
            f"intermediate tensors no longer materialised: {self.intermediate_bytes} B",
            f"work {self.work_before:g} -> {self.work_after:g}",
        ]
        lines += [f"  {n} x {p}" for p, n in self.by_pattern().items()]
        if self.uncosted:
            lines.append(f"ops without a known cost (left alone): {self.uncosted}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ops_before": self.ops_before,
            "ops_after": self.ops_after,
            "fused_ops": len(self.groups),
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "bytes_saved": self.bytes_saved,
            "intermediate_bytes": self.intermediate_bytes,
            "work_before": self.work_before,
            "work_after": self.work_after,
            "uncosted": self.uncosted,
            "by_pattern": self.by_pattern(),
            "groups": [
                {
                    "name": grp.name,
                    "members": list(grp.members),
                    "pattern": grp.pattern,
                    "flops": grp.flops,
                    "bytes": grp.bytes,
                    "bytes_saved": grp.bytes_saved,
                    "duration_before": grp.duration_before,
                    "duration_after": grp.duration_after,
                }
                for grp in self.groups
            ],
        }


def fuse(
    graph: OpGraph,
    *,
    max_ops: int = 8,
    max_bytes: int | None = None,
    new_inputs: bool = True,
) -> tuple[OpGraph, FusionReport]:
    """Fuse Conv+BN+ReLU, GEMM+bias+activation and elementwise chains (see module doc).

    Parameters
    ----------
    graph
        Any graph; ops need a kind from :mod:`opsched.ir.kinds` with its attrs to take part.
    max_ops
        Most ops in one fused op (>= 1; 1 disables fusion).
    max_bytes
        Most memory traffic (``bytes``) of one fused op; ``None`` for no limit.
    new_inputs
        If False, an epilogue is absorbed only when its other inputs are graph inputs
        (kind ``"input"``: weights, biases) or already inputs of the group. A residual add
        whose other operand comes from a parallel branch then stays separate: fusing it
        would make the whole group (the convolution included) wait for that branch.

    Returns
    -------
    (OpGraph, FusionReport)
        The fused graph (ops in the original order, each fused op where its last member
        was) and the report.

    Raises
    ------
    GraphError
        An op of a known kind whose attrs are wrong (``flops`` of -1, NaN or text), naming it.

    Examples
    --------
    Conv -> BN -> ReLU on a 1x8x4x4 float32 tensor: the conv output and the BN output
    (512 B each) are neither written nor read back.

    >>> from opsched.ir import Op, OpGraph
    >>> shape = {"N": 1, "C": 8, "H": 4, "W": 4, "K": 8, "R": 1, "S": 1}
    >>> g = OpGraph((Op("x", 1, kind="input", attrs={"numel": 128}, output_bytes=512),
    ...     Op("conv", 4, deps=("x",), kind="conv2d", attrs=shape, output_bytes=512),
    ...     Op("bn", 2, deps=("conv",), kind="batchnorm", attrs={"numel": 128}),
    ...     Op("relu", 2, deps=("bn",), kind="elementwise", attrs={"numel": 128},
    ...        output=True)))
    >>> f, rep = fuse(g)
    >>> f.names, f["conv+bn+relu"].deps, rep.bytes_saved, rep.by_pattern()
    (['x', 'conv+bn+relu'], ('x',), 2048, {'conv2d+batchnorm+elementwise': 1})
    """
    if isinstance(max_ops, bool) or not isinstance(max_ops, int) or max_ops < 1:
        raise ProblemError(f"max_ops must be an integer >= 1, got {max_ops!r}")
    if max_bytes is not None and (
        isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0
    ):
        raise ProblemError(f"max_bytes must be an integer >= 0, got {max_bytes!r}")
    costs = [op_cost(op) for op in graph.ops]
    groups = find_groups(graph, costs, max_ops, max_bytes, new_inputs)
    integral = all(float(d).is_integer() for d in graph.durations.tolist())
    used = set(graph.names)
    replaced: dict[int, Op] = {}  # last member index -> fused op
    dropped: set[int] = set()
    renamed: dict[str, str] = {}
    report_groups: list[FusedGroup] = []
    intermediate = 0
    for members in groups:
        fused_op, info = _fuse_group(graph, costs, members, integral, used)
        used.add(fused_op.name)
        replaced[members[-1]] = fused_op
        dropped.update(members[:-1])
        renamed[graph.ops[members[-1]].name] = fused_op.name
        intermediate += sum(graph.ops[m].output_bytes for m in members[:-1])
        report_groups.append(info)
    new_ops: list[Op] = []
    for i, op in enumerate(graph.ops):
        if i in dropped:
            continue
        new = replaced.get(i, op)
        if any(d in renamed for d in new.deps):
            new = _with_deps(new, tuple(renamed.get(d, d) for d in new.deps))
        new_ops.append(new)
    attrs = dict(graph.attrs)
    attrs["fusion"] = {"ops_before": graph.num_ops, "fused_ops": len(groups)}
    fused = graph.replace_ops(new_ops, attrs=attrs) if groups else graph
    before = sum(c.bytes for c in costs if c is not None)
    after = sum(c.bytes for c in (op_cost(op) for op in fused.ops) if c is not None)
    report = FusionReport(
        ops_before=graph.num_ops,
        ops_after=fused.num_ops,
        bytes_before=before,
        bytes_after=after,
        intermediate_bytes=intermediate,
        work_before=graph.work,
        work_after=fused.work,
        uncosted=sum(c is None for c in costs),
        groups=report_groups,
    )
    return fused, report


def _with_deps(op: Op, deps: tuple[str, ...]) -> Op:
    from dataclasses import replace

    return replace(op, deps=deps)


def _fuse_group(
    graph: OpGraph,
    costs: list[OpCost | None],
    members: list[int],
    integral: bool,
    used: set[str],
) -> tuple[Op, FusedGroup]:
    ops = [graph.ops[m] for m in members]
    cs = [costs[m] for m in members]
    cost = [c for c in cs if c is not None]  # members all have a known cost
    names = {op.name for op in ops}
    # traffic each member loses: its output's write (all but the last) and the read of the
    # previous member's output (all but the first)
    lost = [0] * len(ops)
    for i in range(len(ops) - 1):
        lost[i] += cost[i].numel * cost[i].esize
        lost[i + 1] += cost[i].numel * cost[i + 1].esize
    # and the read of an outside tensor an earlier member already reads (one read in all)
    read: set[str] = set()
    for i, (m, op) in enumerate(zip(members, ops, strict=True)):
        lost[i] += reread_saving(graph, costs, m, read - names)
        read.update(op.deps)
    saved = sum(lost)
    total_bytes = max(0, sum(c.bytes for c in cost) - saved)
    total_flops = sum(c.flops for c in cost)
    duration = 0.0
    for op, c, loss in zip(ops, cost, lost, strict=True):
        weight = c.flops + c.bytes
        keep = (c.flops + max(0, c.bytes - loss)) / weight if weight else 1.0
        duration += op.duration * keep
    before = float(sum(op.duration for op in ops))
    if integral:
        duration = float(min(math.ceil(duration - 1e-9), before))
    deps: dict[str, None] = {}
    for op in ops:
        for d in op.deps:
            if d not in names:
                deps[d] = None
    # a zero-duration member holds no resource and no workspace (it runs over an empty
    # interval), so only members that take time set the fused op's demands and workspace
    holding = [op for op in ops if op.duration > 0] or ops
    demands: dict[str, int] = {}
    for op in holding:
        for r, a in op.demands.items():
            demands[r] = max(demands.get(r, 0), a)
    name = "+".join(op.name for op in ops)
    base, k = name, 2
    while name in used:
        name, k = f"{base}#{k}", k + 1
    # the group reads a buffer from outside when a member reads it before any earlier member
    # has written it; an in-place chain (x = relu(x); x = neg(x)) reads x and writes it back,
    # and leaving x out would lose the edge to x's writer whenever deps are derived again
    reads: dict[str, None] = {}
    written: set[str] = set()
    for op in ops:
        reads.update((b, None) for b in op.reads if b not in written)
        written.update(op.writes)
    last = ops[-1]
    attrs: Mapping[str, Any] = {
        "flops": total_flops,
        "bytes": total_bytes,
        "numel": cost[-1].numel,
        "dtype": cost[-1].dtype,
        "fused_from": [op.name for op in ops],
        "fused_kinds": [op.kind for op in ops],
    }
    fused = Op(
        name,
        duration,
        deps=tuple(deps),
        output_bytes=last.output_bytes,
        workspace_bytes=max(op.workspace_bytes for op in holding),
        demands=demands,
        kind="fused",
        output=last.output,
        attrs=attrs,
        reads=tuple(reads),
        writes=tuple(dict.fromkeys(b for op in ops for b in op.writes)),
    )
    info = FusedGroup(
        name,
        tuple(op.name for op in ops),
        pattern_name(graph, members),
        total_flops,
        total_bytes,
        saved,
        before,
        duration,
    )
    return fused, info

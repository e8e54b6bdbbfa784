"""Fusion pattern discovery: which ops :func:`~opsched.transforms.fusion.fuse` groups.

:func:`op_cost` reads an op's flops, memory traffic and output size from the kinds vocabulary
(:mod:`opsched.ir.kinds`); :func:`find_groups` grows, in topological order, a greedy maximal
chain from each op of a :data:`HEAD_KINDS` kind through single-consumer
:data:`EPILOGUE_KINDS` ops of the same size, within the limits; :func:`pattern_name` names a
group (``"conv2d+batchnorm+relu"``, ``"elementwise-chain"``). Nothing here changes the graph:
the rewriting (one ``fused`` op per group, the report) is :mod:`opsched.transforms.fusion`.

Examples
--------
>>> from opsched.ir import Op, OpGraph
>>> ew = lambda n, deps, fn: Op(n, 1, deps=deps, kind="elementwise",
...                             attrs={"numel": 100, "fn": fn})
>>> g = OpGraph((ew("a", (), "exp"), ew("b", ("a",), "neg"), ew("c", ("a",), "relu")))
>>> costs = [op_cost(op) for op in g.ops]
>>> costs[0].bytes, find_groups(g, costs, max_ops=8, max_bytes=None, new_inputs=True)
(800, [])
>>> g = OpGraph((ew("a", (), "exp"), ew("b", ("a",), "neg"), ew("c", ("b",), "relu")))
>>> costs = [op_cost(op) for op in g.ops]
>>> groups = find_groups(g, costs, max_ops=8, max_bytes=None, new_inputs=True)
>>> groups, pattern_name(g, groups[0])
([[0, 1, 2]], 'elementwise-chain')
"""

from __future__ import annotations

from dataclasses import dataclass

from opsched.analysis.topo import topo_indices
from opsched.errors import GraphError
from opsched.ir import kinds
from opsched.ir.graph import Op, OpGraph

__all__ = [
    "EPILOGUE_KINDS",
    "HEAD_KINDS",
    "OpCost",
    "find_groups",
    "op_cost",
    "pattern_name",
    "saved_between",
]

#: Kinds that may lead a fusion group.
HEAD_KINDS = frozenset({"conv2d", "matmul", "elementwise", "batchnorm"})
#: Kinds that may be absorbed into the group of their producer.
EPILOGUE_KINDS = frozenset({"elementwise", "batchnorm"})


@dataclass(frozen=True)
class OpCost:
    """What fusion needs of one op: flops, bytes moved, output elements, element size, dtype."""

    flops: int
    bytes: int
    numel: int
    esize: int
    dtype: str


def op_cost(op: Op) -> OpCost | None:
    """Flops, bytes and output size of ``op`` from the kinds vocabulary, or None if unknown
    (no kind, or an attr its kind needs missing).

    Raises
    ------
    GraphError
        An attr given but wrong (``flops`` of -1, NaN or text, a dtype not in the
        vocabulary, a stride of 0, a window larger than its input), as ``cost apply``
        refuses it, naming the op.
    """
    kind = op.kind
    if kind is None or kind not in kinds.KINDS:
        return None
    if any(op.attrs.get(key) is None for key in kinds.KINDS[kind]):
        return None  # the kind's shape is not given: nothing to cost, the op stays alone
    # every required attr is there, so any error below is a wrong value, not a missing one:
    # it is raised (it had been read as "no known cost" and the op silently left unfused)
    try:
        kinds.check_sizes(kind, op.attrs)
        return OpCost(
            kinds.flops(kind, op.attrs),
            kinds.bytes_min(kind, op.attrs),
            kinds.output_numel(kind, op.attrs),
            kinds.dtype_bytes(op.attrs),
            str(op.attrs.get("dtype", "float32")),
        )
    except GraphError as e:
        raise GraphError(e.message, f"op {op.name!r}") from None


def saved_between(prod: OpCost, cons: OpCost) -> int:
    """Traffic removed by fusing ``cons`` into ``prod``: the write and the read-back."""
    return prod.numel * prod.esize + prod.numel * cons.esize


def reread_saving(graph: OpGraph, costs: list[OpCost | None], c: int, read: set[str]) -> int:
    """Traffic saved when member ``c`` reads outside tensors the group already reads
    (``read``, names): a fused kernel reads each of its inputs once. Each such read is
    counted as ``bytes_min`` counts an epilogue's inputs, at most the tensor's own size.

    >>> from opsched.ir import Op, OpGraph
    >>> ew = lambda n, deps: Op(n, 1, deps=deps, kind="elementwise", attrs={"numel": 100})
    >>> g = OpGraph((ew("x", ()), ew("a", ("x",)), ew("b", ("a", "x"))))
    >>> reread_saving(g, [op_cost(op) for op in g.ops], 2, {"x"})
    400
    """
    cc = costs[c]
    if cc is None:
        return 0
    total = 0
    for d in set(graph.ops[c].deps) & read:
        dc = costs[graph.index(d)]
        numel = cc.numel if dc is None else min(cc.numel, dc.numel)
        total += numel * cc.esize
    return total


def find_groups(
    graph: OpGraph,
    costs: list[OpCost | None],
    max_ops: int,
    max_bytes: int | None,
    new_inputs: bool,
) -> list[list[int]]:
    """Greedy maximal chains in topological order (lists of op indices, length >= 2)."""
    succ_ptr, succ_idx = graph.succ_ptr, graph.succ_idx
    taken = [False] * graph.num_ops
    groups = []
    for v in topo_indices(graph).tolist():
        head = costs[v]
        if taken[v] or head is None or graph.ops[v].kind not in HEAD_KINDS:
            continue
        members, cur, traffic = [v], v, head.bytes
        needs = set(graph.ops[v].deps)  # outside inputs of the group so far
        while len(members) < max_ops:
            lo, hi = int(succ_ptr[cur]), int(succ_ptr[cur + 1])
            if hi - lo != 1 or graph.ops[cur].output:
                break
            c = int(succ_idx[lo])
            cc, pc = costs[c], costs[cur]
            if taken[c] or cc is None or pc is None or graph.ops[c].kind not in EPILOGUE_KINDS:
                break
            if cc.numel != pc.numel:
                break
            extra = set(graph.ops[c].deps) - needs - {graph.ops[cur].name}
            if not new_inputs and any(graph[d].kind != "input" for d in extra):
                break
            reread = reread_saving(graph, costs, c, needs)
            new_traffic = traffic + cc.bytes - saved_between(pc, cc) - reread
            if max_bytes is not None and new_traffic > max_bytes:
                break
            members.append(c)
            needs |= extra
            traffic, cur = new_traffic, c
        if len(members) > 1:
            for m in members:
                taken[m] = True
            groups.append(members)
    return groups


def pattern_name(graph: OpGraph, members: list[int]) -> str:
    """The group's pattern: head kind then each epilogue's ``fn`` (or kind) after a conv2d or
    matmul head, ``"elementwise-chain"`` otherwise."""
    head = graph.ops[members[0]]
    if head.kind in ("conv2d", "matmul"):
        parts = [str(head.kind)]
        for m in members[1:]:
            op = graph.ops[m]
            parts.append(str(op.attrs.get("fn", op.kind)))
        return "+".join(parts)
    return "elementwise-chain"

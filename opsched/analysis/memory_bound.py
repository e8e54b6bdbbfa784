"""The least peak memory any schedule of a graph can have: a lower bound, and the op that
needs it (:func:`min_memory_bound`). A cap below it is refuted before any search.
"""

from __future__ import annotations

import numpy as np

from opsched.analysis.memory_cut import MEMORY_CUT_MAX_OPS, live_memory_bound
from opsched.ir.graph import OpGraph, require_graph

__all__ = ["min_memory_bound"]


def min_memory_bound(graph: OpGraph, cut: bool | None = None) -> tuple[int, str]:
    """A lower bound on the peak memory of every schedule, and what needs it.

    Two facts hold in every schedule: while an op of positive duration runs, its inputs, its
    output and its workspace are all live; and just before the makespan every graph output
    without consumers (of positive duration) is live. Persistent bytes are always live.

    With ``cut`` (default: graphs of at most
    :data:`~opsched.analysis.memory_cut.MEMORY_CUT_MAX_OPS` ops) the first fact is
    sharpened: while an op runs, the tensors its finished ancestors still owe to readers not
    yet done are live too, and the least such state is a minimum cut
    (:func:`opsched.analysis.memory_cut.live_memory_bound`; on RandWire's stages it raises
    the bound from 53-62 % of the best one-unit order's peak to all of it).

    Returns
    -------
    bytes, who : int, str
        The bound and a description of the op (or outputs) that need it.

    Examples
    --------
    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 1, output_bytes=4), Op("b", 1, output_bytes=4),
    ...              Op("c", 1, deps=("a", "b"), output_bytes=2, workspace_bytes=1)),
    ...             persistent_bytes=10)
    >>> min_memory_bound(g)
    (21, "op 'c' (inputs 8 + output 2 + workspace 1 + persistent 10)")
    """
    require_graph(graph, "min_memory_bound")
    p = graph.persistent_bytes
    out = graph.output_sizes
    ws = graph.workspace_sizes
    d = graph.durations
    n = graph.num_ops
    inputs = np.zeros(n, dtype=np.int64)
    consumer = np.repeat(np.arange(n), np.diff(graph.pred_ptr))
    if len(consumer):
        np.add.at(inputs, consumer, out[graph.pred_idx])
    need = np.where(d > 0, inputs + out + ws, 0)
    best, who = p, "persistent bytes"
    if n and int(need.max()) + p > best:
        v = int(np.argmax(need))
        best = int(need[v]) + p
        who = (
            f"op {graph.ops[v].name!r} (inputs {int(inputs[v])} + output {int(out[v])} + "
            f"workspace {int(ws[v])} + persistent {p})"
        )
    no_consumer = np.diff(graph.succ_ptr) == 0
    is_output = np.fromiter((op.output for op in graph.ops), dtype=bool, count=n)
    final = int(out[no_consumer & is_output & (d > 0)].sum()) + p
    if final > best:
        best, who = final, f"the graph outputs held at the end (+ persistent {p})"
    if cut is None:
        cut = n <= MEMORY_CUT_MAX_OPS
    if cut:
        live, u = live_memory_bound(graph)
        if u is not None and live + p > best:
            best = live + p
            who = (
                f"op {graph.ops[u].name!r} (at least {live} B live while it runs: its inputs, "
                f"output and workspace, and what finished ops still hold for later readers; "
                f"+ persistent {p})"
            )
    return int(best), who

"""Orders a memory cap forces: op ``i`` must end before op ``j`` starts, in every schedule.

Take two ops ``i`` and ``j`` that no path orders, ``j`` of positive duration. At an instant
when ``j`` runs and ``i`` has not finished, ``i`` is either running or not started. Either
way the finished set ``F`` holds ``j``'s ancestors and neither ``i`` nor ``j`` nor a
descendant of them, and the memory live then is at least

    ``held(F) + out_j + ws_j``

(``held`` as in :mod:`opsched.analysis.memory_cut`: a finished op's tensor while a reader is
not finished, or a graph output; a running ``i`` only adds its own bytes). The least such
state is one minimum cut, with ``i`` and ``j`` tied to the sink. When it exceeds the free
memory (cap minus persistent bytes), ``j`` can never run while ``i`` is unfinished: ``end(i)
<= start(j)`` holds in every schedule under the cap, a new precedence.

Each order found restricts the finished sets of later tests (they are closed under it too),
so the search repeats until no new order appears. Two ops that can run in neither order,
or an op that cannot run at all once the orders are in, prove that no schedule fits the cap.

Under a tight cap these orders are many: on RandWire's stage4 (93 ops after fusion) at the
least peak any schedule can have, 48 (not counting those the others imply), which lengthen
the critical path from 139 to 153 (``benchmarks/bench_cap_orders.py``). The
exact solver adds them as precedence constraints (docs/cpsat-model.md, "Orders a memory cap
forces").

Cost: one maximum flow per op whose least state could exceed the free memory (the cheap
estimate of :mod:`opsched.analysis.memory_cut` decides), then one per unordered op that
this op's least state finishes (every other op leaves the cut unchanged), per round. At most
``max_flows`` flows in all: past that the orders found so far are returned (each is proven
on its own).

Examples
--------
``a`` feeds two branches, ``b -> w`` and ``c -> z``, which join in ``f``. ``w`` makes a
20-byte tensor; while it runs, ``b``'s byte is live, and ``a``'s 10 bytes unless ``c`` has
finished, and then ``c``'s 2 bytes unless ``z`` has finished too (leaving its 1). With 30
bytes free, ``c`` must finish before ``w`` starts (else 10 + 1 + 20 = 31); with 22, ``z`` must
as well (else 2 + 1 + 20 = 23); with 21, ``w`` cannot run at all.

>>> from opsched.ir import Op, OpGraph
>>> g = OpGraph((Op("a", 1, output_bytes=10), Op("b", 1, deps=("a",), output_bytes=1),
...              Op("c", 1, deps=("a",), output_bytes=2), Op("w", 1, deps=("b",), output_bytes=20),
...              Op("z", 1, deps=("c",), output_bytes=1), Op("f", 1, deps=("w", "z"), output=True)))
>>> names = lambda r: [(g.ops[i].name, g.ops[j].name) for i, j in r.edges]
>>> names(cap_orders(g, 31)), names(cap_orders(g, 30)), names(cap_orders(g, 22))
([], [('c', 'w')], [('c', 'w'), ('z', 'w')])
>>> cap_orders(g, 21).describe_conflict(g)
"op 'w' cannot run within the memory cap: every state in which it runs holds more"
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace

import numpy as np
from scipy.sparse import csr_array

from opsched.analysis.memory_cut import MEMORY_CUT_MAX_OPS, CutNetwork, _ancestors, _estimates
from opsched.analysis.paths import critical_path
from opsched.ir.graph import OpGraph

__all__ = ["CAP_ORDER_MAX_FLOWS", "CapOrders", "cap_orders", "flow_budget", "ordered_critical_path"]

#: Maximum flows one call may run by default.
CAP_ORDER_MAX_FLOWS = 20_000


def flow_budget(num_ops: int, seconds: float) -> int:
    """Maximum flows that take about ``seconds`` on a graph of ``num_ops`` ops.

    ``0.25 + 0.0025 * num_ops`` ms per flow, a little above what
    ``benchmarks/bench_cap_orders.py --layered`` measured on this project's 2-core machine
    (random layered graphs at tight caps: 0.3-0.5 ms per flow at 100 ops, 0.4-0.5 at 200,
    0.6 at 300, 1.0-1.3 at 500, 1.7 at 700), so the budget errs short. A count, not a clock,
    so that a deterministic solve stays deterministic.

    >>> flow_budget(100, 1.0), flow_budget(700, 1.0)
    (2000, 500)
    """
    return max(1, int(seconds / ((0.25 + 0.0025 * num_ops) * 1e-3)))


_CACHE: weakref.WeakKeyDictionary[OpGraph, dict[tuple[int, int], CapOrders]] = (
    weakref.WeakKeyDictionary()
)


@dataclass(frozen=True)
class CapOrders:
    """What a memory cap forces on a graph.

    ``edges``: op index pairs ``(i, j)``: ``i`` ends before ``j`` starts in every schedule
    within the cap (none implied by the graph's own paths). ``conflict``: ``None``, or a pair
    ``(i, j)`` that proves no schedule fits: two ops that can run in neither order (``i !=
    j``), or an op that cannot run at all (``i == j``). ``flows``: maximum flows run;
    ``complete``: False if the flow budget stopped the search early.
    """

    edges: tuple[tuple[int, int], ...]
    conflict: tuple[int, int] | None
    flows: int
    complete: bool

    def describe_conflict(self, graph: OpGraph) -> str | None:
        """The conflict as a sentence naming the ops, or ``None``."""
        if self.conflict is None:
            return None
        i, j = (graph.ops[k].name for k in self.conflict)
        if i == j:
            return (
                f"op {i!r} cannot run within the memory cap: every state in which it runs "
                "holds more"
            )
        return (
            f"ops {i!r} and {j!r} cannot run in either order within the memory cap "
            "(each would run while the other's tensors are live)"
        )


def cap_orders(graph: OpGraph, free: int, max_flows: int = CAP_ORDER_MAX_FLOWS) -> CapOrders:
    """The precedences a memory cap forces (see the module docstring).

    Parameters
    ----------
    graph
        The op graph.
    free
        Bytes available to tensors and workspaces: the cap minus persistent bytes.
    max_flows
        Stop after this many maximum flows (the orders found so far are all valid).

    Graphs of more than :data:`~opsched.analysis.memory_cut.MEMORY_CUT_MAX_OPS` ops get no
    orders (an empty, incomplete result). Results are cached per graph object and ``free``.
    """
    key = (int(free), int(max_flows))
    per_graph = _CACHE.setdefault(graph, {})
    if key not in per_graph:
        per_graph[key] = _cap_orders(graph, int(free), int(max_flows))
    return per_graph[key]


def _cap_orders(graph: OpGraph, free: int, max_flows: int) -> CapOrders:
    n = graph.num_ops
    runs = graph.durations > 0
    if n > MEMORY_CUT_MAX_OPS:
        return CapOrders((), None, 0, False)
    if n == 0 or not runs.any():
        return CapOrders((), None, 0, True)
    net = CutNetwork(graph)
    own = graph.output_sizes.astype(np.int64) + graph.workspace_sizes.astype(np.int64)
    anc = _ancestors(graph)
    weight = net.kept.astype(np.float64)  # exact: byte totals stay far below 2**53
    # readers[u, r] = 1 when r reads u's output
    sp, si = graph.succ_ptr, graph.succ_idx
    readers = csr_array(
        (np.ones(len(si)), (np.repeat(np.arange(n), np.diff(sp)), si)), shape=(n, n)
    )
    edges: list[tuple[int, int]] = []
    flows = 0
    while True:
        # only its ancestors finished: a state that leaves every unordered op unfinished
        estimate, _ = _estimates(graph, net, anc)
        extra = (
            np.array([j for _, j in edges], dtype=np.int64),
            np.array([i for i, _ in edges], dtype=np.int64),
        )
        new: list[tuple[int, int]] = []
        stopped = False
        for j in np.flatnonzero(runs & (estimate + own > free)).tolist():
            if flows >= max_flows:
                stopped = True
                break
            before = np.flatnonzero(anc[j])  # j's ancestors, through the orders found too
            value, side = net.least(before, np.array([j]), extra, side=True)
            flows += 1
            if value + own[j] > free:
                return CapOrders(tuple(edges), (j, j), flows, True)
            if side is None:
                continue  # nothing need be finished: no op can be forced before j
            # only an op the least state finishes can raise the cut when kept unfinished, and
            # only if that state without it and its descendants holds too much
            unrelated = ~anc[j] & ~anc[:, j]
            unrelated[j] = False
            cands = np.flatnonzero(side[:n] & unrelated)
            if len(cands):
                fin = side[:n][None, :] & ~(anc.T[cands] | (np.arange(n) == cands[:, None]))
                held = fin & (((readers @ (~fin).T.astype(np.float64)).T > 0) | net.held)
                cands = cands[held.astype(np.float64) @ weight + own[j] > free]
            for i in cands.tolist():
                if flows >= max_flows:
                    stopped = True
                    break
                value, _ = net.least(before, np.array([j, i]), extra)
                flows += 1
                if value + own[j] > free:
                    new.append((i, j))
            if stopped:
                break
        conflict = _merge(anc, edges, new)
        if conflict is not None or stopped or not new:
            return CapOrders(tuple(edges), conflict, flows, conflict is not None or not stopped)


def _merge(
    anc: np.ndarray, edges: list[tuple[int, int]], new: list[tuple[int, int]]
) -> tuple[int, int] | None:
    """Add the orders ``new`` to ``edges`` and the closure ``anc`` (``anc[v, u]``: ``u``
    before ``v``); return a pair forced both ways, if one is."""
    n = len(anc)
    for i, j in new:
        if anc[i, j]:  # j must end before i starts as well
            return (i, j)
        if anc[j, i]:
            continue  # implied by the orders just added
        # i and everything before it now precede j and everything after j
        after = anc[:, j].copy()
        after[j] = True
        anc[np.ix_(after, anc[i] | (np.arange(n) == i))] = True
        edges.append((i, j))
    return None


def ordered_critical_path(graph: OpGraph, edges: tuple[tuple[int, int], ...]) -> float:
    """The critical path of ``graph`` with the orders ``edges`` added as dependencies (a
    makespan lower bound for every schedule that obeys them).

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 2), Op("b", 3)))
    >>> ordered_critical_path(g, ()), ordered_critical_path(g, ((0, 1),))
    (3.0, 5.0)
    """
    before: dict[int, tuple[str, ...]] = {}
    for i, j in edges:
        before[j] = (*before.get(j, ()), graph.ops[i].name)
    ops = tuple(replace(op, deps=op.deps + before.get(v, ())) for v, op in enumerate(graph.ops))
    return critical_path(OpGraph(ops)).length

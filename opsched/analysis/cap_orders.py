"""Orders a memory cap forces: op ``i`` must end before op ``j`` starts, in every schedule.

Take two ops ``i`` and ``j`` that no path orders, ``j`` of positive duration, and an instant
when ``j`` runs. The finished set ``F`` then holds ``j``'s ancestors, is closed under
predecessors, and holds neither ``j`` nor a descendant of it; the memory live is at least

    ``held(F) + out_j + ws_j``

(``held`` as in :mod:`opsched.analysis.memory_cut`: a finished op's tensor while a reader is
not finished, or a graph output). Two tests ask what ``i`` can be doing then:

* **``i`` unfinished** (running or not started): ``F`` holds neither ``i`` nor a descendant
  of it (a running ``i`` only adds its own bytes). The least such state is one minimum cut
  with ``i`` and ``j`` tied to the sink. When it exceeds the free memory (cap minus
  persistent bytes), ``j`` never runs while ``i`` is unfinished: ``end(i) <= start(j)``.
* **``i`` started** (running or finished): take ``F' = F + i``, still closed (``i``'s
  predecessors ended before it started). A running ``i`` holds its output and workspace, and
  adding it to ``F`` adds at most its output, so the memory live is at least ``held(F') +
  out_j + ws_j`` either way. The least such state is one minimum cut with ``i`` and its
  ancestors tied to the source. When it exceeds the free memory, ``j`` never runs once ``i``
  has started: ``end(j) <= start(i)``. This is what an early ``i`` costs when its tensor
  (or the ones it reads) must then stay live through ``j``.

Either way a new precedence that holds in every schedule under the cap. Each order found
restricts the finished sets of later tests (they are closed under it too), so the search
repeats until no new order appears. Two ops that can run in neither order, or an op that
cannot run at all once the orders are in, prove that no schedule fits the cap.

Under a tight cap these orders are many: on RandWire's stage4 (93 ops after fusion) at the
least peak any schedule can have, 59 (not counting those the others imply), which lengthen
the critical path from 139 to 167; the first test alone finds 48, and 153
(``benchmarks/bench_cap_orders.py``). The exact solver adds them as precedence constraints
(docs/cpsat-model.md, "Orders a memory cap forces").

Cost, per round: one maximum flow per op one of whose two cheap feasible states (only its
ancestors finished; everything finished but it and its descendants) exceeds the free
memory, since otherwise neither test can succeed; then one per unordered op that this op's
least state finishes (the first test) or leaves unfinished (the second), and only where
that state, with the op's finished side changed, still holds too much (every other op
leaves the cut unchanged). At most ``max_flows`` flows in all: past that the orders found so
far are returned (each is proven on its own).

Examples
--------
``a`` feeds two branches, ``b -> w`` and ``c -> z``, which join in ``f``. ``w`` makes a
20-byte tensor; while it runs, ``b``'s byte is live, and ``a``'s 10 bytes unless ``c`` has
finished, and then ``c``'s 2 bytes unless ``z`` has finished too (leaving its 1). With 31
bytes free, ``c`` must finish before ``w`` starts: after ``w`` has started, ``c`` would run
beside ``a``'s 10 bytes (it reads them) and ``w``'s 20 (``f`` reads them), 32 in all (the
second test). With 30 the first test says so too (``w`` beside an unfinished ``c``: 10 + 1 +
20 = 31); with 22 ``z`` must finish first as well (2 + 1 + 20 = 23); with 21 ``w`` cannot run
at all.

>>> from opsched.ir import Op, OpGraph
>>> g = OpGraph((Op("a", 1, output_bytes=10), Op("b", 1, deps=("a",), output_bytes=1),
...              Op("c", 1, deps=("a",), output_bytes=2), Op("w", 1, deps=("b",), output_bytes=20),
...              Op("z", 1, deps=("c",), output_bytes=1), Op("f", 1, deps=("w", "z"), output=True)))
>>> names = lambda r: [(g.ops[i].name, g.ops[j].name) for i, j in r.edges]
>>> names(cap_orders(g, 32)), names(cap_orders(g, 31)), names(cap_orders(g, 22))
([], [('c', 'w')], [('c', 'w'), ('z', 'w')])
>>> cap_orders(g, 21).describe_conflict(g)
"op 'w' cannot run within the memory cap: every state in which it runs holds more"
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace
from typing import Any

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


_CACHE: weakref.WeakKeyDictionary[OpGraph, dict[tuple[Any, ...], CapOrders]] = (
    weakref.WeakKeyDictionary()
)


@dataclass(frozen=True)
class CapOrders:
    """What a memory cap forces on a graph.

    ``edges``: op index pairs ``(i, j)``: ``i`` ends before ``j`` starts in every schedule
    within the cap (none implied by the graph's own paths). ``conflict``: ``None``, or a pair
    ``(i, j)`` that proves no schedule fits: two ops that can run in neither order (``i !=
    j``), or an op that cannot run at all (``i == j``). ``flows``: maximum flows run;
    ``complete``: False if the flow budget stopped the search early. ``started``: how many of
    the edges the started test found (``i`` cannot run once ``j`` has started).
    """

    edges: tuple[tuple[int, int], ...]
    conflict: tuple[int, int] | None
    flows: int
    complete: bool
    started: int = 0

    def describe_conflict(self, graph: OpGraph) -> str | None:
        """The conflict as a sentence naming the ops, or ``None``."""
        if self.conflict is None:
            return None
        i, j = (graph.ops[k].name for k in self.conflict)
        if i == j:
            given = ", once the orders the cap forces are in" if self.edges else ""
            return (
                f"op {i!r} cannot run within the memory cap: every state in which it runs "
                f"holds more{given}"
            )
        return (
            f"ops {i!r} and {j!r} cannot run in either order within the memory cap "
            "(each would run while the other's tensors are live)"
        )


def cap_orders(
    graph: OpGraph,
    free: int,
    max_flows: int = CAP_ORDER_MAX_FLOWS,
    given: tuple[tuple[int, int], ...] = (),
) -> CapOrders:
    """The precedences a memory cap forces (see the module docstring).

    Parameters
    ----------
    graph
        The op graph.
    free
        Bytes available to tensors and workspaces: the cap minus persistent bytes.
    max_flows
        Stop after this many maximum flows (the orders found so far are all valid).
    given
        Orders ``(i, j)`` taken as given, as in one case of a case split
        (:mod:`opsched.analysis.tensor_cases`): they are among the edges returned (those
        the graph does not already imply), and the others hold in every schedule within the
        cap that obeys them. Two given orders that contradict each other, or the graph, are
        a conflict.

    Graphs of more than :data:`~opsched.analysis.memory_cut.MEMORY_CUT_MAX_OPS` ops get no
    orders but the given ones (an incomplete result). Results are cached per graph object,
    ``free``, ``max_flows`` and ``given``.
    """
    key = (int(free), int(max_flows), tuple(given))
    per_graph = _CACHE.setdefault(graph, {})
    if key not in per_graph:
        per_graph[key] = _cap_orders(graph, int(free), int(max_flows), tuple(given))
    return per_graph[key]


def _cap_orders(
    graph: OpGraph, free: int, max_flows: int, given: tuple[tuple[int, int], ...]
) -> CapOrders:
    n = graph.num_ops
    runs = graph.durations > 0
    if n > MEMORY_CUT_MAX_OPS:  # no n x n closure: the given orders, unchecked
        return CapOrders(tuple(given), None, 0, False)
    if n == 0 or not runs.any():
        kept: list[tuple[int, int]] = []
        clash = _merge(_ancestors(graph), kept, list(given))
        return CapOrders(tuple(kept), clash, 0, True)
    net = CutNetwork(graph)
    own = graph.output_sizes.astype(np.int64) + graph.workspace_sizes.astype(np.int64)
    anc = _ancestors(graph)
    weight = net.kept.astype(np.float64)  # exact: byte totals stay far below 2**53
    readers = _readers(graph)
    edges: list[tuple[int, int]] = []
    clash = _merge(anc, edges, list(given))
    if clash is not None:
        return CapOrders(tuple(edges), clash, 0, True)
    by_start: set[tuple[int, int]] = set()  # the orders the started test found
    flows = 0
    eye = np.eye(n, dtype=bool)
    while True:
        # two feasible states of each op: only its ancestors finished (leaves every unordered
        # op unfinished), and everything finished but it and its descendants (finishes them)
        estimate, most = _estimates(graph, net, anc)
        extra = _order_arcs(tuple(edges))
        new: list[tuple[int, int]] = []
        stopped = False
        unfinished_test = estimate + own > free  # some i could be forced before j
        started_test = most + own > free  # some i could be forced after j
        for j in np.flatnonzero(runs & (unfinished_test | started_test)).tolist():
            if flows >= max_flows:
                stopped = True
                break
            before = np.flatnonzero(anc[j])  # j's ancestors, through the orders found too
            value, side = net.least(before, np.array([j]), extra, side=True)
            flows += 1
            if value + own[j] > free:
                return CapOrders(tuple(edges), (j, j), flows, True, _count(edges, by_start))
            least = side[:n] if side is not None else np.zeros(n, dtype=bool)
            unrelated = ~anc[j] & ~anc[:, j]
            unrelated[j] = False
            tests: list[tuple[int, bool]] = []  # (i, started): i unfinished, or i started
            if unfinished_test[j]:
                # only an op the least state finishes can raise the cut when kept unfinished,
                # and only if that state without it and its descendants holds too much
                cands = np.flatnonzero(least & unrelated)
                if len(cands):
                    fin = least[None, :] & ~(anc.T[cands] | eye[cands])
                    cands = cands[_held(fin, readers, net, weight) + own[j] > free]
                tests += [(i, False) for i in cands.tolist()]
            if started_test[j]:
                # only an op the least state leaves unfinished can raise the cut when it has
                # started, and only if that state with it and its ancestors holds too much
                cands = np.flatnonzero(~least & unrelated)
                if len(cands):
                    fin = least[None, :] | anc[cands] | eye[cands]
                    cands = cands[_held(fin, readers, net, weight) + own[j] > free]
                tests += [(i, True) for i in cands.tolist()]
            for i, started in tests:
                if flows >= max_flows:
                    stopped = True
                    break
                if started:  # i finished, or running (then F + i bounds the state): j first
                    value, _ = net.least(
                        np.flatnonzero(anc[j] | anc[i] | eye[i]), np.array([j]), extra
                    )
                else:  # i running or not started: i first
                    value, _ = net.least(before, np.array([j, i]), extra)
                flows += 1
                if value + own[j] > free:
                    new.append((j, i) if started else (i, j))
                    if started:
                        by_start.add((j, i))
            if stopped:
                break
        count = len(edges)
        conflict = _merge(anc, edges, new)
        if conflict is not None or stopped or len(edges) == count:
            done = conflict is not None or not stopped
            return CapOrders(tuple(edges), conflict, flows, done, _count(edges, by_start))


def _count(edges: list[tuple[int, int]], by_start: set[tuple[int, int]]) -> int:
    return sum(e in by_start for e in edges)


def _held(fin: np.ndarray, readers: csr_array, net: CutNetwork, weight: np.ndarray) -> np.ndarray:
    """Bytes held in each state, one per row of ``fin`` (finished sets as boolean rows): a
    finished op's tensor while a reader is unfinished, or a graph output."""
    out = (readers @ (~fin).T.astype(np.float64)).T > 0
    return (fin & (out | net.held)).astype(np.float64) @ weight


def _readers(graph: OpGraph) -> csr_array:
    """``readers[u, r] = 1`` when ``r`` reads ``u``'s output (n x n; what :func:`_held`
    takes)."""
    n, sp, si = graph.num_ops, graph.succ_ptr, graph.succ_idx
    return csr_array((np.ones(len(si)), (np.repeat(np.arange(n), np.diff(sp)), si)), (n, n))


def _closure(graph: OpGraph, orders: tuple[tuple[int, int], ...] = ()) -> np.ndarray:
    """``anc[v, u]``: ``u`` ends before ``v`` starts, through the graph or ``orders``."""
    anc = _ancestors(graph)
    _merge(anc, [], list(orders))
    return anc


def _order_arcs(orders: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, np.ndarray] | None:
    """``orders`` as the extra closure arcs ``(later, earlier)`` of
    :meth:`~opsched.analysis.memory_cut.CutNetwork.least`; None for none."""
    if not orders:
        return None
    return np.array([j for _, j in orders]), np.array([i for i, _ in orders])


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

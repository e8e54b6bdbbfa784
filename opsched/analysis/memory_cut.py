"""The least memory live while an op runs, over every schedule: a minimum cut per op.

At an instant when op ``v`` runs, let ``F`` be the set of finished ops. ``F`` holds every
ancestor of ``v`` and is closed under predecessors (an op starts after its predecessors
end); ``v`` and its descendants are not in it. Under the liveness rule of the problem model
an op ``u`` of ``F`` still holds its output then when

* ``u`` has a reader outside ``F`` (a reader not finished yet), or
* ``u`` is a graph output without readers (held to the end of the schedule),

and ``v`` holds its output and workspace. Every other running op only adds memory. So the
least memory of any instant at which ``v`` runs is

    ``min over F of sum(out_u : u in F, u held) + out_v + ws_v``,

a minimum closure problem, solved as a minimum s-t cut: a node per op (source side = in
``F``), an infinite arc from each op to each of its predecessors (closure), an arc
``u -> u'`` of capacity ``out_u`` to a helper node with infinite arcs ``u' -> reader`` for
each reader (cut exactly when ``u`` is in ``F`` and some reader is not), an arc ``u -> t``
of capacity ``out_u`` for a held graph output, infinite arcs from the source to ``v``'s
predecessors and from ``v`` to the sink.

The maximum over ``v`` is a lower bound on the peak of every schedule, on any number of
units. It is never below the simple per-op bound (inputs + output + workspace): the inputs
are outputs of ``F`` read by ``v``. It is larger when a graph branches: while one branch
runs, the tensors its ancestors hand to the other branches stay live (a residual block's
input while its convolutions run). On RandWire's stages it equals the peak of the best
one-unit order opsched finds, so that order is optimal; the simple bound there is 53-62 % of
it (``docs/memory-orders.md``).

Cost: one maximum flow (``scipy.sparse.csgraph.maximum_flow``) per op whose bound could
still beat the best so far, on a graph of at most ``2n + 2`` nodes. Sizes are counted in
quanta small enough for the flow's 32-bit capacities, rounded down, so the result stays a
lower bound (exact whenever the total fits, as on every graph of the tests).
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from opsched.ir.graph import OpGraph

__all__ = ["MEMORY_CUT_MAX_OPS", "CutNetwork", "live_memory_bound"]

#: Graphs with more ops than this get only the simple bound. The cut costs n x n bits and a
#: maximum flow per op that could still raise it: on random layered graphs (seeds 0-2) at
#: most 0.03 s at 300 ops, 0.07 s at 500, 0.17 s at 700, 0.08-1.2 s at 1,000, 4.6 s at 3,000.
MEMORY_CUT_MAX_OPS = 700

#: Results per graph object (graphs are immutable): the memory-order search builds its model
#: once per baseline order, seven times for one graph.
_CACHE: weakref.WeakKeyDictionary[OpGraph, tuple[int, int | None]] = weakref.WeakKeyDictionary()

_FINITE_TOTAL = 1 << 29  # all finite capacities together stay below this
_INF = 1 << 30  # an infinite arc; one finite arc may share its node pair: sum < 2**31


def live_memory_bound(graph: OpGraph) -> tuple[int, int | None]:
    """The largest, over ops of positive duration, of the least bytes live while each runs.

    Persistent bytes are not included. Returns ``(bytes, op index)``, ``(0, None)`` for a
    graph without such ops.

    Examples
    --------
    A residual block: ``x`` feeds ``conv1 -> conv2`` and the ``add`` at the end, so ``x``
    stays live while both convolutions run (the simple bound for ``conv2`` misses it).

    >>> from opsched.ir import Op, OpGraph
    >>> from opsched.analysis import min_memory_bound
    >>> g = OpGraph((Op("x", 1, output_bytes=8), Op("conv1", 1, deps=("x",), output_bytes=4),
    ...              Op("conv2", 1, deps=("conv1",), output_bytes=4),
    ...              Op("add", 1, deps=("x", "conv2"), output_bytes=2, output=True)))
    >>> need, v = live_memory_bound(g)
    >>> need, g.ops[v].name          # x (8) + conv1 (4) + conv2's own output (4)
    (16, 'conv2')
    >>> min_memory_bound(g, cut=False)[0]   # add: inputs 12 + output 2
    14
    """
    cached = _CACHE.get(graph)
    if cached is None:
        cached = _CACHE[graph] = _live_memory_bound(graph)
    return cached


class CutNetwork:
    """The arcs every state cut of ``graph`` shares, in integer quanta.

    Nodes ``0..n-1`` are ops (source side = finished), then one helper node per op whose
    tensor has readers, then ``source`` and ``sink``. Arcs: reader -> predecessor (infinite:
    the finished set is closed under predecessors), ``u -> u'`` of capacity ``out_u`` and
    ``u' -> reader`` (infinite: the tensor is held while a reader is not finished), ``u ->
    sink`` of capacity ``out_u`` for a graph output without readers (held to the end).
    ``quantum`` bytes per capacity unit, sizes rounded down, so every cut stays a lower bound.
    """

    def __init__(self, graph: OpGraph) -> None:
        n = self.n = graph.num_ops
        out = graph.output_sizes.astype(np.int64)
        pp, pi = graph.pred_ptr, graph.pred_idx
        sp, si = graph.succ_ptr, graph.succ_idx
        self.has_readers = np.diff(sp) > 0
        self.held = np.fromiter((op.output for op in graph.ops), bool, n) & ~self.has_readers
        self.kept = np.where(self.has_readers | self.held, out, 0)
        self.quantum = max(1, -(-int(self.kept.sum()) // _FINITE_TOTAL))
        cap = self.kept // self.quantum  # rounded down: the cut stays a lower bound
        tensor = np.flatnonzero(self.has_readers & (cap > 0))  # ops given a helper node
        helper = np.full(n, -1)
        helper[tensor] = np.arange(n, n + len(tensor))
        self.source, self.sink = n + len(tensor), n + len(tensor) + 1
        rows: list[np.ndarray] = []
        cols: list[np.ndarray] = []
        vals: list[np.ndarray] = []
        consumer = np.repeat(np.arange(n), np.diff(pp))
        _arcs(rows, cols, vals, consumer, pi, _INF)  # reader -> predecessor
        _arcs(rows, cols, vals, tensor, helper[tensor], cap[tensor])
        for u in tensor:
            readers = si[sp[u] : sp[u + 1]]
            _arcs(rows, cols, vals, np.full(len(readers), helper[u]), readers, _INF)
        hold = np.flatnonzero(self.held & (cap > 0))
        _arcs(rows, cols, vals, hold, np.full(len(hold), self.sink), cap[hold])
        self.base = (np.concatenate(rows), np.concatenate(cols), np.concatenate(vals))

    def least(
        self,
        finished: np.ndarray,
        unfinished: np.ndarray,
        extra: tuple[np.ndarray, np.ndarray] | None = None,
        side: bool = False,
    ) -> tuple[int, np.ndarray | None]:
        """Least bytes the finished ops hold, over states with ``finished`` ops done and
        ``unfinished`` ops not; ``extra`` more closure arcs ``(later, earlier)``.

        Returns the bytes (a multiple of ``quantum``, rounded down) and, with ``side``, the
        residual flow's source side (else ``None``; ``None`` too when ``finished`` is empty:
        the state with nothing done).
        """
        from scipy.sparse import csr_array
        from scipy.sparse.csgraph import maximum_flow

        if len(finished) == 0:
            return 0, None
        r, c, x = self.base
        parts_r = [r, np.full(len(finished), self.source), unfinished]
        parts_c = [c, finished, np.full(len(unfinished), self.sink)]
        parts_x = [x, np.full(len(finished) + len(unfinished), _INF)]
        if extra is not None and len(extra[0]):
            parts_r.append(extra[0])
            parts_c.append(extra[1])
            parts_x.append(np.full(len(extra[0]), _INF))
        size = self.sink + 1
        m = csr_array(
            (np.concatenate(parts_x).astype(np.int32),
             (np.concatenate(parts_r), np.concatenate(parts_c))), shape=(size, size),
        )  # fmt: skip
        m.sum_duplicates()
        res = maximum_flow(m, self.source, self.sink)
        value = int(res.flow_value) * self.quantum
        return value, _source_side(m, res.flow, self.source) if side else None


def _source_side(cap: Any, flow: Any, source: int) -> np.ndarray:
    """Nodes reachable from ``source`` in the residual graph (the least minimum-cut side)."""
    from scipy.sparse.csgraph import breadth_first_order

    residual = (cap - flow).tocsr()
    residual.data = np.where(residual.data > 0, 1, 0)
    residual.eliminate_zeros()
    order = breadth_first_order(residual, source, directed=True, return_predecessors=False)
    side = np.zeros(cap.shape[0], dtype=bool)
    side[order] = True
    return side


def _live_memory_bound(graph: OpGraph) -> tuple[int, int | None]:
    n = graph.num_ops
    runs = graph.durations > 0
    if n == 0 or not runs.any():
        return 0, None
    net = CutNetwork(graph)
    out = graph.output_sizes.astype(np.int64)
    ws = graph.workspace_sizes.astype(np.int64)
    pp, pi = graph.pred_ptr, graph.pred_idx
    estimate = np.minimum(*_estimates(graph, net, _ancestors(graph)))
    own = out + ws
    best, best_v = 0, None
    for v in sorted(np.flatnonzero(runs).tolist(), key=lambda v: -(estimate[v] + own[v])):
        if estimate[v] + own[v] <= best:
            break  # no state of a later op can beat the best (sorted by the upper estimate)
        value, _ = net.least(pi[pp[v] : pp[v + 1]], np.array([v]))
        total = value + int(own[v])
        if total > best:
            best, best_v = total, v
    return best, best_v


def _estimates(graph: OpGraph, net: CutNetwork, anc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per op the bytes held in two feasible states, upper estimates of its least state:
    ``F`` = its ancestors, and ``F`` = every op but it and its descendants (``anc``: n x n
    bits, ``anc[v, u]``: ``u`` is an ancestor of ``v``)."""
    n = graph.num_ops
    sp, si = graph.succ_ptr, graph.succ_idx
    later = anc.T | np.eye(n, dtype=bool)  # v itself and its descendants
    reader_outside = np.zeros((n, n), dtype=bool)  # u has a reader not among v's ancestors
    reader_later = np.zeros((n, n), dtype=bool)  # u has a reader among v and its descendants
    for u in np.flatnonzero(net.has_readers):
        readers = si[sp[u] : sp[u + 1]]
        reader_outside[:, u] = ~anc[:, readers].all(axis=1)
        reader_later[:, u] = later[:, readers].any(axis=1)
    weight = net.kept.astype(np.float64)  # exact: byte totals stay far below 2**53
    least = (anc & (reader_outside | net.held)).astype(np.float64) @ weight
    most = (~later & (reader_later | net.held)).astype(np.float64) @ weight
    return least, most


def _arcs(
    rows: list[np.ndarray], cols: list[np.ndarray], vals: list[np.ndarray], a: np.ndarray,
    b: np.ndarray, w: np.ndarray | int,
) -> None:  # fmt: skip
    rows.append(np.asarray(a, dtype=np.int64))
    cols.append(np.asarray(b, dtype=np.int64))
    vals.append(np.broadcast_to(np.asarray(w, dtype=np.int64), len(rows[-1])).copy())


def _ancestors(graph: OpGraph) -> np.ndarray:
    """``anc[v, u]``: ``u`` is a proper ancestor of ``v`` (boolean n x n)."""
    from opsched.analysis.topo import topo_indices

    n = graph.num_ops
    pp, pi = graph.pred_ptr, graph.pred_idx
    anc = np.zeros((n, n), dtype=bool)
    for v in topo_indices(graph).tolist():
        preds = pi[pp[v] : pp[v + 1]]
        if len(preds):
            anc[v] = anc[preds].any(axis=0)
            anc[v, preds] = True
    return anc

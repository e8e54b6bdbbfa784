"""A makespan bound on two units: how long a memory cap lets two ops run at once.

On two units, every instant of a schedule runs one op or two. With ``W`` the work of the ops
that hold one unit (plus, in full, those that hold both), the makespan is at least

    ``W - P``

where ``P`` is the time two ops run together. Only a pair that *can share* the cap can
overlap: neither op comes before the other (through the edges or the orders a cap forces,
:mod:`opsched.analysis.cap_orders`), and some state in which both run fits. The time a pair
overlaps is a number ``x_ab >= 0`` with ``sum over b of x_ab <= d_a`` for every op ``a``, so
``P`` is at most the largest fractional b-matching of the pairs that can share, with
capacities the durations. That is half the maximum flow of its bipartite double cover
(source -> ``a`` of capacity ``d_a``, ``a -> b'`` for every pair, both ways, ``b' -> sink``
of capacity ``d_b``): a flow gives the matching ``x_ab = (f(a, b') + f(b, a')) / 2`` and a
matching the flow ``f(a, b') = f(b, a') = x_ab``.

Which pairs can share: at an instant when ``a`` and ``b`` both run, the finished set ``F``
holds their ancestors and neither them nor a descendant, and the memory live is at least
``held(F) + out_a + ws_a + out_b + ws_b`` (``held`` as in :mod:`opsched.analysis.memory_cut`).
Its least value over such ``F`` is one minimum cut, with both ops tied to the sink. The state
``F`` = their ancestors decides most pairs without a flow (when it fits, the pair can share).

Under a cap at the least peak most pairs still can share, but not the ones around the large
tensors, and when those are the long ops the bound rises well above the work over two units:
on RandWire's stage4 at its tightest cap 223 against 204.5 (the optimum, 238, is what the
down-set search proves), on NASNet's cell_1..cell_5 + reduction_0 370 against 350.5
(``python benchmarks/bench_overlap.py``). It says nothing on three or more units, where the
ops running together form larger sets.

Examples
--------
Three independent ops of 2 ticks on two units, 4 bytes free: ``x`` and ``y`` make 3-byte
tensors, ``z`` a 1-byte one. ``x`` and ``y`` cannot run at once, so ``z`` is the only
partner either has, and at most ``z``'s 2 ticks run paired: ``6 - 2 = 4``, where the work
over two units says 3. 4 is the optimum (``z`` beside ``x``, then ``y``).

>>> from opsched.ir import Op, OpGraph
>>> g = OpGraph((Op("x", 2, output_bytes=3), Op("y", 2, output_bytes=3),
...              Op("z", 2, output_bytes=1)))
>>> r = pair_overlap_bound(g, 4)
>>> r.value, r.work, r.paired, r.pairs, r.apart
(4.0, 6.0, 2.0, 2, 1)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_array

from opsched.analysis.cap_orders import (
    _closure,
    _held,
    _order_arcs,
    _readers,
    cap_orders,
    flow_budget,
)
from opsched.analysis.memory_cut import MEMORY_CUT_MAX_OPS, CutNetwork
from opsched.ir.graph import OpGraph

__all__ = [
    "OVERLAP_MAX_FLOWS",
    "OverlapBound",
    "budgeted_overlap_bound",
    "pair_overlap_bound",
    "pair_test_seconds",
]

#: Maximum flows one call runs by default; past it, the pairs not yet decided count as
#: pairs that can share (the bound stays valid, only weaker).
OVERLAP_MAX_FLOWS = 20_000

_CAP_TOTAL = 1 << 29  # capacities of the matching flow stay below 2**31 in all
_CAP_RESOLUTION = 1 << 22  # else durations in units of total / 2**22, rounded up


def pair_test_seconds(num_ops: int) -> float:
    """About how long the pair tests take before any minimum cut: ``4e-9 * n**3`` s, a
    little above what was measured on this project's 2-core machine (random layered graphs at
    60 % caps: 0.02 s at 100 ops, 0.11 at 300, 0.47 at 500, 1.39 at 700). The solver skips
    the bound where this exceeds its share of the time limit.

    >>> round(pair_test_seconds(300), 3), round(pair_test_seconds(700), 2)
    (0.108, 1.37)
    """
    return 4e-9 * float(num_ops) ** 3


@dataclass(frozen=True)
class OverlapBound:
    """Result of :func:`pair_overlap_bound` (times in the graph's units)."""

    value: float  #: lower bound on the makespan on two units: ``work - paired``
    work: float  #: time the units are held: one-unit ops' durations, two-unit ops' in full
    paired: float  #: most time two ops can run at once (the fractional matching)
    pairs: int  #: unordered pairs of one-unit ops that can share the cap (or were not tested)
    flows: int  #: minimum cuts computed
    complete: bool  #: False when the flow budget ran out before every pair was decided
    #: the unordered pairs ``(i, j)`` of one-unit ops (op indices, ``i < j``) that cannot run
    #: at once under the cap: in every schedule within it, on any number of units
    apart_pairs: tuple[tuple[int, int], ...] = ()

    @property
    def apart(self) -> int:
        """How many unordered pairs cannot run at once under the cap."""
        return len(self.apart_pairs)


def pair_overlap_bound(
    graph: OpGraph,
    free: int | None,
    orders: tuple[tuple[int, int], ...] = (),
    max_flows: int = OVERLAP_MAX_FLOWS,
) -> OverlapBound:
    """The two-unit makespan bound of the module docstring.

    Parameters
    ----------
    graph
        The op graph (on a machine of two units).
    free
        Bytes available to tensors and workspaces (the cap minus persistent bytes); ``None``
        for no cap (every unordered pair can share).
    orders
        ``(i, j)`` pairs, ``i`` ends before ``j`` starts, that hold in every schedule under
        the cap (:func:`opsched.analysis.cap_orders.cap_orders`).
    max_flows
        Stop testing pairs after this many minimum cuts.

    Graphs of more than :data:`~opsched.analysis.memory_cut.MEMORY_CUT_MAX_OPS` ops get the
    work over two units (an incomplete result): the pair tests need the n x n closure.
    """
    n = graph.num_ops
    d = graph.durations.astype(np.float64)
    units = np.fromiter((op.units for op in graph.ops), np.int64, n)
    alone = float(d[units >= 2].sum())
    one = np.flatnonzero((units == 1) & (d > 0))
    work = alone + float(d[one].sum())
    if len(one) < 2:
        return OverlapBound(work, work, 0.0, 0, 0, True)
    if n > MEMORY_CUT_MAX_OPS:  # no n x n closure: at most half the work runs paired
        half = float(d[one].sum()) / 2
        return OverlapBound(work - half, work, half, 0, 0, False)
    anc = _closure(graph, orders)  # the orders into the closure, as cap_orders does
    sub = anc[np.ix_(one, one)]
    unordered = ~(sub | sub.T)
    np.fill_diagonal(unordered, False)
    share = np.triu(unordered)
    flows, complete = 0, True
    if free is not None:
        share, flows, complete = _sharing(graph, free, orders, anc, one, share, max_flows)
    a_idx, b_idx = np.nonzero(share)
    x, y = np.nonzero(np.triu(unordered) & ~share)
    apart = tuple(sorted((int(one[i]), int(one[j])) for i, j in zip(x, y, strict=True)))
    paired = _matching(d[one], a_idx, b_idx)
    return OverlapBound(work - paired, work, paired, len(a_idx), flows, complete, apart)


def budgeted_overlap_bound(
    graph: OpGraph,
    free: int,
    seconds: float,
    orders: tuple[tuple[int, int], ...] | None = None,
) -> OverlapBound | None:
    """:func:`pair_overlap_bound` within about ``seconds``: ``None`` where the pair tests alone
    would take longer (:func:`pair_test_seconds`), else its minimum cuts budgeted with
    :func:`~opsched.analysis.cap_orders.flow_budget`. ``orders``: the cap's orders where the
    caller has them; ``None`` computes them here, with a flow budget of ``seconds`` as well.

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("x", 2, output_bytes=3), Op("y", 2, output_bytes=3),
    ...              Op("z", 2, output_bytes=1)))
    >>> budgeted_overlap_bound(g, 4, 1.0).value, budgeted_overlap_bound(g, 4, 0.0)
    (4.0, None)
    """
    n = graph.num_ops
    if pair_test_seconds(n) > seconds:
        return None
    if orders is None:
        orders = cap_orders(graph, free, flow_budget(n, seconds)).edges
    return pair_overlap_bound(graph, free, orders, max_flows=flow_budget(n, seconds))


def _sharing(
    graph: OpGraph,
    free: int,
    orders: tuple[tuple[int, int], ...],
    anc: np.ndarray,
    one: np.ndarray,
    share: np.ndarray,
    max_flows: int,
) -> tuple[np.ndarray, int, bool]:
    """Which unordered pairs (upper triangle of ``share``, indices into ``one``) can run
    at once under ``free`` bytes; the cuts computed; whether every pair was decided."""
    net = CutNetwork(graph)
    own = graph.output_sizes.astype(np.int64) + graph.workspace_sizes.astype(np.int64)
    share = share & ((own[one][:, None] + own[one][None, :]) <= free)
    weight = net.kept.astype(np.float64)  # exact: byte totals stay far below 2**53
    readers = _readers(graph)
    extra = _order_arcs(orders)
    tight: list[tuple[int, int]] = []
    for x in range(len(one)):
        ys = np.flatnonzero(share[x])
        if not len(ys):
            continue
        # the state with only their ancestors finished: if it fits, the pair can share
        held = _held(anc[one[x]][None, :] | anc[one[ys]], readers, net, weight)
        over = held + own[one[x]] + own[one[ys]] > free
        tight.extend((x, int(y)) for y in ys[over])
    # the longest pairs first: where the flow budget runs out, the pairs left matter least
    dur = graph.durations[one]
    tight.sort(key=lambda xy: -(dur[xy[0]] + dur[xy[1]]))
    flows, complete = 0, True
    for x, y in tight:
        if flows >= max_flows:
            complete = False
            break
        a, b = int(one[x]), int(one[y])
        value, _ = net.least(np.flatnonzero(anc[a] | anc[b]), np.array([a, b]), extra)
        flows += 1
        if value + own[a] + own[b] > free:
            share[x, y] = False
    return share, flows, complete


def _matching(d: np.ndarray, a_idx: np.ndarray, b_idx: np.ndarray) -> float:
    """The largest fractional b-matching over the pairs ``(a_idx, b_idx)`` with capacities
    ``d`` (half the maximum flow of the double cover). Integer durations are exact; others,
    or totals too large for the flow's 32-bit capacities, are counted in units of ``total /
    2**22`` rounded up, so the result never falls short (the bound stays valid)."""
    from scipy.sparse.csgraph import maximum_flow

    if not len(a_idx):
        return 0.0
    m = len(d)
    total = float(d.sum())
    exact = bool(np.all(d == np.round(d))) and total < _CAP_TOTAL  # integer times (ticks)
    q = 1.0 if exact else total / _CAP_RESOLUTION
    cap = np.ceil(d / q).astype(np.int64)
    src, sink = 2 * m, 2 * m + 1
    inf = int(cap.sum()) + 1
    rows = np.concatenate([np.full(m, src), a_idx, b_idx, np.arange(m, 2 * m)])
    cols = np.concatenate([np.arange(m), b_idx + m, a_idx + m, np.full(m, sink)])
    vals = np.concatenate([cap, np.full(2 * len(a_idx), inf), cap])
    g = csr_array((vals.astype(np.int32), (rows, cols)), shape=(2 * m + 2, 2 * m + 2))
    g.sum_duplicates()
    flow = maximum_flow(g, src, sink).flow_value
    return float(flow) * q / 2

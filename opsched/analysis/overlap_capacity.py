"""How much work can run beside an op under a memory cap on two units: the overlap
capacities of the case split (:mod:`opsched.analysis.tensor_cases`).

The ops that overlap an op ``c`` are ``E - S``, where ``S`` is the set finished when ``c``
starts and ``E`` the set started before it ends: both closed under predecessors (and under
the orders a cap forces), ``S`` within ``E``, ``S`` holding ``c``'s ancestors and ``E`` none
of its descendants. Both instants fit the cap, ``held(S) + out_c + ws_c`` and ``held(E) +
out_c + ws_c`` at most the free memory (a running op counted as finished holds no more than
it does), and each op of ``E - S`` must be able to run beside ``c`` at all
(:func:`partner_matrix`, from the overlap bound's pair tests). The largest one-unit work of
``E - S`` over such pairs is a small integer program (``scipy.optimize.milp``); its dual
bound caps the time other ops can share with ``c``, which the case split puts in place of
``c``'s duration in the overlap bound's matching.

Examples
--------
``x`` (6 bytes) feeds ``r`` (1 tick, 6 bytes) and ``c`` (4 ticks, 1 byte), and ``y`` reads
both. ``r`` is the only op that could run beside ``c``; if it did, the instant ``c`` ends
would hold ``x`` (``c`` still reads it), ``r``'s output (``y`` reads it) and ``c``'s own, 6 +
6 + 1 = 13 bytes. With 12 bytes free nothing overlaps ``c``; with 13, ``r``'s tick can.

>>> from opsched.ir import Op, OpGraph
>>> from opsched.analysis.memory_cut import _ancestors
>>> g = OpGraph((Op("x", 1, output_bytes=6), Op("r", 1, deps=("x",), output_bytes=6),
...              Op("c", 4, deps=("x",), output_bytes=1), Op("y", 1, deps=("r", "c"))))
>>> anc = _ancestors(g)
>>> [overlap_capacity(g, free, (), partner_matrix(g, anc, ()), [2], anc=anc)
...  for free in (12, 13)]
[({2: 0.0}, True), ({2: 1.0}, True)]
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_array

from opsched.analysis.cap_orders import _closure
from opsched.analysis.memory_cut import CutNetwork
from opsched.ir.graph import OpGraph

__all__ = ["PROGRAM_NODES", "overlap_capacity", "partner_matrix", "program_budget"]

#: Branch-and-bound nodes an overlap-capacity program may explore (a limit without a clock:
#: the NASNet pieces' programs close at the root).
PROGRAM_NODES = 10_000


def program_budget(num_ops: int, seconds: float) -> int:
    """Integer programs that take about ``seconds`` on a graph of ``num_ops`` ops:
    ``1e-4 * num_ops`` s each, a little above what the NASNet pieces took on this project's
    2-core machine (148 ops: 20 programs in 0.29 s; 218 ops: 52 in 0.58 s). A count, not a
    clock, so that a deterministic solve stays deterministic.

    >>> program_budget(200, 6.0)
    300
    """
    return max(0, int(seconds / (1e-4 * max(1, num_ops))))


def overlap_capacity(
    graph: OpGraph,
    free: int,
    orders: tuple[tuple[int, int], ...],
    partners: np.ndarray,
    ops: list[int],
    deadline: float | None = None,
    anc: np.ndarray | None = None,
) -> tuple[dict[int, float], bool]:
    """The most work that can overlap each op of ``ops`` under ``free`` bytes (module
    docstring): an upper bound, from each integer program's dual bound.

    ``partners``: n x n booleans, the pairs of one-unit ops that can run at once; only
    one-unit ops' work counts, and the others (zero duration, no unit) may run beside any
    op. ``orders``: precedences that hold in every schedule considered. ``deadline``: a
    ``time.perf_counter()`` value; each program stops by then (and within 5 s) with its
    dual bound, and the ops left out of the result have no limit. Without one the programs
    stop only at :data:`PROGRAM_NODES` branch-and-bound nodes, so the result depends on the
    inputs alone.

    Returns the capacities of the ops whose program ran and whether every program of
    ``ops`` ran to its optimum. ``anc``: the closure with ``orders`` in it, where the
    caller has it.
    """
    import time

    from scipy.optimize import Bounds, LinearConstraint, milp

    n = graph.num_ops
    if anc is None:
        anc = _closure(graph, orders)
    d = graph.durations.astype(np.float64)
    counted = _one_unit(graph)
    work = np.where(counted, d, 0.0)
    own = (graph.output_sizes + graph.workspace_sizes).astype(np.float64)
    net = CutNetwork(graph)
    sp, si = graph.succ_ptr, graph.succ_idx
    tensors = np.flatnonzero(net.kept > 0)
    t = len(tensors)
    # variables: s (finished at c's start), e (started before c's end), their held bits
    s0, e0, hs0, he0 = 0, n, 2 * n, 2 * n + t
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    count = 0

    def add(idx: list[np.ndarray], coef: list[float]) -> None:
        nonlocal count
        k = len(idx[0])
        for i, c in zip(idx, coef, strict=True):
            rows.append(np.arange(count, count + k))
            cols.append(i)
            vals.append(np.full(k, c))
        count += k

    later = np.repeat(np.arange(n), np.diff(graph.pred_ptr))
    earlier = graph.pred_idx.astype(np.int64)
    if orders:
        later = np.concatenate([later, [j for _, j in orders]])
        earlier = np.concatenate([earlier, [i for i, _ in orders]])
    lo: list[np.ndarray] = []
    hi: list[np.ndarray] = []
    for off in (s0, e0):  # closed under predecessors: x_later <= x_earlier
        add([later + off, earlier + off], [1.0, -1.0])
        lo.append(np.full(len(later), -np.inf))
        hi.append(np.zeros(len(later)))
    add([np.arange(n) + s0, np.arange(n) + e0], [1.0, -1.0])  # S within E
    lo.append(np.full(n, -np.inf))
    hi.append(np.zeros(n))
    tk = np.repeat(np.arange(t), np.diff(sp)[tensors])  # one row per (tensor, reader)
    tu = tensors[tk]
    tr = np.concatenate([si[sp[u] : sp[u + 1]] for u in tensors]) if t else np.zeros(0, int)
    kept_out = np.flatnonzero(net.held[tensors])  # graph outputs: held once made
    for off, hoff in ((s0, hs0), (e0, he0)):
        add([tk + hoff, tu + off, tr + off], [1.0, -1.0, 1.0])  # held >= made - reader done
        add([kept_out + hoff, tensors[kept_out] + off], [1.0, -1.0])
        lo += [np.zeros(len(tk) + len(kept_out))]
        hi += [np.full(len(tk) + len(kept_out), np.inf)]
    mem_s, mem_e = count, count + 1  # the bytes held at each instant, at most free - own_c
    rows += [np.full(t, mem_s), np.full(t, mem_e)]
    cols += [np.arange(t) + hs0, np.arange(t) + he0]
    vals += [net.kept[tensors].astype(np.float64)] * 2
    count += 2
    lo.append(np.full(2, -np.inf))
    hi.append(np.zeros(2))  # set per op
    pair_rows = count  # e_v - s_v <= 1 where v may run beside c, else 0
    add([np.arange(n) + e0, np.arange(n) + s0], [1.0, -1.0])
    lo.append(np.full(n, -np.inf))
    hi.append(np.ones(n))
    a = csr_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(count, 2 * n + 2 * t),
    )
    row_lo, row_hi = np.concatenate(lo), np.concatenate(hi)
    cost = np.zeros(2 * n + 2 * t)
    cost[s0 : s0 + n], cost[e0 : e0 + n] = work, -work  # minimise -(work of E - S)
    integer = np.zeros(2 * n + 2 * t)
    integer[: 2 * n] = 1
    out: dict[int, float] = {}
    exact = True
    for c in ops:
        left = None if deadline is None else min(5.0, deadline - time.perf_counter())
        if left is not None and left <= 0:
            exact = False
            continue
        ub = np.ones(2 * n + 2 * t)
        ub[2 * n :] = np.inf
        lb = np.zeros(2 * n + 2 * t)
        first = np.flatnonzero(anc[c])
        lb[first + s0] = lb[first + e0] = 1
        last = np.flatnonzero(anc[:, c])
        ub[last + s0] = ub[last + e0] = ub[c + s0] = ub[c + e0] = 0
        hi_c = row_hi.copy()
        hi_c[mem_s] = hi_c[mem_e] = free - own[c]
        hi_c[pair_rows : pair_rows + n] = (partners[c] | ~counted).astype(np.float64)
        r = milp(
            cost,
            integrality=integer,
            bounds=Bounds(lb, ub),
            constraints=LinearConstraint(a, row_lo, hi_c),
            options={
                "mip_rel_gap": 0.0,
                "node_limit": PROGRAM_NODES,
                **({} if left is None else {"time_limit": left}),
            },
        )
        exact &= r.status in (0, 2)
        if r.status == 2:  # no state lets c run: nothing overlaps it
            out[c] = 0.0
        elif getattr(r, "mip_dual_bound", None) is not None and np.isfinite(r.mip_dual_bound):
            out[c] = max(0.0, -float(r.mip_dual_bound))
        else:
            out[c] = float(d[c])  # no bound came back: no limit
    return out, exact


def _one_unit(graph: OpGraph) -> np.ndarray:
    """Ops of positive duration that hold one unit: the ops the overlap bound matches."""
    units = np.fromiter((op.units for op in graph.ops), np.int64, graph.num_ops)
    return (units == 1) & (graph.durations > 0)


def partner_matrix(
    graph: OpGraph, anc: np.ndarray, apart: tuple[tuple[int, int], ...]
) -> np.ndarray:
    """n x n booleans: the one-unit ops of positive duration that can run beside each other,
    neither before the other in the closure ``anc`` (``anc[v, u]``: ``u`` before ``v``, the
    cap's orders in it) nor among the ``apart`` pairs of
    :func:`~opsched.analysis.overlap.pair_overlap_bound`."""
    one = _one_unit(graph)
    partners = ~(anc | anc.T) & one[:, None] & one[None, :]
    np.fill_diagonal(partners, False)
    for i, j in apart:
        partners[i, j] = partners[j, i] = False
    return partners

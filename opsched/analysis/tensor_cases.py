"""A sharper two-unit bound under a memory cap: split on the order of large tensors.

Two tensors ``x`` and ``y`` (outputs of ops ``a`` and ``b`` of positive duration that no
path orders) are *exclusive* when their lifetimes can never overlap under the cap. If they
did, at the instant the later producer, say ``b``, starts, ``x`` would be live: ``a`` has
started and some reader ``r`` of ``x`` is unfinished. The finished set ``F`` then holds
``b``'s ancestors, and ``F + a`` is still closed and holds no more than the state does
(a running ``a`` holds at least its output), so the memory is at least ``held(F + a) + out_b
+ ws_b`` with ``r`` and ``b`` unfinished: one minimum cut per reader
(:mod:`opsched.analysis.memory_cut`). When every reader's cut exceeds the free memory, and
the same holds with ``a`` and ``b`` swapped, the lifetimes are disjoint in every schedule:
either every reader of ``x`` ends before ``b`` starts, or every reader of ``y`` ends before
``a`` starts. NASNet's cells show it: a cell's output (six units of memory) is read by two
ReLUs of six units each, whose 1x1 convolutions run for 20 ticks; both ReLU outputs beside
the cell's output exceed the cap, so one ReLU-convolution chain runs entirely before the
other starts.

Each choice of sides is a *case*: its orders are added (with the orders the cap then forces,
:func:`~opsched.analysis.cap_orders.cap_orders` with ``given``), and the overlap bound
(:mod:`opsched.analysis.overlap`) is taken in each; the least over the cases bounds every
schedule. Within a case a second limit sharpens it: the time the other ops can overlap an
op ``c``. The ops that overlap ``c`` are ``E - S``, where ``S`` is the set finished when
``c`` starts and ``E`` the set started before it ends (both closed, ``S`` within ``E``,
``S`` holding ``c``'s ancestors, ``E`` none of its descendants). Both instants fit the cap:
``held(S) + out_c + ws_c`` and ``held(E) + out_c + ws_c`` at most the free memory (a running
op counted as finished holds no more than it does). And each op of ``E - S`` must be able to
run beside ``c`` (the overlap bound's pair test). The largest work of ``E - S`` over such
pairs is a small integer program (``scipy.optimize.milp``,
:mod:`opsched.analysis.overlap_capacity`); where it is below ``c``'s duration it replaces it
in the matching. The first convolution of each pair above can
overlap one tick of work instead of 20, since every op that could run beside it leaves a
tensor behind.

On NASNet's cell_0..cell_3 at its tightest cap (148 ops, 2 units) the bound goes from 217 to
236 (the optimum is 238), and on cell_1..cell_5 + reduction_0 (218 ops) from 370 to 399
(``python benchmarks/bench_overlap.py``).

Examples
--------
``x`` (6 bytes) feeds two chains, ``ra -> ca`` and ``rb -> cb`` (the ``r`` ops make 6
bytes, the ``c`` ops run 4 ticks and make 1); ``s -> t`` is a side chain of 1-byte tensors.
With 15 bytes free the two ``r`` outputs cannot be live together (with ``x``, 18 bytes), so
one chain ends before the other starts: 11 ticks, the optimum (a brute force agrees). The
overlap bound alone says 7, the work over two units.

>>> from opsched.ir import Op, OpGraph
>>> ops = (Op("x", 1, output_bytes=6), Op("ra", 1, deps=("x",), output_bytes=6),
...        Op("ca", 4, deps=("ra",), output_bytes=1), Op("rb", 1, deps=("x",), output_bytes=6),
...        Op("cb", 4, deps=("rb",), output_bytes=1), Op("s", 1, output_bytes=1),
...        Op("t", 1, deps=("s",), output_bytes=1),
...        Op("out", 0, deps=("ca", "cb", "t"), output=True))
>>> r = case_overlap_bound(OpGraph(ops), 15)
>>> r.pairs, r.plain, r.value
(((1, 3),), 7.0, 11.0)
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from opsched.analysis.cap_orders import _closure, _held, _order_arcs, _readers, cap_orders
from opsched.analysis.memory_cut import MEMORY_CUT_MAX_OPS, CutNetwork
from opsched.analysis.overlap import (
    OVERLAP_MAX_FLOWS,
    OverlapBound,
    _matching,
    pair_overlap_bound,
)
from opsched.analysis.overlap_capacity import (  # the last four re-exported, as before
    PROGRAM_NODES,
    _one_unit,
    overlap_capacity,
    partner_matrix,
    program_budget,
)
from opsched.ir.graph import OpGraph

__all__ = ["CASE_MAX_PAIRS", "PROGRAM_NODES", "CaseBound", "case_overlap_bound", "case_proof",
           "exclusive_tensors", "overlap_capacity", "partner_matrix", "program_budget"]  # fmt: skip


#: At most this many exclusive pairs are split on (2**4 = 16 cases); any subset gives a
#: valid bound, the pairs of the largest tensors are taken first.
CASE_MAX_PAIRS = 4


@dataclass(frozen=True)
class CaseBound:
    """Result of :func:`case_overlap_bound` (times in the graph's units)."""

    value: float  #: the least bound over the cases (never below ``plain``)
    plain: float  #: the overlap bound without a split
    pairs: tuple[tuple[int, int], ...]  #: exclusive tensors split on (producer indices)
    cases: tuple[float, ...]  #: each case's bound (``inf`` for a case no schedule obeys)
    flows: int  #: minimum cuts computed (pair tests and cap orders)
    programs: int  #: integer programs solved (overlap capacities)
    #: False when a budget (or the clock) stopped a search early: the bound stays valid
    complete: bool
    overlap: OverlapBound  #: the plain overlap bound's result (its pairs, apart pairs)


def exclusive_tensors(
    graph: OpGraph,
    free: int,
    orders: tuple[tuple[int, int], ...] = (),
    max_flows: int = OVERLAP_MAX_FLOWS,
) -> tuple[list[tuple[int, int]], int, bool]:
    """Pairs of tensors whose lifetimes never overlap under ``free`` bytes (module docstring).

    Returns ``(pairs, flows, complete)``: producer index pairs ``(a, b)``, ``a < b``, both of
    positive duration and unordered (through the graph and ``orders``), the minimum cuts
    run, and False if ``max_flows`` stopped the search (the pairs found are all exclusive).
    """
    n = graph.num_ops
    if n > MEMORY_CUT_MAX_OPS:
        return [], 0, False
    net = CutNetwork(graph)
    anc = _closure(graph, orders)
    extra = _order_arcs(orders)
    own = graph.output_sizes.astype(np.int64) + graph.workspace_sizes.astype(np.int64)
    sp, si = graph.succ_ptr, graph.succ_idx
    weight = net.kept.astype(np.float64)
    reads = _readers(graph)
    nreaders = np.diff(sp)
    makers = np.flatnonzero((graph.durations > 0) & (net.kept > 0))
    eye = np.eye(n, dtype=bool)
    flows = 0

    def lives_beside(a: int, bs: np.ndarray) -> np.ndarray:
        """Per op of ``bs``, whether the least obvious state has ``a``'s tensor live as it
        starts and fits: only their ancestors (and ``a``) finished. Where it does not fit,
        a cut decides."""
        fin = anc[a][None, :] | anc[bs] | eye[a][None, :]
        readers = si[sp[a] : sp[a + 1]]
        live = ~fin[:, readers].all(axis=1) if len(readers) else np.ones(len(bs), bool)
        return live & (_held(fin, reads, net, weight) + own[bs] <= free)

    def started_beside(a: int, bs: np.ndarray) -> np.ndarray:
        """The same with the roles swapped: each ``b``'s tensor live as ``a`` starts."""
        fin = anc[a][None, :] | anc[bs] | eye[bs]
        done = ((reads[bs].toarray() > 0) & fin).sum(axis=1)  # readers of each b ended
        live = (nreaders[bs] == 0) | (done < nreaders[bs])
        return live & (_held(fin, reads, net, weight) + own[a] <= free)

    def by_cut(a: int, b: int) -> bool | None:
        """Whether some state has ``a``'s tensor live as ``b`` starts, by a cut per reader;
        None where the flow budget ran out first."""
        nonlocal flows
        fin = np.flatnonzero(anc[a] | anc[b] | eye[a])
        readers: list[int | None] = [int(r) for r in si[sp[a] : sp[a + 1]] if not anc[b, r]]
        if sp[a] == sp[a + 1]:
            readers = [None]  # a graph output: live from its start to the end
        for r in readers:
            if flows >= max_flows:
                return None
            late = np.array([b] if r is None or r == b else [b, r])
            value, _ = net.least(fin, late, extra)
            flows += 1
            if value + own[b] <= free:
                return True
        return False

    pairs: list[tuple[int, int]] = []
    undecided: list[tuple[int, int]] = []
    for x, a in enumerate(makers.tolist()):
        bs = makers[x + 1 :]
        bs = bs[~anc[a, bs] & ~anc[bs, a]]
        if len(bs):
            bs = bs[~lives_beside(a, bs)]
        if len(bs):
            bs = bs[~started_beside(a, bs)]
        undecided += [(a, int(b)) for b in bs]
    # the largest tensors first: where the budget runs out, the pairs left matter least
    undecided.sort(key=lambda p: -int(net.kept[p[0]] + net.kept[p[1]]))
    complete = True
    for a, b in undecided:
        ab = by_cut(a, b)
        ba = by_cut(b, a) if ab is False else ab
        if ab is None or ba is None:
            complete = False  # the budget ran out: the pairs found so far are all exclusive
            break
        if not ab and not ba:
            pairs.append((a, b))
    return pairs, flows, complete


def case_overlap_bound(
    graph: OpGraph,
    free: int,
    orders: tuple[tuple[int, int], ...] = (),
    max_pairs: int = CASE_MAX_PAIRS,
    max_flows: int = OVERLAP_MAX_FLOWS,
    max_programs: int = 400,
    seconds: float | None = None,
) -> CaseBound:
    """The two-unit makespan bound of the module docstring.

    Parameters
    ----------
    graph
        The op graph (on a machine of two units).
    free
        Bytes available to tensors and workspaces (the cap minus persistent bytes).
    orders
        Precedences the cap forces (:func:`~opsched.analysis.cap_orders.cap_orders`).
    max_pairs
        Split on at most this many exclusive pairs (``2 ** max_pairs`` cases).
    max_flows, max_programs
        Budgets for the minimum cuts and the integer programs; past them the bound is
        weaker (never invalid), and ``complete`` is False.
    seconds
        Most seconds the integer programs may take in all (a program stopped early gives
        its dual bound, and the ops left their durations: weaker, never invalid, and
        ``complete`` False). The budgets above keep within it on the graphs measured; this
        guards the rest, at the price of a result that can then vary with the machine's
        speed. None (the default): no clock, the result depends on the inputs alone.
    """
    import time

    deadline = None if seconds is None else time.perf_counter() + seconds
    base = pair_overlap_bound(graph, free, orders, max_flows=max_flows)
    n = graph.num_ops
    if n > MEMORY_CUT_MAX_OPS or base.pairs == 0:
        return CaseBound(base.value, base.value, (), (), base.flows, 0, base.complete, base)
    flows = base.flows
    found, used, complete = exclusive_tensors(graph, free, orders, max(0, max_flows - flows))
    flows += used
    pairs = tuple(found[:max_pairs])
    sp, si = graph.succ_ptr, graph.succ_idx
    programs = 0
    values: list[float] = []
    for sides in itertools.product((0, 1), repeat=len(pairs)):
        given: list[tuple[int, int]] = []
        never = False  # a graph output no op reads is live to the end: it is never first
        for (a, b), flip in zip(pairs, sides, strict=True):
            first, then = (b, a) if flip else (a, b)
            readers = si[sp[first] : sp[first + 1]]
            never |= not len(readers)
            given += [(int(r), then) for r in readers]
        if never:
            values.append(float("inf"))
            continue
        if pairs:
            # the caller's orders as given too: a case short of flows keeps at least those
            case = cap_orders(graph, free, max(0, max_flows - flows), given=(*orders, *given))
            flows += case.flows
            complete &= case.complete
            if case.conflict is not None:
                values.append(float("inf"))
                continue
            edges, plain = case.edges, None
        else:  # nothing to split on: the capacities alone, on the pair tests already made
            edges, plain = orders, base
        value, made, cuts, whole = _case_value(
            graph, free, edges, max(0, max_programs - programs), max(0, max_flows - flows),
            deadline, plain,
        )  # fmt: skip
        programs, flows, complete = programs + made, flows + cuts, complete and whole
        values.append(value)
    value = max(base.value, min(values)) if values else base.value
    return CaseBound(value, base.value, pairs, tuple(values), flows, programs, complete, base)


def _case_value(
    graph: OpGraph, free: int, orders: tuple[tuple[int, int], ...], max_programs: int,
    max_flows: int, deadline: float | None, plain: OverlapBound | None = None,
) -> tuple[float, int, int, bool]:  # fmt: skip
    """One case's overlap bound with the overlap capacities; the programs solved, the cuts
    made, and whether no budget cut either short. ``plain``: the case's pair tests, where
    they are already made (no new cuts then)."""
    r = plain if plain is not None else pair_overlap_bound(graph, free, orders, max_flows=max_flows)
    d = graph.durations.astype(np.float64)
    anc = _closure(graph, orders)
    partners = partner_matrix(graph, anc, r.apart_pairs)
    one = np.flatnonzero(_one_unit(graph))
    # a single partner as long as the op already fills it: no program can lower it; an op
    # without partners is matched with none anyway
    longest = np.where(partners, d[None, :], 0.0).max(axis=1)
    need = [int(c) for c in one if 0 < longest[c] < d[c]]
    need.sort(key=lambda c: -d[c])
    whole = r.complete and len(need) <= max_programs
    need = need[:max_programs]
    caps: dict[int, float] = {}
    if need:
        caps, exact = overlap_capacity(graph, free, orders, partners, need, deadline, anc)
        whole &= exact
    cap = np.array([min(d[c], caps.get(int(c), d[c])) for c in one])
    a_idx, b_idx = np.nonzero(np.triu(partners[np.ix_(one, one)]))
    cuts = 0 if plain is not None else r.flows
    return r.work - _matching(cap, a_idx, b_idx), len(caps), cuts, whole


def case_proof(graph: OpGraph, pairs: tuple[tuple[int, int], ...]) -> str:
    """Why no schedule fits when every case of a split is empty (``CaseBound.value`` is
    infinite), naming the ops whose outputs the cap keeps apart."""
    if not pairs:
        return "the orders the memory cap forces contradict each other"
    names = ", ".join(f"{graph.ops[a].name!r} / {graph.ops[b].name!r}" for a, b in pairs)
    return (
        f"the outputs of these pairs of ops are never live together within the cap: {names}; "
        "whichever of each pair is freed first, no schedule remains (the orders the cap then "
        "forces contradict, or a graph output no op reads would have to be freed)"
    )

"""The core of opsched's memory search: a layered search over scheduled sets.

A *state* is the set ``S`` of ops already run (a down-set of the DAG). Everything the future
depends on is a function of ``S``: the live memory (outputs of ops in ``S`` with a consumer
outside ``S``, plus held graph outputs), the ready ops, and what each ready op would free.
Only the peak so far depends on the path, so two paths to the same ``S`` merge into one state
keeping the lower peak: that is exact dynamic programming over down-sets. Layer ``k`` holds
the states with ``|S| = k``; expanding layer by layer and keeping *all* states finds the
optimum; keeping the best ``width`` (least live memory first, then least peak) is a beam
search. Under a budget (the incumbent) the beam does not chase a low peak so far, which
would defer big ops, but keeps the states that hold the least memory at each layer.

Two rules prune without losing optimality:

* **Bound**: children whose peak, or the static bound of an op still to run (its inputs,
  output and workspace together), reaches the incumbent are dropped: the search only looks
  for strictly better orders.
* **Free first**: if a ready op ``v`` does not raise the live memory (it frees at least what
  it keeps) and its own step stays within ``max(peak so far, global lower bound)``, some
  optimal completion starts with ``v``, so only that child is generated. (Moving ``v`` to the
  front of any completion lowers or keeps the memory of every step it jumps over.)

Each state stores its ready ops with the bytes each would free, and the set ``S`` as a bit
mask (merging compares masks, so it is exact). A whole layer's candidates are scored in a few
vectorised operations, and a child is built from its parent by testing the bits of the
producers and consumers around the op it runs. Nothing else is kept per op: masks of every
op's producers and consumers, as an earlier version kept, take about n^2 / 16 bytes on a
graph in topological order (9.2 GB at 256,000 ops), and a state's mask is n / 8 bytes. So
memory grows with the states kept times n / 8, and time with the states times the degrees
times n / 64 machine words (the bit tests): still quadratic in n, with a small constant. A
version that kept counters of the live tensors and waiting ops per state instead of the mask
copied thousands of entries per child on wide graphs and ran 4 times slower at 64,000 ops.

The bound of the ops still to run is the largest static bound among them. Every op not yet
run descends from (or is) a ready op, so it is the largest ``reach`` (the static bound's
maximum over an op and its descendants) among the ready ops; after running ``v`` it is the
largest among the others and among ``v``'s consumers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from opsched.heuristics.memory.common import MemoryModel

__all__ = ["LayeredOutcome", "layered_search"]


@dataclass(frozen=True)
class LayeredOutcome:
    """What :func:`layered_search` found.

    ``order`` is ``None`` when no order strictly below ``incumbent`` was found; ``complete``
    is True when no state was ever dropped for width (the search was exhaustive, so its
    answer, or the incumbent if it found none, is optimal); ``states`` counts states kept;
    ``aborted`` is True when an exhaustive search ran over ``max_states`` or any search
    past its deadline.
    """

    order: list[int] | None
    peak: int | None
    complete: bool
    states: int
    aborted: bool


class _State:
    __slots__ = ("freed", "live", "mask", "peak", "ready", "trail")

    def __init__(
        self, mask: int, ready: list[int], freed: list[int], live: int, peak: int, trail: Any,
    ) -> None:  # fmt: skip
        self.mask = mask  # bit v set: v has run
        self.ready = ready  # ops whose producers have all run
        self.freed = freed  # bytes each ready op frees (inputs it is the last to read)
        self.live = live  # kept outputs still live (persistent bytes excluded)
        self.peak = peak  # largest step memory so far (persistent included)
        self.trail = trail  # (parent's trail, op): the order as a linked list


def layered_search(
    m: MemoryModel,
    *,
    width: int | None,
    incumbent: int,
    budget: int | None = None,
    max_states: int | None = None,
    deadline: float | None = None,
) -> LayeredOutcome:
    """Search orders of ``m`` with a peak below ``incumbent``.

    Parameters
    ----------
    m
        The graph's memory model.
    width
        States kept per layer; ``None`` keeps all (exact).
    incumbent
        Peak of the best order known; only strictly better orders are searched.
    budget
        Soft target for the beam: states whose peak (or bound) exceeds it rank after all
        the others, by that bound; ``None``: no target.
    max_states
        With ``width=None``: give up (``aborted``) once more states than this were kept.
    deadline
        A :func:`time.perf_counter` time at which to give up (``aborted``, no order).

    Examples
    --------
    Two independent producer/consumer pairs (8 B tensors; the consumers keep nothing):
    running each pair back to back peaks at 8 B, interleaving at 16 B.

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 1, output_bytes=8), Op("b", 1, output_bytes=8),
    ...              Op("c", 1, deps=("a",)), Op("d", 1, deps=("b",))))
    >>> r = layered_search(MemoryModel.of(g), width=None, incumbent=16)
    >>> r.order, r.peak, r.complete
    ([0, 2, 1, 3], 8, True)
    """
    n = m.n
    preds, out = m.preds, m.out
    base, bound = m.persistent, m.bound
    total = base + sum(out) + sum(m.ws)
    dt: Any = np.int64 if total < 2**62 and incumbent < 2**62 else object
    need = np.asarray(m.need, dtype=dt)
    kept = np.asarray(m.kept, dtype=dt)
    runs = np.asarray(m.runs, dtype=bool)
    # static bound of each op's own step: inputs + output + workspace, all live at once
    slb = [base + m.need[v] + sum(out[p] for p in preds[v]) if m.runs[v] else 0 for v in range(n)]
    reach, below = _reach(m, slb)
    reach_a = np.asarray(reach, dtype=dt)
    below_a = np.asarray(below, dtype=dt)
    roots = [v for v in range(n) if not preds[v]]
    root = _State(0, roots, [0] * len(roots), 0, base, None)
    layer = [root]
    complete, kept_states = True, 1
    for _ in range(n):
        if deadline is not None and time.perf_counter() >= deadline:
            return LayeredOutcome(None, None, False, kept_states, True)
        lens = np.fromiter((len(s.ready) for s in layer), dtype=np.int64, count=len(layer))
        offsets = np.concatenate([[0], np.cumsum(lens)[:-1]])
        sid = np.repeat(np.arange(len(layer)), lens)
        ops = np.fromiter(chain.from_iterable(s.ready for s in layer), np.int64, len(sid))
        freed = np.asarray(list(chain.from_iterable(s.freed for s in layer)), dtype=dt)
        live = np.asarray([s.live for s in layer], dtype=dt)[sid]
        peak = np.asarray([s.peak for s in layer], dtype=dt)[sid]
        step = base + live + need[ops]
        run = runs[ops]
        new_peak = np.where(run, np.maximum(peak, step), peak)
        new_live = live + kept[ops] - freed
        # free first: per state, only the first op that frees what it keeps and fits
        ff = (kept[ops] <= freed) & (~run | (step <= np.maximum(peak, bound)))
        keep = np.ones(len(ops), dtype=bool)
        if ff.any():
            idx = np.flatnonzero(ff)
            _, first = np.unique(sid[idx], return_index=True)
            chosen = idx[first]
            forced = np.zeros(len(layer), dtype=bool)
            forced[sid[chosen]] = True
            keep &= ~forced[sid]
            keep[chosen] = True
        # the bound of the ops still to run after each candidate: the largest reach among
        # the state's other ready ops (the second largest where the candidate alone holds
        # the largest), or among the candidate's consumers (every state has a ready op
        # before the last layer, so no segment is empty)
        r = reach_a[ops]
        top = np.maximum.reduceat(r, offsets)
        at_top = r == top[sid]
        ties = np.add.reduceat(at_top.astype(np.int64), offsets)
        second = np.maximum.reduceat(np.where(at_top, 0, r), offsets)
        others = np.where(at_top & (ties[sid] == 1), second[sid], top[sid])
        future = np.maximum(others, below_a[ops])
        keep &= (new_peak < incumbent) & (future < incumbent)
        cand = np.flatnonzero(keep)
        if len(cand) == 0:
            return LayeredOutcome(None, None, complete, kept_states, False)
        # rank: least live memory, then least peak bound, then least peak (which also keeps
        # the lower peak when two candidates reach the same set)
        key1 = np.maximum(new_peak[cand], future[cand])
        if budget is None:
            order = cand[np.lexsort((new_peak[cand], key1, new_live[cand]))]
        else:  # states that can still meet the budget first, the others by peak bound
            over = key1 > budget
            second = np.where(over, key1, new_live[cand])
            order = cand[np.lexsort((new_peak[cand], key1, second, over))]
        seen: set[int] = set()
        nxt: list[_State] = []
        for i in order.tolist():
            si = int(sid[i])
            s = layer[si]
            v = int(ops[i])
            mask = s.mask | (1 << v)
            if mask in seen:
                continue
            if width is not None and len(nxt) >= width:
                complete = False
                break
            seen.add(mask)
            nxt.append(_child(s, v, i - int(offsets[si]), mask, int(new_peak[i]),
                              int(new_live[i]), m))  # fmt: skip
            # the budget holds within a layer too: one layer alone had reached 670,000
            # states (and gigabytes) against a budget of 100,000
            if width is None and max_states is not None and kept_states + len(nxt) > max_states:
                return LayeredOutcome(None, None, False, kept_states + len(nxt), True)
            if deadline is not None and len(nxt) % 1024 == 0 and time.perf_counter() >= deadline:
                return LayeredOutcome(None, None, False, kept_states + len(nxt), True)
        kept_states += len(nxt)
        layer = nxt
    best = min(layer, key=lambda s: s.peak)
    result: list[int] = []
    t = best.trail
    while t is not None:
        t, v = t
        result.append(v)
    result.reverse()
    return LayeredOutcome(result, int(best.peak), complete, kept_states, False)


def _child(s: _State, v: int, at: int, mask: int, peak: int, live: int, m: MemoryModel) -> _State:
    """The state after running ``v`` (at position ``at`` of ``s.ready``) in state ``s``
    (``mask``: ``s.mask`` with ``v``)."""
    succs, preds, out = m.succs, m.preds, m.out
    ready = s.ready[:at] + s.ready[at + 1 :]
    freed = s.freed[:at] + s.freed[at + 1 :]
    for p in preds[v]:
        if not out[p]:
            continue
        left = [w for w in succs[p] if not (mask >> w) & 1]
        if len(left) == 1 and left[0] in ready:  # its one consumer still to run frees it
            freed[ready.index(left[0])] += out[p]
    for w in succs[v]:
        if all((mask >> p) & 1 for p in preds[w]):
            ready.append(w)
            # the inputs whose only consumer still to run is w
            last = [p for p in preds[w] if all(u == w or (mask >> u) & 1 for u in succs[p])]
            freed.append(sum(out[p] for p in last))
    return _State(mask, ready, freed, live, peak, (s.trail, v))


def _reach(m: MemoryModel, slb: list[int]) -> tuple[list[int], list[int]]:
    """``reach[v]``: the largest static bound of ``v`` and its descendants; ``below[v]``:
    that of its descendants alone (0 without any)."""
    reach, below = list(slb), [0] * m.n
    for v in reversed(m.topo):
        b = max((reach[w] for w in m.succs[v]), default=0)
        below[v] = b
        if b > reach[v]:
            reach[v] = b
    return reach, below

"""What a schedule built forward in time holds at its current moment: free units, free capacity
of the other resources, live memory, and the running ops. Shared by the order-following
schedulers of :mod:`opsched.heuristics.memory_list` (``in_order``) and
:mod:`opsched.heuristics.safe_list`.

The memory follows the liveness rule: an op allocates its output as it starts (unless nothing
keeps it: no reader, not a graph output, no time) and its workspace while it runs; a tensor
goes when its last reader ends; a graph-output flag keeps a tensor to the end only when nothing
reads it.

Examples
--------
>>> from opsched.ir import Op, OpGraph
>>> from opsched.problem import Machine, Problem
>>> g = OpGraph((Op("a", 2, output_bytes=4), Op("b", 1, deps=("a",), workspace_bytes=3)))
>>> s = Forward(Problem(g, Machine(units=2, memory_cap=8)))
>>> s.need(0), s.fits(0), s.start(0, 0.0), s.mem
(4, True, 0, 4)
>>> s.advance(), s.mem, s.need(1)
([0], 4, 3)
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

from opsched.problem import Problem

__all__ = ["Forward"]


class Forward:
    """Units, resources, memory and running ops of a forward-built schedule (module docstring).

    ``start(v, t)`` and ``finish(v)`` move the state; ``advance()`` moves the clock to the next
    end and finishes what ends there. ``on_finish`` (if set) is called with each finished op.
    """

    def __init__(self, problem: Problem) -> None:
        g = problem.graph
        n = g.num_ops
        self.dur: list[float] = g.durations.tolist()
        self.out_b: list[int] = g.output_sizes.tolist()
        self.ws_b: list[int] = g.workspace_sizes.tolist()
        self.left: list[int] = np.diff(g.succ_ptr).tolist()  # readers not yet finished
        self.is_out = [op.output and self.left[v] == 0 for v, op in enumerate(g.ops)]
        self.units: list[int] = g.demand_array("units").tolist()
        self.pp: list[int] = g.pred_ptr.tolist()
        self.pi: list[int] = g.pred_idx.tolist()
        k = problem.unit_pool or int(sum(self.units)) or 1
        self.free_units = list(range(k))
        self.limited = {
            r: c for r, c in problem.capacities.items() if c is not None and r != "units"
        }
        self.dem = {r: g.demand_array(r).tolist() for r in self.limited}
        self.free_res = dict(self.limited)
        self.held: dict[int, list[int]] = {}
        self.cap = problem.memory_cap
        self.mem = g.persistent_bytes
        self.t = 0.0
        self.done = [False] * n
        self.started = [False] * n
        self.n_done = 0
        self.starts = [0.0] * n
        self.unit_of = [-1] * n
        self.running: list[tuple[float, int]] = []
        self.on_finish: Callable[[int], None] | None = None
        # a zero-duration run that did not fit: (its first position, memory at which its best
        # prefix fits, completions then, completions to wait before the next try)
        self._zfail: tuple[int, int, int, int] | None = None

    def need(self, v: int) -> int:
        """Bytes ``v`` allocates as it starts: its output unless nothing keeps it (no reader,
        not an output, no time), its workspace while it runs."""
        holds = self.dur[v] > 0 or self.left[v] > 0 or self.is_out[v]
        return (self.out_b[v] if holds else 0) + (self.ws_b[v] if self.dur[v] > 0 else 0)

    def has_room(self, v: int) -> bool:
        """The units and other resources ``v`` demands are free (an op taking no time holds
        none)."""
        return self.dur[v] == 0 or (
            len(self.free_units) >= self.units[v]
            and all(self.dem[r][v] <= self.free_res[r] for r in self.limited)
        )

    def fits(self, v: int) -> bool:
        """``v``'s memory fits the cap now."""
        return self.cap is None or self.mem + self.need(v) <= self.cap

    def preds_done(self, v: int) -> bool:
        return all(self.done[u] for u in self.pi[self.pp[v] : self.pp[v + 1]])

    def start(self, v: int, t: float) -> int:
        """Start ``v`` at ``t`` (taking its units, resources and memory; an op that takes no
        time finishes at once, beside whatever runs); its unit index, -1 for none."""
        self.started[v] = True
        self.starts[v] = t
        self.mem += self.need(v)
        if self.dur[v] > 0:
            got = [heapq.heappop(self.free_units) for _ in range(self.units[v])]
            self.held[v] = got
            self.unit_of[v] = got[0] if self.units[v] == 1 else -1
            for r in self.limited:
                self.free_res[r] -= self.dem[r][v]
            heapq.heappush(self.running, (t + self.dur[v], v))
        else:
            if self.units[v] == 1:
                self.unit_of[v] = (self.free_units or [0])[0]
            self.finish(v)
        return self.unit_of[v]

    def finish(self, v: int) -> None:
        """``v`` ends: its units, resources and workspace come back, and its inputs whose last
        reader it was (and its own output, if nothing keeps it) are freed."""
        self.done[v] = True
        self.n_done += 1
        for u in self.held.pop(v, []):
            heapq.heappush(self.free_units, u)
        if self.dur[v] > 0:
            for r in self.limited:
                self.free_res[r] += self.dem[r][v]
            self.mem -= self.ws_b[v]
            if self.left[v] == 0 and not self.is_out[v]:
                self.mem -= self.out_b[v]
        for u in self.pi[self.pp[v] : self.pp[v + 1]]:
            self.left[u] -= 1
            if self.left[u] == 0 and not self.is_out[u]:
                self.mem -= self.out_b[u]
        if self.on_finish is not None:
            self.on_finish(v)

    def advance(self) -> list[int]:
        """Move the clock to the next end and finish every op that ends then."""
        self.t = self.running[0][0]
        ended = []
        while self.running and self.running[0][0] <= self.t:
            v = heapq.heappop(self.running)[1]
            self.finish(v)
            ended.append(v)
        return ended

    def zero_run(self, seq: list[int], i: int) -> tuple[list[int], int]:
        """Zero-duration ops of ``seq`` from ``i`` on (skipping those already started) to
        start at once: the longest run whose level, once each has run, fits the cap (a tensor
        written and read at the same instant lives over an empty interval), and the lowest
        level along the run (what memory must fall to for its best prefix to fit).
        """
        level, best = self.mem, 0
        lowest = self.mem
        run: list[int] = []
        gone: set[int] = set()
        spent: dict[int, int] = {}  # readers left per producer, after the run so far
        dur, pi, pp = self.dur, self.pi, self.pp
        for j in range(i, len(seq)):
            v = seq[j]
            if self.started[v]:
                continue
            if dur[v] > 0 or not all(self.done[u] or u in gone for u in pi[pp[v] : pp[v + 1]]):
                break
            level += self.need(v)
            gone.add(v)
            run.append(v)
            for u in pi[pp[v] : pp[v + 1]]:
                spent[u] = spent.get(u, self.left[u]) - 1
                if spent[u] == 0 and not self.is_out[u]:
                    level -= self.out_b[u]
            if self.cap is None or level <= self.cap:
                best = len(run)
            lowest = level if len(run) == 1 else min(lowest, level)
        return run[:best], lowest

    def rest_at_end(self, seq: list[int], i: int) -> list[int]:
        """The ops of ``seq`` from ``i`` on not started yet, to start together now, where
        nothing runs, all of them take no time, the first is ready and memory is within the
        cap: at the end of the schedule, what they write lives over an empty interval. Empty
        where that does not hold."""
        if self.running:
            return []
        rest = [v for v in seq[i:] if not self.started[v]]
        if not rest or any(self.dur[v] > 0 for v in rest) or not self.preds_done(rest[0]):
            return []
        return rest if self.cap is None or self.mem <= self.cap else []

    def try_zero_run(self, seq: list[int], i: int) -> list[int]:
        """:meth:`zero_run` from position ``i``, where a run that did not fit is tried again
        only once memory has fallen to where its best prefix would fit, when nothing runs, or
        after 1, 2, 4, ... more completions (what they finish may lengthen or lower the run).
        Trying it at every completion had made a wait beside many short ops quadratic."""
        z = self._zfail
        if z is not None and z[0] == i and self.running:
            _, fits_at, since, wait = z
            if self.mem > fits_at and self.n_done - since < wait:
                return []
        run, lowest = self.zero_run(seq, i)
        if run:
            self._zfail = None
        else:
            wait = 2 * z[3] if z is not None and z[0] == i else 1
            cap = self.cap if self.cap is not None else lowest
            self._zfail = (i, cap - (lowest - self.mem), self.n_done, wait)
        return run

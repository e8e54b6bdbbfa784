"""The schedule a CP-SAT solve starts from: its hint, and its makespan the horizon.

:func:`heuristic_start` takes the better of the two greedy schedules (b-level and FIFO
priorities). Under a memory cap that both break, it takes the memory-aware list schedule
(:func:`~opsched.heuristics.memory_list.memory_list`), which finds one whenever its one-unit
min-memory order fits the cap. Without a memory cap or named resources (``units`` only:
:func:`lists_apply`), and given ``seconds``, it goes on through the portfolio's list
schedules (:data:`~opsched.heuristics.portfolio.DEFAULT_CANDIDATES`: 32 of them, five
priority rules and ten perturbed b-levels each placed two ways, a random order and FIFO,
each improved by forward-backward justification), keeping the best, until one meets
``target`` (a proven lower bound) or the seconds run out. A best start one tick above
``target`` goes on with more perturbed b-levels, seed after seed, while the seconds (or
``max_tries``) allow: one more list schedule that meets the bound proves it optimal (STG 300
rand0052 on 8 processors: seed 185).

Why: the makespan's domain starts at the analysis's lower bound (critical path, work, the
ramp bounds with nested heads), and on most STG graphs that bound is the optimum; a start
that meets it is proven optimal before any search. On the 720 STG 300 pairs the bound
equals the optimum on 718 of the 719 known; the greedy schedule meets the bound on 499 of
them, the portfolio's best on 704, in 0.06 s per graph (docs/cpsat-model.md, "The starting
schedule"; ``benchmarks/bench_start.py --counts``).

Each candidate is checked before it is used: every edge respected and, at every start, no
resource (``units`` included) over its capacity, in the integer problem. A start that
failed the check would make a wrong horizon, which could cut off the optimum.

Examples
--------
STG ``rand0007`` (50 tasks) on 4 processors: its lower bound, 130, is the optimum; greedy
ends at 131, the b-level list schedule justified at 130:

>>> from opsched.importers import read_stg
>>> from opsched.datasets import dataset_path
>>> from opsched.problem import Machine
>>> p = Problem(read_stg(dataset_path("stg/50/rand0007.stg")), Machine(units=4))
>>> heuristic_start(p).makespan
131
>>> start = heuristic_start(p, seconds=None, target=130)
>>> start.makespan, start.source, start.tried
(130, 'list:list+fbi', 1)
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from opsched.heuristics.greedy import greedy
from opsched.heuristics.memory_list import memory_list
from opsched.liveness import peak_demand
from opsched.problem import Problem

if TYPE_CHECKING:
    from opsched.heuristics.portfolio import Candidate

__all__ = ["HINT_ORDER_SEARCHES", "HINT_SHARE", "LIST_OPS_PER_SECOND", "Start",
           "deterministic_tries", "feasible_starts", "heuristic_start", "lists_apply"]  # fmt: skip

#: Min-memory order searches for the memory-aware hint, tried in turn until one gives a
#: schedule under the cap: one beam run (tens of ms), then the exact search capped at 20,000
#: states (falls back to the beam beyond; about half a second at most).
HINT_ORDER_SEARCHES: tuple[dict[str, Any], ...] = (
    {"method": "beam", "rounds": 1},
    {"method": "auto", "max_states": 20_000},
)

#: Most of the time limit the list schedules beyond greedy may take (they stop sooner once
#: one meets the lower bound).
HINT_SHARE = 0.05

#: Ops a second the list schedules place, at the least (measured here: 135,000-180,000 on
#: layered graphs of 1,000-50,000 ops, all 32 of them); a deterministic solve, which does
#: not look at the clock, runs as many as ``HINT_SHARE`` of its time limit holds at this rate.
LIST_OPS_PER_SECOND = 100_000


def deterministic_tries(num_ops: int, time_limit: float) -> int:
    """List schedules a deterministic solve tries: a count, the same on every machine.

    >>> deterministic_tries(300, 10.0), deterministic_tries(10_000, 10.0)
    (166, 5)
    """
    return int(HINT_SHARE * time_limit * LIST_OPS_PER_SECOND / max(1, num_ops))


@dataclass(frozen=True)
class Start:
    """A starting schedule in ticks: its makespan (the horizon) and start times (the hint,
    None when no heuristic found a schedule; the makespan is then the total work)."""

    makespan: int
    starts: list[int] | None
    source: str  #: the heuristic that made it, e.g. ``"greedy:b-level"``
    tried: int = 0  #: list schedules tried beyond greedy
    seconds: float = field(default=0.0, compare=False)  #: time spent on them

    def to_info(self) -> dict[str, Any]:
        return {"makespan_ticks": self.makespan, "from": self.source, "tried": self.tried,
                "seconds": round(self.seconds, 4)}  # fmt: skip


def heuristic_start(
    tick: Problem,
    memory_order: np.ndarray | None = None,
    seconds: float | None = 0.0,
    target: int = 0,
    max_tries: int | None = None,
    deadline: float | None = None,
) -> Start:
    """The best starting schedule of the integer problem ``tick`` (see the module docstring).

    ``seconds``: most time for the list schedules beyond greedy (0: none; None: no clock, so
    that a deterministic solve gets the same start on every machine); ``max_tries``: most
    list schedules (None: all 32); ``target``: stop as soon as a schedule ends by it;
    ``deadline``: a :func:`time.perf_counter` time at which the memory-aware fallback's order
    searches stop with the best order found by then (None: their state counts alone).
    """
    best = Start(int(tick.graph.durations.sum()), None, "none")
    t0 = time.perf_counter()
    for prio in ("b-level", "fifo"):
        s = greedy(tick, prio)
        if s.has_schedule and s.makespan is not None and s.makespan <= best.makespan:
            best = Start(int(s.makespan), [int(o.start) for o in s.ops], f"greedy:{prio}")
    if best.starts is None and tick.memory_cap is not None:
        # only when greedy dead-ends: the order the one-unit check found, else a bounded
        # search for one (the default takes seconds at 50-120 ops): one beam run, then a
        # capped exact one
        tries: list[dict[str, Any]] = [{"order_options": o} for o in HINT_ORDER_SEARCHES]
        if memory_order is not None:
            tries.insert(0, {"order": memory_order})
        for kwargs in tries:
            s = memory_list(tick, deadline=deadline, **kwargs)
            if s.has_schedule and s.makespan is not None:
                return Start(int(s.makespan), [int(o.start) for o in s.ops], "memory_list")
        return best
    if not lists_apply(tick) or seconds == 0 or max_tries == 0 or best.makespan <= target:
        return best
    # a list schedule takes about as long as a greedy one: none is started that would end
    # past the seconds, judged by the slowest so far (a large graph gets none at all)
    each = (time.perf_counter() - t0) / 2
    return _list_schedules(tick, best, seconds, target, each, max_tries)


def lists_apply(tick: Problem) -> bool:
    """Whether :func:`heuristic_start` tries the list schedules on ``tick``: without a memory
    cap (they do not respect one) and with no resource but ``units`` (on PSPLIB J30 they
    proved nothing more and cost time: docs/cpsat-model.md)."""
    from opsched.heuristics.listsched import units_only

    return tick.memory_cap is None and units_only(tick)


def _candidates(limited: bool) -> Iterator[Candidate]:
    """The portfolio's list schedules, then (where ``limited``: a clock or a count stops
    them) more perturbed b-levels, seed after seed, for a start one tick above the bound."""
    from opsched.heuristics.portfolio import DEFAULT_CANDIDATES, Candidate

    yield from DEFAULT_CANDIDATES
    if limited:
        first = 1 + max(c.seed for c in DEFAULT_CANDIDATES if c.seed is not None)
        for seed in itertools.count(first):
            for placement in ("earliest", "insertion"):
                yield Candidate("perturbed", placement, seed=seed)


def _list_schedules(
    tick: Problem, best: Start, seconds: float | None, target: int, each: float,
    max_tries: int | None,
) -> Start:  # fmt: skip
    """``best`` improved by the portfolio's list schedules, within ``seconds`` and
    ``max_tries``; ``each``: the expected time of one. Past the portfolio's own, the
    perturbed ones go on only while the best is one tick above ``target``."""
    from opsched.heuristics.portfolio import DEFAULT_CANDIDATES

    t0 = time.perf_counter()
    tried = 0
    limited = seconds is not None or max_tries is not None
    for cand in _candidates(limited):
        t = time.perf_counter()
        if seconds is not None and t - t0 + each > seconds:
            break
        if max_tries is not None and tried >= max_tries:
            break
        if tried >= len(DEFAULT_CANDIDATES) and best.makespan > target + 1:
            break
        tried += 1
        s = cand.run(tick)
        each = max(each, time.perf_counter() - t)
        if not s.has_schedule or s.makespan is None or s.makespan >= best.makespan:
            continue
        starts = [round(o.start) for o in s.ops]
        if feasible_starts(tick, starts):
            # the horizon from the starts just checked, so that the two cannot disagree
            durations = tick.graph.durations
            end = max(a + round(d) for a, d in zip(starts, durations, strict=True))
            best = Start(end, starts, f"list:{s.solver}")
            if best.makespan <= target:
                break
    return Start(best.makespan, best.starts, best.source, tried, time.perf_counter() - t0)


def feasible_starts(tick: Problem, starts: list[int]) -> bool:
    """Whether integer ``starts`` respect every edge and every resource capacity of ``tick``
    (``units`` included; the memory cap is not checked).

    >>> from opsched.demo import seed_problem
    >>> p = seed_problem(units=1)
    >>> feasible_starts(p, [0, 1, 2, 3, 4, 5, 6]), feasible_starts(p, [0] * 7)
    (True, False)
    """
    g = tick.graph
    s = np.asarray(starts, dtype=np.int64)
    d = np.rint(g.durations).astype(np.int64)
    if s.shape != d.shape or (s < 0).any():
        return False
    end = s + d
    child = np.repeat(np.arange(g.num_ops), np.diff(g.pred_ptr))
    if (end[g.pred_idx] > s[child]).any():
        return False
    caps = dict(tick.capacities)
    for name, cap in caps.items():
        if cap is None:
            continue
        if peak_demand(s, end, g.demand_array(name).astype(np.int64)) > cap:
            return False
    return True

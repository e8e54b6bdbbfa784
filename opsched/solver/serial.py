"""Deciding a memory cap on one unit, which decides it on any number of units.

Take any valid schedule, on any number of units, and run its ops one at a time in the order
of their starts (among equal starts, zero-duration ops first, then in topological order).
This never raises the peak. While op ``v`` runs in that order, the memory holds ``v``'s
output and workspace and the output of every op ``u`` run before it that has a reader still
to come (or that is a graph output kept to the end). In the original schedule, just after
``v`` starts, ``u`` has started too (its start is no later) and that reader has not ended:
it starts no earlier than ``v``, and if it starts exactly then it has a positive duration
(zero-duration ops come first among equal starts). So each step of the one-unit order is
bounded by a moment of the original schedule, and:

* the least peak over one-unit orders is the least peak over all schedules, on any number of
  units, with any resources (one op at a time never exceeds a capacity a single op fits);
* a cap that no one-unit order meets is met by no schedule at all;
* a one-unit order within the cap is itself a schedule within it (slow, but a proof that
  one exists, and a start for the search).

:func:`serial_cap_check` answers the decision question with the exhaustive search over
down-sets of :mod:`opsched.heuristics.memory` (only orders whose peak stays within the cap are
expanded, so a tight cap prunes hard), after one quick beam run that finds a fitting order
when the cap is loose. The exhaustive search is bounded by a state count, not by time, so a
deterministic solve stays deterministic; :func:`serial_state_budget` turns a time share into
states.

Measured (``python benchmarks/bench_memory.py --fractions 0.6 --per-graph``, random layered
graphs of 20-60 ops at 60 % caps, one run): all 25 caps decided; the check refuted 10 of them
(2 that CP-SAT alone had left open after 10 s), each solve ending within 0.10 s and 12,039
states; the memory bound, forced orders and the search refuted 2, 1 and 3 more.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from opsched.heuristics.listsched import units_only
from opsched.heuristics.memory.common import MemoryModel, order_schedule
from opsched.heuristics.memory.layered import layered_search
from opsched.heuristics.memory.search import min_memory_order_result
from opsched.heuristics.memory_list import in_order
from opsched.ir.graph import OpGraph, require_graph
from opsched.problem import Problem
from opsched.units import format_bytes, parse_bytes

__all__ = [
    "SERIAL_STATES_PER_SECOND",
    "LeastPeakStart",
    "SerialCheck",
    "least_peak_start",
    "serial_cap_check",
    "serial_state_budget",
]

#: States of the exhaustive order search per second of budget. Measured here at 80,000-
#: 100,000 per second on layered graphs of 30-60 ops (2-core machine, one thread); the
#: lower figure leaves room for slower machines and larger graphs.
SERIAL_STATES_PER_SECOND = 50_000

#: Beam width of the quick first run.
_BEAM_WIDTH = 32


@dataclass(frozen=True)
class SerialCheck:
    """What the one-unit search found about a memory cap.

    Attributes
    ----------
    fits
        True: ``order`` runs within the cap; False: proven that no schedule, on any number of
        units, does; None: the state budget ran out first.
    order
        A one-unit order within the cap (op indices), when ``fits``.
    peak
        That order's peak (bytes, persistent included).
    states
        Search states kept, both runs together.
    """

    fits: bool | None
    order: np.ndarray | None
    peak: int | None
    states: int

    def describe(self, cap: int) -> str:
        """One sentence for a refuted cap."""
        how = (
            f"exhaustive search, {self.states:,} states"
            if self.states
            else "the memory lower bound is above it"
        )
        return (
            f"no one-unit order stays within {format_bytes(cap)} ({cap} B) ({how}), and "
            f"running any schedule's ops one at a time never raises its peak"
        )


def serial_state_budget(seconds: float) -> int:
    """States the exhaustive search may keep in about ``seconds`` (at least 2,000)."""
    return max(2_000, int(seconds * SERIAL_STATES_PER_SECOND))


def serial_cap_check(graph: OpGraph, cap: int, *, max_states: int = 100_000) -> SerialCheck:
    """Is there a one-unit order of ``graph`` whose peak is at most ``cap`` bytes?

    By the argument in the module docstring the answer is also whether *any* schedule fits
    the cap. A quick beam run comes first; if it finds no order within the cap, the
    exhaustive search over down-sets decides, giving up after ``max_states`` kept states.

    Parameters
    ----------
    graph
        The op graph (sizes in bytes; persistent bytes count against the cap).
    cap
        The memory cap in bytes.
    max_states
        Budget of the exhaustive search (see :func:`serial_state_budget`).

    Examples
    --------
    Two producer/consumer pairs with 8-byte tensors: back to back they peak at 8 bytes,
    so 8 fits and 7 does not, however many units run them.

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("a", 1, output_bytes=8), Op("b", 1, output_bytes=8),
    ...              Op("c", 1, deps=("a",)), Op("d", 1, deps=("b",))))
    >>> serial_cap_check(g, 8).fits, serial_cap_check(g, 7).fits
    (True, False)
    """
    require_graph(graph, "serial_cap_check")
    cap = parse_bytes(cap)  # "2GiB" as Machine takes it; a negative or unreadable size raises
    m = MemoryModel.of(graph)
    states = 0
    if cap < m.bound:  # the search would stop at once; say so without it
        return SerialCheck(False, None, None, 0)
    for width, budget in ((_BEAM_WIDTH, cap), (None, None)):
        r = layered_search(
            m,
            width=width,
            incumbent=cap + 1,
            budget=budget,
            max_states=max_states if width is None else None,
        )
        states += r.states
        if r.order is not None and r.peak is not None:
            return SerialCheck(True, np.asarray(r.order, dtype=np.int64), int(r.peak), states)
        if r.complete and not r.aborted:  # exhaustive below cap + 1 and nothing found
            return SerialCheck(False, None, None, states)
    return SerialCheck(None, None, None, states)


@dataclass(frozen=True)
class LeastPeakStart:
    """Where a least-peak solve can start: the best one-unit peak and a schedule reaching it.

    ``peak`` is the peak of the best one-unit order found (in the problem's units), ``proven``
    whether no order (hence no schedule) has a lower one; ``hint`` the start times of a
    schedule on the problem's units with that peak, or None when it breaks the memory cap.
    """

    peak: int
    proven: bool
    hint: list[int] | None


def least_peak_start(problem: Problem, *, max_states: int = 100_000) -> LeastPeakStart:
    """The best one-unit order of ``problem``'s graph, as a floor and a start for its peak.

    Meant for the integer problem CP-SAT solves (durations in ticks): the hint's start times
    are integers.

    The order comes from :func:`~opsched.heuristics.memory.min_memory_order_result` (its
    exhaustive part kept to ``max_states`` states). By the argument in the module docstring a
    proven least one-unit peak is the least peak of any schedule. The hint runs the order on
    the problem's units without exceeding its peak
    (:func:`~opsched.heuristics.memory_list.in_order`), or back to back where ops demand more
    than a unit or other limited resources (each op alone fits them, or the problem has no
    schedule at all).

    Examples
    --------
    >>> from opsched.ir import Op, OpGraph
    >>> from opsched.problem import Machine
    >>> g = OpGraph((Op("a", 1, output_bytes=8), Op("b", 1, output_bytes=8),
    ...              Op("c", 1, deps=("a",)), Op("d", 1, deps=("b",))))
    >>> s = least_peak_start(Problem(g, Machine(units=2)))
    >>> s.peak, s.proven, s.hint
    (8, True, [0, 2, 1, 3])
    """
    g = problem.graph
    r = min_memory_order_result(g, max_states=max_states)
    cap = problem.memory_cap
    if cap is not None and r.peak > cap:
        return LeastPeakStart(r.peak, r.optimal, None)
    s = in_order(problem.with_machine(memory_cap=r.peak), r.order) if units_only(problem) else None
    if s is None or not s.has_schedule:
        s = order_schedule(problem.with_machine(memory_cap=None), r.order, solver="", t0=0.0)
    return LeastPeakStart(r.peak, r.optimal, [int(o.start) for o in s.ops])

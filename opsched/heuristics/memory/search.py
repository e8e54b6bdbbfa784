"""opsched's memory-aware single-unit order: exact search when it fits, beam search otherwise.

:func:`min_memory_order_result` first runs the compiler baselines (Inductor's four orders and
XLA's three, see :mod:`~opsched.heuristics.memory.inductor` and
:mod:`~opsched.heuristics.memory.xla`) and keeps the best as the incumbent, so the answer is
never worse than any of them. Then it searches for a strictly better order with
:func:`~opsched.heuristics.memory.layered.layered_search`:

* ``method="exact"``: dynamic programming over scheduled sets (down-sets), merging paths that
  reach the same set; with the bound and free-first rules it proves the optimum on narrow
  graphs (tens of ops, more when the graph is chain-like);
* ``method="beam"``: the same layers cut to the ``width`` best states;
* ``method="auto"`` (default): exact when the graph has at most ``exact_max_ops`` ops and the
  search stays within ``max_states`` states, otherwise beam, and on graphs of more than
  ``beam_max_ops`` ops (:data:`BEAM_MAX_OPS`) no search: the best baseline.

The result says whether the peak is proven optimal: when the exhaustive search finished, or
when the peak meets the lower bound :func:`opsched.analysis.min_memory_bound`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opsched.analysis.topo import topo_indices
from opsched.errors import ProblemError
from opsched.heuristics.memory.common import MemoryModel, as_graph, order_peak, order_schedule
from opsched.heuristics.memory.inductor import inductor_orders
from opsched.heuristics.memory.layered import layered_search
from opsched.heuristics.memory.xla import xla_orders
from opsched.ir.graph import OpGraph
from opsched.problem import Problem, require_problem
from opsched.schedule import Schedule

__all__ = [
    "MemorySearchResult",
    "min_memory",
    "min_memory_order",
    "min_memory_order_result",
]

METHODS = ("auto", "exact", "beam")

#: Largest graph on which ``method="auto"`` runs the beam after the baselines. The beam's
#: time grows with the square of the ops (each of its ``n`` layers copies ``width`` sets
#: of ``n`` bits) while its gain shrinks: on random layered graphs
#: (``zoo.generators.layered``) it lowered the best baseline's peak by 2.9 % at 10,000 ops
#: (5.3 s), 0.4 % at 40,000 (29 s) and not at all at 100,000 (38 s, the baselines 2.5 s), so
#: above this the baselines' best is the answer and ``memory-list`` stays near-linear
#: (``python benchmarks/bench_memory_scale.py --auto``).
BEAM_MAX_OPS = 50_000


@dataclass(frozen=True)
class MemorySearchResult:
    """An order with its peak and how it was found.

    Attributes
    ----------
    order
        Op indices in run order.
    peak
        Its peak memory (bytes, persistent included), by opsched's liveness rule.
    optimal
        True when no order has a lower peak (proven by the exhaustive search or the bound).
    method
        ``"exact"``, ``"beam"`` or ``"seed:NAME"`` (a baseline was not beaten; ``NAME`` is
        ``inductor-lpmf``, ``xla-list``, ...).
    lower_bound
        :func:`opsched.analysis.min_memory_bound` of the graph.
    states
        States the search kept.
    seeds
        Peak of every baseline order tried, by name.
    """

    order: np.ndarray
    peak: int
    optimal: bool
    method: str
    lower_bound: int
    states: int = 0
    seeds: dict[str, int] = field(default_factory=dict)


def min_memory_order_result(
    problem_or_graph: Problem | OpGraph,
    *,
    method: str = "auto",
    width: int = 32,
    exact_max_ops: int = 120,
    max_states: int = 200_000,
    rounds: int | None = None,
    seed: bool = True,
    beam_max_ops: int = BEAM_MAX_OPS,
    deadline: float | None = None,
) -> MemorySearchResult:
    """The lowest-peak single-unit order opsched finds, with how good it is known to be.

    Parameters
    ----------
    problem_or_graph
        The graph (or a problem, whose graph is used).
    method
        ``"auto"``, ``"exact"`` or ``"beam"`` (see the module docstring). ``"exact"`` falls
        back to the beam (and says so in ``method``) when it runs over ``max_states``.
    width
        Beam width: states kept per layer. Time grows about linearly with it.
    exact_max_ops
        ``"auto"`` tries the exact search only on graphs up to this size.
    max_states
        States the exact search may keep before giving up.
    rounds
        Beam runs: the first aims just below the best baseline's peak, the next ones bisect
        the target between the lower bound and the best peak found (a missed target raises
        the low end). Each run keeps only orders strictly better than the best so far.
        Default: 3 up to 2,000 ops, 1 above.
    beam_max_ops
        ``"auto"`` skips the beam (and keeps the best baseline) on graphs of more ops than
        this (see :data:`BEAM_MAX_OPS`; ``width`` and ``rounds`` then do nothing);
        ``method="beam"`` always runs it, and so does ``seed=False`` (no baseline to keep).
    seed
        Start from the best compiler baseline (always at least as good as each of them);
        without it the search starts from no incumbent.
    deadline
        A :func:`time.perf_counter` time at which the searches stop: the best order found by
        then is returned (a baseline, or a topological order if none was tried).

    Examples
    --------
    XLA's documented counter-example (see ``tests/heuristics/memory/test_xla.py``), with B's
    output of 3: XLA's List scheduler peaks at 6, the optimum is 5.

    >>> from opsched.ir import Op, OpGraph
    >>> g = OpGraph((Op("A", 1, output_bytes=1), Op("B", 1, deps=("A",), output_bytes=3),
    ...     Op("C", 1, deps=("B",), output_bytes=1), Op("D", 1, deps=("A",), output_bytes=1),
    ...     Op("E", 1, deps=("A",), output_bytes=1),
    ...     Op("F", 1, deps=("D", "E"), output_bytes=2),
    ...     Op("G", 1, deps=("C", "F"), output_bytes=1, output=True)))
    >>> r = min_memory_order_result(g)
    >>> r.peak, r.optimal, r.seeds["xla-list"]
    (5, True, 6)
    """
    if method not in METHODS:
        raise ProblemError(f"unknown memory-search method {method!r}; use {', '.join(METHODS)}")
    if width < 1:
        raise ProblemError(f"beam width must be >= 1, got {width}")
    g = as_graph(problem_or_graph)
    m = MemoryModel.of(g)
    seeds: dict[str, int] = {}
    best_name, best_order, best_peak = "none", None, None
    if seed:
        cands = {f"inductor-{k}": v for k, v in inductor_orders(g).items()}
        cands.update({f"xla-{k}": v for k, v in xla_orders(g).items()})
        seeds = {k: v[1] for k, v in cands.items()}
        best_name = min(cands, key=lambda k: cands[k][1])
        best_order, best_peak = cands[best_name]
    lower = m.bound
    found: tuple[np.ndarray, int, str] | None = None  # best order the search found
    if best_order is not None and best_peak is not None:
        found = (best_order, best_peak, f"seed:{best_name}")
        # a baseline at the bound is optimal; on a large graph the beam would cost more
        # than it gains
        if best_peak <= lower or (method == "auto" and m.n > beam_max_ops):
            return MemorySearchResult(best_order, best_peak, best_peak <= lower, found[2],
                                      lower, 0, seeds)  # fmt: skip
    hi = best_peak if best_peak is not None else _no_incumbent(m)
    lo, optimal = lower, False
    states = 0
    # beam under a budget: first just below the incumbent, then bisecting towards the bound
    if rounds is None:
        rounds = 3 if m.n <= 2000 else 1
    for round_ in range(max(1, rounds)):
        budget = hi - 1 if round_ == 0 else (lo + hi) // 2
        if budget < lo:
            break
        r = layered_search(m, width=width, incumbent=hi, budget=budget, deadline=deadline)
        states += r.states
        if r.aborted:  # out of time
            break
        if r.order is not None and r.peak is not None:
            order = np.asarray(r.order, dtype=np.int64)
            hi = _peak(g, order, r.peak)
            found = (order, hi, "exact" if r.complete else "beam")
        if r.complete:  # no layer overflowed: exhaustive below the incumbent, so optimal
            optimal = True
            break
        if r.order is None or hi > budget:
            lo = budget + 1  # the budget was missed (not a proof: the beam is partial)
    if found is None:  # out of time before the first beam ended, and no baseline
        order = topo_indices(g)
        found = (order, _peak(g, order, None), "topological")
    optimal = optimal or found[1] <= lower
    use_exact = method == "exact" or (method == "auto" and m.n <= exact_max_ops)
    if use_exact and not optimal:
        r = layered_search(
            m, width=None, incumbent=found[1], max_states=max_states, deadline=deadline
        )
        states += r.states
        if not r.aborted:
            optimal = True
            if r.order is not None:
                order = np.asarray(r.order, dtype=np.int64)
                found = (order, _peak(g, order, r.peak), "exact")
    return MemorySearchResult(found[0], found[1], optimal, found[2], lower, states, seeds)


def _no_incumbent(m: MemoryModel) -> int:
    """A peak no order can reach: more than everything allocated at once."""
    return m.persistent + sum(m.out) + sum(m.ws) + 1


def _peak(g: OpGraph, order: np.ndarray, claimed: int | None) -> int:
    """The order's peak by the NumPy step model (a cross-check of the search's bookkeeping)."""
    peak = order_peak(g, order)
    if claimed is not None and claimed != peak:  # pragma: no cover - would be a bug
        raise AssertionError(f"memory search peak {claimed} != recomputed {peak}")
    return peak


def min_memory_order(problem_or_graph: Problem | OpGraph, **options: Any) -> np.ndarray:
    """The order of :func:`min_memory_order_result` (same options).

    Examples
    --------
    >>> from opsched.demo import seed_graph
    >>> from opsched.heuristics.memory.common import order_peak
    >>> g = seed_graph()
    >>> order_peak(g, min_memory_order(g)) <= order_peak(g, range(g.num_ops))
    True
    """
    return min_memory_order_result(problem_or_graph, **options).order


def min_memory(
    problem: Problem,
    *,
    method: str = "auto",
    width: int = 32,
    exact_max_ops: int = 120,
    max_states: int = 200_000,
    rounds: int | None = None,
    beam_max_ops: int = BEAM_MAX_OPS,
    **_: Any,
) -> Schedule:
    """Serial schedule (unit 0) of opsched's minimum-peak-memory order.

    ``info`` holds the method, whether the peak is proven optimal (``peak_optimal``), the
    lower bound, the states searched and every baseline's peak. Status FEASIBLE (the makespan
    is not optimised), or UNKNOWN without a schedule when even this order peaks above the
    memory cap (``info["reason"]``; with ``peak_optimal`` true no order fits the cap).

    Examples
    --------
    >>> from opsched.demo import seed_problem
    >>> s = min_memory(seed_problem(units=1))
    >>> s.status.value, s.info["peak_optimal"], s.peak_memory == s.info["peak_lower_bound"]
    ('FEASIBLE', True, True)
    """
    require_problem(problem, "min_memory")
    t0 = time.perf_counter()
    name = "memory-beam" if method == "beam" else "min-memory"
    none = Schedule.if_impossible(problem, solver=name, t0=t0)
    if none is not None:  # a proof: no order to search for (the search took seconds to fail)
        return none
    r = min_memory_order_result(
        problem, method=method, width=width, exact_max_ops=exact_max_ops,
        max_states=max_states, rounds=rounds, beam_max_ops=beam_max_ops,
    )  # fmt: skip
    info = {
        "method": r.method,
        "peak_optimal": r.optimal,
        "peak_lower_bound": r.lower_bound,
        "states": r.states,
        "seeds": r.seeds,
    }
    return order_schedule(problem, r.order, solver=name, t0=t0, info=info)

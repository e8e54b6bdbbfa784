"""Tests of opsched's minimum-peak-memory search (exact DP over down-sets and beam)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from opsched.analysis import min_memory_bound
from opsched.errors import ProblemError
from opsched.heuristics.memory import (
    MemoryModel,
    inductor_orders,
    min_memory,
    min_memory_order,
    min_memory_order_result,
    order_peak,
    xla_orders,
)
from opsched.heuristics.memory.layered import layered_search
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Status
from opsched.solver import solve_cpsat
from opsched.solver.cpsat import Params
from opsched.validate import validate
from opsched.zoo.generators import layered

from .helpers import brute_force_peak, random_graph


def is_topological(g: OpGraph, order: np.ndarray) -> bool:
    pos = {v: i for i, v in enumerate(order.tolist())}
    return sorted(pos) == list(range(g.num_ops)) and all(
        pos[g.index(d)] < pos[g.index(op.name)] for op in g.ops for d in op.deps
    )


def test_exact_equals_brute_force_on_random_tiny_graphs() -> None:
    rng = random.Random(2024)
    for _ in range(300):
        g = random_graph(rng, rng.randint(1, 7))
        best = brute_force_peak(g)
        r = min_memory_order_result(g)
        assert r.peak == best and r.optimal, g.to_dict()
        assert order_peak(g, r.order) == best and is_topological(g, r.order)
        # the search alone, from no incumbent, with no seed orders
        raw = layered_search(MemoryModel.of(g), width=None, incumbent=10**9)
        assert raw.peak == best and raw.complete
        assert min_memory_order_result(g, seed=False).peak == best


def test_exact_equals_brute_force_without_zero_durations() -> None:
    rng = random.Random(99)
    for _ in range(40):
        g = random_graph(rng, 8, zero_dur=False)
        assert min_memory_order_result(g, method="exact").peak == brute_force_peak(g)


def test_hand_worked_pairs() -> None:
    # two producer/consumer pairs of 8 B: finishing a pair before starting the other peaks
    # at 8 B; the file order (a, b, c, d) holds both tensors at once (16 B).
    g = OpGraph(
        (
            Op("a", 1, output_bytes=8),
            Op("b", 1, output_bytes=8),
            Op("c", 1, deps=("a",)),
            Op("d", 1, deps=("b",)),
        )
    )
    assert order_peak(g, [0, 1, 2, 3]) == 16
    r = min_memory_order_result(g)
    assert r.peak == 8 and r.optimal
    assert r.order.tolist() in ([0, 2, 1, 3], [1, 3, 0, 2])


def test_hand_worked_diamond_with_workspace() -> None:
    # s (2 B) feeds x (6 B, workspace 4) and y (1 B); j reads x and y.
    # s x y j: 2; 2+6+4 = 12; 2+6+1 = 9; 6+1 = 7 -> 12
    # s y x j: 2; 3; 2+1+6+4 = 13; 7 -> 13. The optimum is 12, x first.
    g = OpGraph(
        (
            Op("s", 1, output_bytes=2),
            Op("x", 1, deps=("s",), output_bytes=6, workspace_bytes=4),
            Op("y", 1, deps=("s",), output_bytes=1),
            Op("j", 1, deps=("x", "y")),
        )
    )
    r = min_memory_order_result(g)
    assert r.peak == 12 and r.order.tolist() == [0, 1, 2, 3] and r.optimal


def test_ours_never_worse_than_any_baseline() -> None:
    rng = random.Random(8)
    graphs = [random_graph(rng, rng.randint(5, 60)) for _ in range(25)]
    graphs += [layered(n, seed=s) for n, s in [(40, 0), (80, 1), (150, 2)]]
    for g in graphs:
        baselines = {**inductor_orders(g), **xla_orders(g)}
        for method in ("auto", "beam"):
            r = min_memory_order_result(g, method=method, width=8, max_states=5000)
            assert is_topological(g, r.order)
            assert r.peak == order_peak(g, r.order)
            assert all(r.peak <= p for _, p in baselines.values()), (g.name, method)
            assert r.peak >= r.lower_bound


def test_search_beats_the_compiler_baselines_on_layered_graphs() -> None:
    # measured: on each of these the exact search is strictly better than all seven orders
    for n, s in ((20, 0), (20, 3), (25, 1)):
        g = layered(n, seed=s)
        r = min_memory_order_result(g)
        best_baseline = min(r.seeds.values())
        assert r.optimal and r.peak < best_baseline


INDEPENDENT = Params(serial_check=False)


def test_exact_matches_cpsat() -> None:
    for s in range(2):
        g = layered(12, seed=s)
        problem = Problem(g, Machine(units=1))
        # without the one-unit search, which would make CP-SAT start from our answer
        cp = solve_cpsat(problem, "peak_memory", time_limit=20, params=INDEPENDENT)
        assert cp.status is Status.OPTIMAL
        r = min_memory_order_result(g)
        assert r.optimal and r.peak == cp.peak_memory


def test_scheduler_schedules_are_valid_and_report_how() -> None:
    rng = random.Random(4)
    for _ in range(20):
        g = random_graph(rng, rng.randint(1, 25))
        problem = Problem(g, Machine(units=1))
        s = min_memory(problem)
        assert s.status is Status.FEASIBLE and validate(problem, s).valid
        assert s.peak_memory == order_peak(g, min_memory_order(g))
        assert s.info["peak_lower_bound"] <= s.peak_memory
        assert set(s.info["seeds"]) == {
            "inductor-baseline", "inductor-lpmf", "inductor-bfs", "inductor-dfs",
            "xla-list", "xla-dfs", "xla-postorder",
        }  # fmt: skip


def test_memory_cap() -> None:
    g = layered(16, seed=1)  # the least peak lies above every bound: the search must tell
    best = min_memory_order_result(g).peak
    assert min_memory_bound(g)[0] < best - 1
    ok = min_memory(Problem(g, Machine(units=1, memory_cap=best)))
    assert ok.status is Status.FEASIBLE and ok.peak_memory == best
    capped = Problem(g, Machine(units=1, memory_cap=best - 1))
    s = min_memory(capped)
    assert s.status is Status.UNKNOWN and not s.has_schedule
    assert s.info["peak_optimal"] and "over the memory cap" in s.info["reason"]


def test_memory_cap_below_the_cut_bound() -> None:
    g = layered(16, seed=2)  # here the minimum-cut bound is the least peak itself
    r = min_memory_order_result(g)
    assert r.optimal and r.lower_bound == r.peak > min_memory_bound(g, cut=False)[0]
    p = Problem(g, Machine(units=1, memory_cap=r.peak - 1))
    assert p.infeasibility_reason() is None  # the cheap check the heuristics make
    assert f"is below the 41.0MiB ({r.peak} B) that op " in (p.infeasibility_reason(cut=True) or "")
    s = min_memory(p)
    assert s.status is Status.UNKNOWN and not s.has_schedule  # a heuristic never claims more
    assert s.info["peak_optimal"] and "over the memory cap" in s.info["reason"]


def test_large_graph_beam() -> None:
    g = layered(2000, seed=1)
    r = min_memory_order_result(g, width=8, rounds=1)
    assert is_topological(g, r.order) and r.peak == order_peak(g, r.order)
    assert r.peak <= min(r.seeds.values()) and not r.optimal


def test_bad_options() -> None:
    g = layered(5, seed=0)
    with pytest.raises(ProblemError, match="unknown memory-search method"):
        min_memory_order_result(g, method="dp")
    with pytest.raises(ProblemError, match="width must be >= 1"):
        min_memory_order_result(g, width=0)


def test_exact_gives_up_over_max_states() -> None:
    g = layered(30, seed=1)
    r = layered_search(MemoryModel.of(g), width=None, incumbent=10**15, max_states=100)
    assert r.aborted and r.order is None
    # the search then falls back to the beam and says the peak is not proven
    res = min_memory_order_result(g, method="exact", max_states=100)
    assert res.method != "exact" and not res.optimal


def test_auto_keeps_the_best_baseline_above_beam_max_ops() -> None:
    # layered(20, seed=0): the search beats all seven baselines (above); with the beam cut
    # off by size, auto returns the best baseline and says so, and "beam" still searches
    g = layered(20, seed=0)
    searched = min_memory_order_result(g)
    r = min_memory_order_result(g, beam_max_ops=19)
    best = min(r.seeds, key=lambda k: r.seeds[k])
    assert r.method == f"seed:{best}" and r.states == 0 and not r.optimal
    assert r.peak == r.seeds[best] == order_peak(g, r.order) > searched.peak
    assert is_topological(g, r.order)
    beam = min_memory_order_result(g, method="beam", beam_max_ops=19)
    assert beam.states > 0 and beam.peak < r.peak
    assert min_memory_order_result(g, beam_max_ops=20).peak == searched.peak
    # the schedulers pass it on
    s = min_memory(Problem(g, Machine(units=1)), beam_max_ops=19)
    assert s.info["method"] == r.method and s.peak_memory == r.peak


def test_memory_model_is_built_once_per_graph() -> None:
    g = layered(12, seed=2)
    assert MemoryModel.of(g) is MemoryModel.of(g)
    h = layered(12, seed=2)  # an equal graph is another object: its own model
    assert MemoryModel.of(h) is not MemoryModel.of(g)
    assert MemoryModel.of(h).kept == MemoryModel.of(g).kept


def test_deadline_stops_the_search_with_the_best_order_so_far() -> None:
    import time

    g = layered(50, seed=0)
    past = time.perf_counter()  # already passed: no layered search runs
    r = min_memory_order_result(g, deadline=past)
    assert r.method.startswith("seed:")
    assert r.peak == min(r.seeds.values()) == order_peak(g, r.order)
    bare = min_memory_order_result(g, deadline=past, seed=False)  # nothing to keep
    assert bare.method == "topological" and bare.peak == order_peak(g, bare.order)
    assert sorted(bare.order.tolist()) == list(range(g.num_ops))
    out = layered_search(MemoryModel.of(g), width=8, incumbent=10**18, deadline=past)
    assert out.aborted and out.order is None

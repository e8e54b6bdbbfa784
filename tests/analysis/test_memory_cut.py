"""The minimum-cut memory bound: below every schedule's peak (brute force), above the simple
bound, exact on hand-worked graphs, and equal to the best one-unit order on RandWire."""

from __future__ import annotations

import random

from opsched.analysis import live_memory_bound, min_memory_bound
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.solver import solve_brute_force
from tests.solver.test_cross_check import random_graph


def branches() -> OpGraph:
    """``a`` (10 B) feeds ``b -> w`` and ``c -> z``, which join in ``f``; ``w`` makes 20 B."""
    return OpGraph((
        Op("a", 1, output_bytes=10),
        Op("b", 1, deps=("a",), output_bytes=1),
        Op("c", 1, deps=("a",), output_bytes=2),
        Op("w", 1, deps=("b",), output_bytes=20),
        Op("z", 1, deps=("c",), output_bytes=1),
        Op("f", 1, deps=("w", "z"), output=True),
    ))  # fmt: skip


def test_least_state_finishes_the_other_branch() -> None:
    # While w runs, b's output (1) and w's own (20) are live, and a stays live (10) unless c
    # has finished too; then c's output is live (2) unless z has finished, leaving z's (1).
    # The least state finishes c and z: 1 + 20 + 1 = 22, where the simple bound sees 21 and
    # "a not freed" would be 31.
    g = branches()
    need, v = live_memory_bound(g)
    assert (need, g.ops[v].name) == (22, "w")
    assert min_memory_bound(g, cut=False)[0] == 21  # w: input 1 + output 20; f: inputs 21
    assert min_memory_bound(g)[0] == 22
    # the order a, c, z, b, w, f reaches it: the bound is the least peak here
    assert solve_brute_force(Problem(g, Machine(units=1)), "peak_memory").peak_memory == 22


def test_residual_block_beats_the_simple_bound() -> None:
    g = OpGraph((
        Op("x", 1, output_bytes=8),
        Op("conv1", 1, deps=("x",), output_bytes=4, workspace_bytes=1),
        Op("conv2", 1, deps=("conv1",), output_bytes=4),
        Op("add", 1, deps=("x", "conv2"), output_bytes=2, output=True),
    ), persistent_bytes=5)  # fmt: skip
    # conv1: x 8 + its own 4 + 1 workspace = 13; conv2: x 8 + conv1 4 + 4 = 16
    assert live_memory_bound(g) == (16, 2)
    need, who = min_memory_bound(g)
    assert need == 21 and "op 'conv2'" in who and "persistent 5" in who
    assert min_memory_bound(g, cut=False)[0] == 14 + 5  # add: inputs 12 + output 2
    p = Problem(g, Machine(units=2))
    assert solve_brute_force(p, "peak_memory").peak_memory == 21


def test_never_above_any_schedule_on_random_tiny_graphs() -> None:
    rng = random.Random(11)
    stronger = tight = 0
    for _ in range(250):
        g, k = random_graph(rng)
        simple = min_memory_bound(g, cut=False)[0]
        bound = min_memory_bound(g, cut=True)[0]
        best = solve_brute_force(Problem(g, Machine(units=k)), "peak_memory").peak_memory
        assert best is not None
        assert simple <= bound <= best, g.to_dict()
        stronger += bound > simple
        tight += bound == best
    # the cut must do something on these graphs, or this test would check nothing new
    assert stronger >= 10
    assert tight >= 200


def test_huge_sizes_are_rounded_down() -> None:
    big = 3 << 40  # far beyond 32-bit capacities
    g = OpGraph((
        Op("x", 1, output_bytes=big),
        Op("conv1", 1, deps=("x",), output_bytes=big // 2),
        Op("conv2", 1, deps=("conv1",), output_bytes=big // 2),
        Op("add", 1, deps=("x", "conv2"), output_bytes=7, output=True),
    ))  # fmt: skip
    need, v = live_memory_bound(g)
    exact = big + big // 2 + big // 2  # while conv2 runs
    assert v == 2
    assert exact - exact // 10**6 <= need <= exact


def test_empty_and_zero_time_graphs() -> None:
    assert live_memory_bound(OpGraph(())) == (0, None)
    assert live_memory_bound(OpGraph((Op("a", 0, output_bytes=5),))) == (0, None)


def test_randwire_stage4_bound_meets_the_best_order() -> None:
    from opsched.heuristics.memory import min_memory_order
    from opsched.heuristics.memory.common import order_peak
    from opsched.transforms import extract
    from opsched.transforms.fusion import fuse
    from opsched.zoo.models import build

    g = extract(fuse(build("randwire"))[0], ["stage4"])
    simple = min_memory_bound(g, cut=False)[0]
    bound = min_memory_bound(g)[0]
    peak = order_peak(g, min_memory_order(g))
    # measured: 0.98 MB simple, 1.83 MB cut = the order's peak, which is thus optimal
    assert bound == peak
    assert simple < 0.6 * peak

"""Tests of the PyTorch Inductor reorder_for_peak_memory reimplementation."""

from __future__ import annotations

import random

import pytest

from opsched.heuristics.memory import (
    file_order,
    inductor_bfs_order,
    inductor_dfs_order,
    inductor_lpmf_order,
    inductor_memory,
    inductor_memory_order,
    inductor_orders,
    order_peak,
)
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Status
from opsched.validate import validate

from .helpers import random_graph


def names(g: OpGraph, order) -> str:  # type: ignore[no-untyped-def]
    return "".join(g.names[i] for i in order)


def test_lpmf_prefers_what_stays_under_the_peak_then_frees_most() -> None:
    # a (1 B) feeds b (8 B) and c (2 B); d reads c and writes nothing.
    g = OpGraph(
        (
            Op("a", 1, output_bytes=1),
            Op("b", 1, deps=("a",), output_bytes=8, output=True),
            Op("c", 1, deps=("a",), output_bytes=2),
            Op("d", 1, deps=("c",)),
        )
    )
    # LPMF starts its running peak at the held outputs (b: 8 B). After a: b would reach 9 B
    # during it, c 3 B: only c stays under 8. Then d (3 B during it, frees c) stays under,
    # b (11 B) does not. Then b: 9 B (a, which b reads, plus b), the peak.
    assert names(g, inductor_lpmf_order(g)) == "acdb"
    assert order_peak(g, inductor_lpmf_order(g)) == 9


def test_lpmf_counts_workspace_during_the_op() -> None:
    # x and y each write 1 B (held outputs: running peak starts at 2 B); x needs 10 B of
    # workspace while it runs: y (1 B during it) stays under 2 B, x (11 B) does not.
    g = OpGraph((Op("x", 1, output_bytes=1, workspace_bytes=10, output=True),
                 Op("y", 1, output_bytes=1, output=True)))  # fmt: skip
    assert names(g, inductor_lpmf_order(g)) == "yx"


def test_bfs_follows_the_order_predecessors_ran() -> None:
    # sources a, b; c reads b, d reads a: d's predecessor ran first, so d before c
    g = OpGraph((Op("a", 1), Op("b", 1), Op("c", 1, deps=("b",)), Op("d", 1, deps=("a",))))
    assert names(g, inductor_bfs_order(g)) == "abdc"


def test_dfs_visits_lighter_first() -> None:
    # two chains: a (9 B) -> b, c (1 B) -> d; c's chain weighs less, so it is emitted first
    g = OpGraph(
        (
            Op("a", 1, output_bytes=9),
            Op("b", 1, deps=("a",), output_bytes=1),
            Op("c", 1, output_bytes=1),
            Op("d", 1, deps=("c",), output_bytes=1),
        )
    )
    assert names(g, inductor_dfs_order(g)) == "cdab"


def test_baseline_is_the_file_order() -> None:
    g = OpGraph((Op("a", 1), Op("c", 1, deps=("a",)), Op("b", 1)))
    assert inductor_orders(g)["baseline"][0].tolist() == file_order(g).tolist() == [0, 1, 2]


def test_reorder_keeps_the_lowest_peak() -> None:
    rng = random.Random(5)
    for _ in range(30):
        g = random_graph(rng, rng.randint(2, 20))
        cands = inductor_orders(g)
        assert list(cands) == ["baseline", "lpmf", "bfs", "dfs"]
        best = min(p for _, p in cands.values())
        assert order_peak(g, inductor_memory_order(g)) == best
        problem = Problem(g, Machine(units=1))
        s = inductor_memory(problem)
        assert s.status is Status.FEASIBLE and s.peak_memory == best
        assert validate(problem, s).valid


@pytest.mark.parametrize("fn", [inductor_lpmf_order, inductor_bfs_order, inductor_dfs_order])
def test_orders_are_topological_permutations(fn) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(13)
    for _ in range(20):
        g = random_graph(rng, rng.randint(1, 30))
        order = fn(g).tolist()
        assert sorted(order) == list(range(g.num_ops))
        pos = {v: i for i, v in enumerate(order)}
        assert all(pos[g.index(d)] < pos[g.index(op.name)] for op in g.ops for d in op.deps)


def test_deep_chain_does_not_recurse() -> None:
    n = 5000
    g = OpGraph(tuple(Op(f"o{i}", 1, deps=(f"o{i-1}",) if i else (), output_bytes=1)
                      for i in range(n)))  # fmt: skip
    assert inductor_dfs_order(g).tolist() == list(range(n))

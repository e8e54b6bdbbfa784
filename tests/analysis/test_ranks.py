"""Tests of :mod:`opsched.analysis.ranks`: every priority rule on hand-worked graphs."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from opsched.analysis.ranks import PRIORITY_RULES, downward_rank, priority, upward_rank
from opsched.errors import ProblemError
from opsched.ir import Op, OpGraph
from opsched.zoo.generators import gnp, layered

# The hand-worked graph (durations in brackets, output bytes after the slash):
#
#   a [2] /10 --> c [1]      a -> c, a -> d, b -> c
#        \------> d [4]
#   b [3] /20 --> c
#
# b-level: c = 1, d = 4, a = 2 + max(1, 4) = 6, b = 3 + 1 = 4
# t-level (ASAP start): a = 0, b = 0, c = max(2, 3) = 3, d = 2
# HEFT with bandwidth 5, latency 1: an edge leaving a costs 10/5 + 1 = 3, leaving b 20/5 + 1 = 5
#   up: c = 1, d = 4, a = 2 + max(3 + 1, 3 + 4) = 9, b = 3 + 5 + 1 = 9
#   down: a = b = 0, c = max(0 + 2 + 3, 0 + 3 + 5) = 8, d = 0 + 2 + 3 = 5
# CPOP = up + down: without links [6, 4, 4, 6]; with them [9, 9, 9, 9]
HAND = OpGraph(
    (
        Op("a", 2, output_bytes=10),
        Op("b", 3, output_bytes=20),
        Op("c", 1, deps=("a", "b")),
        Op("d", 4, deps=("a",)),
    )
)


def test_b_level_by_hand() -> None:
    assert priority(HAND, "b-level").tolist() == [6.0, 4.0, 1.0, 4.0]


@pytest.mark.parametrize("alias", ["blevel", "critical-path"])
def test_b_level_aliases(alias: str) -> None:
    assert priority(HAND, alias).tolist() == priority(HAND, "b-level").tolist()


def test_t_level_is_negated_asap_start() -> None:
    assert priority(HAND, "t-level").tolist() == [0.0, 0.0, -3.0, -2.0]


def test_heft_without_links_is_b_level() -> None:
    assert priority(HAND, "heft").tolist() == [6.0, 4.0, 1.0, 4.0]
    assert upward_rank(HAND).tolist() == [6.0, 4.0, 1.0, 4.0]


def test_heft_upward_rank_with_bandwidth_by_hand() -> None:
    up = priority(HAND, "heft", bandwidth=5, latency=1)
    assert up.tolist() == [9.0, 9.0, 1.0, 4.0]
    assert upward_rank(HAND, bandwidth=5, latency=1).tolist() == up.tolist()


def test_downward_rank_with_bandwidth_by_hand() -> None:
    assert downward_rank(HAND).tolist() == [0.0, 0.0, 3.0, 2.0]
    assert downward_rank(HAND, bandwidth=5, latency=1).tolist() == [0.0, 0.0, 8.0, 5.0]


def test_cpop_by_hand() -> None:
    assert priority(HAND, "cpop").tolist() == [6.0, 4.0, 4.0, 6.0]
    assert priority(HAND, "cpop", bandwidth=5, latency=1).tolist() == [9.0, 9.0, 9.0, 9.0]


def test_cpop_is_longest_path_through_op_and_max_is_critical_path() -> None:
    g = layered(40, seed=5)
    cp = priority(g, "cpop")
    bl = priority(g, "b-level")
    # the longest path through an op is at most the critical path, reached at the sources on it
    assert cp.max() == pytest.approx(bl.max())
    assert (cp <= bl.max() + 1e-9).all()


def test_successors_and_lpt_by_hand() -> None:
    assert priority(HAND, "successors").tolist() == [2.0, 1.0, 0.0, 0.0]
    assert priority(HAND, "lpt").tolist() == [2.0, 3.0, 1.0, 4.0]


def test_lpt_returns_a_copy() -> None:
    p = priority(HAND, "lpt")
    p[0] = 99.0
    assert HAND.durations[0] == 2.0


def test_random_reproducible_by_seed() -> None:
    g = layered(30, seed=2)
    a = priority(g, "random", seed=7)
    assert a.tolist() == priority(g, "random", seed=7).tolist()
    assert a.tolist() != priority(g, "random", seed=8).tolist()
    assert a.shape == (30,) and ((a >= 0) & (a < 1)).all()
    assert a.tolist() == np.random.default_rng(7).random(30).tolist()


def test_every_rule_gives_one_finite_number_per_op() -> None:
    g = gnp(25, 0.2, seed=4)
    for rule in PRIORITY_RULES:
        r = priority(g, rule)
        assert r.shape == (25,) and np.isfinite(r).all(), rule


def test_unknown_rule_names_the_known_ones() -> None:
    with pytest.raises(ProblemError) as e:
        priority(HAND, "fastest-first")
    msg = str(e.value)
    assert "fastest-first" in msg
    for rule in PRIORITY_RULES:
        assert rule in msg


@pytest.mark.parametrize("bw", [0, -1.0])
def test_non_positive_bandwidth_is_rejected(bw: float) -> None:
    with pytest.raises(ProblemError, match="bandwidth"):
        upward_rank(HAND, bandwidth=bw)


def _reference_ranks(g: OpGraph, bandwidth: float | None, latency: float) -> tuple[list, list]:
    """Upward and downward ranks by plain recursion over the op records (independent code)."""
    names = g.names
    dur = {op.name: float(op.duration) for op in g.ops}
    cost = {
        op.name: (0.0 if bandwidth is None else op.output_bytes / bandwidth + latency)
        for op in g.ops
    }
    succ: dict[str, list[str]] = {n: [] for n in names}
    for op in g.ops:
        for d in op.deps:
            succ[d].append(op.name)
    preds = {op.name: list(op.deps) for op in g.ops}

    @functools.cache
    def up(v: str) -> float:
        return dur[v] + max((cost[v] + up(w) for w in succ[v]), default=0.0)

    @functools.cache
    def down(v: str) -> float:
        return max((down(u) + dur[u] + cost[u] for u in preds[v]), default=0.0)

    return [up(n) for n in names], [down(n) for n in names]


@pytest.mark.parametrize("seed", range(6))
def test_ranks_match_recursive_reference_on_random_graphs(seed: int) -> None:
    g = gnp(40, 0.1, seed=seed, memory=True) if seed % 2 else layered(40, seed=seed)
    for bandwidth, latency in [(None, 0.0), (2.0**20, 0.5), (3.0e6, 0.0)]:
        up_ref, down_ref = _reference_ranks(g, bandwidth, latency)
        np.testing.assert_allclose(upward_rank(g, bandwidth, latency), up_ref)
        np.testing.assert_allclose(downward_rank(g, bandwidth, latency), down_ref)
        np.testing.assert_allclose(
            priority(g, "cpop", bandwidth=bandwidth, latency=latency),
            np.add(up_ref, down_ref),
        )
    up_ref, down_ref = _reference_ranks(g, None, 0.0)
    np.testing.assert_allclose(priority(g, "b-level"), up_ref)
    np.testing.assert_allclose(priority(g, "t-level"), -np.asarray(down_ref))

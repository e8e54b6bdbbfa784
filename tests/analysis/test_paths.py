"""Tests for opsched.analysis.paths: t-level, b-level, ALAP, slack and the critical path.

Random DAGs are checked against values computed here independently with networkx: a DP over
``nx.topological_sort`` and, for the longest path itself, enumeration of every simple path.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opsched.analysis import (
    b_level,
    critical_path,
    earliest_starts,
    latest_starts,
    min_lifetimes,
    slack,
    t_level,
)
from opsched.demo import seed_graph
from opsched.ir import Op, OpGraph


@st.composite
def random_dags(draw, max_ops: int = 8, durations=None):
    """A random DAG (file order shuffled) plus an independent networkx copy with ``d`` weights."""
    if durations is None:
        durations = st.integers(0, 6)
    n = draw(st.integers(0, max_ops))
    file_order = draw(st.permutations(range(n)))
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if draw(st.booleans())]
    durs = [draw(durations) for _ in range(n)]
    preds: dict[int, list[str]] = {j: [] for j in range(n)}
    for i, j in edges:
        preds[j].append(f"v{i}")
    ops = tuple(Op(f"v{r}", durs[r], deps=tuple(preds[r])) for r in file_order)
    nxg = nx.DiGraph()
    for r in range(n):
        nxg.add_node(f"v{r}", d=float(durs[r]))
    nxg.add_edges_from((f"v{i}", f"v{j}") for i, j in edges)
    return OpGraph(ops), nxg


def brute_force(nxg: nx.DiGraph) -> dict[str, dict[str, float]]:
    """Earliest start, b-level and critical-path length by independent means."""
    d = nx.get_node_attributes(nxg, "d")
    est: dict[str, float] = {}
    for v in nx.topological_sort(nxg):
        est[v] = max((est[u] + d[u] for u in nxg.predecessors(v)), default=0.0)
    # b-level: the heaviest path starting at v, by enumerating all paths to every sink
    sinks = [v for v in nxg if nxg.out_degree(v) == 0]
    bl: dict[str, float] = {}
    for v in nxg:
        best = d[v]
        for t in sinks:
            for path in nx.all_simple_paths(nxg, v, t):
                best = max(best, sum(d[u] for u in path))
        bl[v] = best
    length = max(bl.values(), default=0.0)
    return {"est": est, "bl": bl, "length": {"": length}}


def as_dict(g: OpGraph, arr: np.ndarray) -> dict[str, float]:
    return dict(zip(g.names, arr.tolist(), strict=True))


# ---------------------------------------------------------------------- hand-worked


def diamond_plus() -> OpGraph:
    # A(2) -> B(3) -> D(1); A -> C(1) -> D; E(4) alone.
    return OpGraph(
        (
            Op("A", 2),
            Op("B", 3, deps=("A",)),
            Op("C", 1, deps=("A",)),
            Op("D", 1, deps=("B", "C")),
            Op("E", 4),
        )
    )


def test_hand_example_levels():
    g = diamond_plus()
    # est: A 0, B = C = 2 (after A), D = max(2+3, 2+1) = 5, E 0
    assert earliest_starts(g).tolist() == [0.0, 2.0, 2.0, 5.0, 0.0]
    assert t_level(g).tolist() == earliest_starts(g).tolist()
    # b-level: D 1, B 3+1 = 4, C 1+1 = 2, A 2+max(4, 2) = 6, E 4
    assert b_level(g).tolist() == [6.0, 4.0, 2.0, 1.0, 4.0]
    # latest start = 6 - b-level
    assert latest_starts(g).tolist() == [0.0, 2.0, 4.0, 5.0, 2.0]
    # slack = latest - earliest: C can slip 2 (4 - 2), E 2 (2 - 0)
    assert slack(g).tolist() == [0.0, 0.0, 2.0, 0.0, 2.0]
    cp = critical_path(g)
    assert cp.length == 6.0
    assert cp.ops == ["A", "B", "D"]
    assert str(cp) == "6: A -> B -> D"


def test_hand_example_horizon():
    g = diamond_plus()
    # with a horizon of 10 every op gets 4 more units of slack than with the CP length 6
    assert latest_starts(g, horizon=10).tolist() == [4.0, 6.0, 8.0, 9.0, 6.0]
    assert slack(g, horizon=10).tolist() == [4.0, 4.0, 6.0, 4.0, 6.0]


def test_seed_graph_critical_path():
    # the seed's unit-duration graph: the Conv2/ReLU branch (2 ops) beats BN (1 op)
    g = seed_graph()
    cp = critical_path(g)
    assert cp.length == 6.0
    assert cp.ops == ["Input", "Conv1", "Conv2", "ReLU", "Add", "Output"]
    # BN is the only op off the critical path: slack 1 (latest 3, earliest 2)
    assert as_dict(g, slack(g)) == {
        "Input": 0.0,
        "Conv1": 0.0,
        "BN": 1.0,
        "Conv2": 0.0,
        "ReLU": 0.0,
        "Add": 0.0,
        "Output": 0.0,
    }


def test_seed_graph_with_durations():
    # BN 5 makes the BN branch (5) longer than Conv2+ReLU (2): 1 + 1 + 5 + 1 + 1 = 9
    g = seed_graph([1, 1, 5, 1, 1, 1, 1])
    cp = critical_path(g)
    assert cp.length == 9.0
    assert cp.ops == ["Input", "Conv1", "BN", "Add", "Output"]


def test_ties_broken_by_file_order():
    # two equal branches a -> {x, y} -> z: x is first in file order, so it is on the path
    g = OpGraph(
        (Op("a", 1), Op("x", 2, deps=("a",)), Op("y", 2, deps=("a",)), Op("z", 1, deps=("x", "y")))
    )
    assert critical_path(g).ops == ["a", "x", "z"]
    g2 = OpGraph(
        (Op("a", 1), Op("y", 2, deps=("a",)), Op("x", 2, deps=("a",)), Op("z", 1, deps=("x", "y")))
    )
    assert critical_path(g2).ops == ["a", "y", "z"]
    # two equal isolated ops: the first in file order
    assert critical_path(OpGraph((Op("p", 3), Op("q", 3)))).ops == ["p"]


def test_zero_duration_ops():
    # z (0) -> a (5) -> w (0): the path may start at z and ends at the zero-duration sink w
    g = OpGraph((Op("z", 0), Op("a", 5, deps=("z",)), Op("w", 0, deps=("a",))))
    assert earliest_starts(g).tolist() == [0.0, 0.0, 5.0]
    assert b_level(g).tolist() == [5.0, 5.0, 0.0]
    cp = critical_path(g)
    assert cp.length == 5.0
    assert cp.ops == ["z", "a", "w"]


def test_fractional_durations():
    # 0.1 + 0.2 along a chain vs 0.3 alone: floating point sums must still give a valid path
    g = OpGraph((Op("a", 0.1), Op("b", 0.2, deps=("a",)), Op("c", 0.3)))
    cp = critical_path(g)
    assert cp.length == pytest.approx(0.3)
    assert sum(g[n].duration for n in cp.ops) == pytest.approx(cp.length)


def test_empty_graph():
    g = OpGraph(())
    assert critical_path(g).length == 0.0
    assert critical_path(g).ops == []
    assert earliest_starts(g).tolist() == []
    assert b_level(g).tolist() == []
    assert latest_starts(g).tolist() == []


# ---------------------------------------------------------------------- random DAGs


@settings(max_examples=120, deadline=None)
@given(random_dags())
def test_levels_match_brute_force(case):
    g, nxg = case
    bf = brute_force(nxg)
    assert as_dict(g, earliest_starts(g)) == bf["est"]
    assert as_dict(g, b_level(g)) == bf["bl"]
    length = bf["length"][""]
    # ALAP independently: latest(v) = min over successors of latest(s), minus d(v)
    d = nx.get_node_attributes(nxg, "d")
    ls: dict[str, float] = {}
    for v in reversed(list(nx.topological_sort(nxg))):
        ls[v] = min((ls[s] for s in nxg.successors(v)), default=length) - d[v]
    assert as_dict(g, latest_starts(g)) == ls
    sl = as_dict(g, slack(g))
    assert sl == {v: ls[v] - bf["est"][v] for v in nxg}
    assert all(s >= 0 for s in sl.values())
    # an op has zero slack iff it lies on some longest path
    for v in nxg:
        on_longest = bf["est"][v] + bf["bl"][v] == length
        assert (sl[v] == 0) == on_longest


@settings(max_examples=120, deadline=None)
@given(random_dags())
def test_critical_path_is_a_real_longest_path(case):
    g, nxg = case
    bf = brute_force(nxg)
    cp = critical_path(g)
    assert cp.length == bf["length"][""]
    if g.num_ops == 0:
        assert cp.ops == []
        return
    assert cp.ops, "a non-empty graph has a non-empty critical path"
    # consecutive ops are real edges, no op repeats
    for u, v in zip(cp.ops, cp.ops[1:], strict=False):
        assert nxg.has_edge(u, v)
    assert len(set(cp.ops)) == len(cp.ops)
    # durations sum to the length; it starts at time 0 and ends at a sink
    assert sum(g[n].duration for n in cp.ops) == cp.length
    assert bf["est"][cp.ops[0]] == 0.0
    assert nxg.out_degree(cp.ops[-1]) == 0
    # every critical-path op has zero slack
    sl = as_dict(g, slack(g))
    assert all(sl[n] == 0 for n in cp.ops)


@settings(max_examples=60, deadline=None)
@given(random_dags(durations=st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.7, 1.3])))
def test_critical_path_fractional(case):
    g, nxg = case
    bf = brute_force(nxg)
    cp = critical_path(g)
    assert cp.length == pytest.approx(bf["length"][""])
    for u, v in zip(cp.ops, cp.ops[1:], strict=False):
        assert nxg.has_edge(u, v)
    assert sum(g[n].duration for n in cp.ops) == pytest.approx(cp.length)
    np.testing.assert_allclose(b_level(g), [bf["bl"][n] for n in g.names])
    np.testing.assert_allclose(earliest_starts(g), [bf["est"][n] for n in g.names])


@settings(max_examples=150, deadline=None)
@given(random_dags(max_ops=8))
def test_min_lifetimes_match_enumerated_paths_to_the_last_consumer(case):
    g, nxg = case
    d = nx.get_node_attributes(nxg, "d")
    want = []
    for op in g.ops:
        v = op.name
        best = d[v]  # no consumer: freed at its own end
        for c in nxg.successors(v):
            for path in nx.all_simple_paths(nxg, v, c):  # start(v) .. end(c) along the path
                best = max(best, sum(d[u] for u in path))
        want.append(best)
    assert min_lifetimes(g).tolist() == pytest.approx(want)


def test_min_lifetimes_fall_back_to_direct_consumers_on_big_graphs(monkeypatch):
    import opsched.analysis.paths as paths

    g = OpGraph((Op("a", 2), Op("b", 3, deps=("a",)), Op("c", 1, deps=("a", "b"))))
    assert min_lifetimes(g).tolist() == [6.0, 4.0, 1.0]  # a lives until c, after b
    monkeypatch.setattr(paths, "MIN_LIFETIME_EXACT_WORK", 1)
    assert min_lifetimes(g).tolist() == [5.0, 4.0, 1.0]  # only d(a) + d(b): weaker, valid

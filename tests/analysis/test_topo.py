"""Tests for opsched.analysis.topo: Kahn's stable topological order."""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from opsched.analysis import topo_indices, topological_order
from opsched.demo import seed_graph
from opsched.ir import Op, OpGraph


@st.composite
def random_dags(draw, max_ops: int = 10):
    """A random DAG whose file order is a random permutation of a hidden topological rank.

    Returns the OpGraph and an independently built networkx DiGraph of the same edges.
    """
    n = draw(st.integers(0, max_ops))
    file_order = draw(st.permutations(range(n)))
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if draw(st.booleans())]
    preds: dict[int, list[str]] = {j: [] for j in range(n)}
    for i, j in edges:
        preds[j].append(f"v{i}")
    ops = tuple(Op(f"v{r}", 1, deps=tuple(preds[r])) for r in file_order)
    nxg = nx.DiGraph()
    nxg.add_nodes_from(f"v{r}" for r in range(n))
    nxg.add_edges_from((f"v{i}", f"v{j}") for i, j in edges)
    return OpGraph(ops), nxg


def test_seed_graph_order():
    # Kahn FIFO: Input; Conv1; Conv1 releases BN then Conv2 (file order); BN leaves Add at
    # in-degree 1; Conv2 releases ReLU; ReLU releases Add; Add releases Output.
    assert topological_order(seed_graph()) == [
        "Input",
        "Conv1",
        "BN",
        "Conv2",
        "ReLU",
        "Add",
        "Output",
    ]
    assert topo_indices(seed_graph()).tolist() == [0, 1, 2, 3, 4, 5, 6]


def test_sources_keep_file_order():
    # No edges at all: the order is exactly the file order, whatever the names.
    g = OpGraph((Op("z", 1), Op("a", 1), Op("m", 1)))
    assert topological_order(g) == ["z", "a", "m"]


def test_stable_fifo_order():
    # Sources s2, s1 enter the queue in file order (s2 first). s2 releases x (its only dep),
    # then s1 releases y; w waits for both x and y.
    g = OpGraph(
        (
            Op("w", 1, deps=("x", "y")),
            Op("s2", 1),
            Op("y", 1, deps=("s1",)),
            Op("x", 1, deps=("s2",)),
            Op("s1", 1),
        )
    )
    assert topological_order(g) == ["s2", "s1", "x", "y", "w"]


def test_successors_released_in_file_order():
    # a's successors c, b are listed in file order c before b: FIFO releases c first.
    g = OpGraph((Op("a", 1), Op("c", 1, deps=("a",)), Op("b", 1, deps=("a",))))
    assert topological_order(g) == ["a", "c", "b"]


def test_empty_graph():
    g = OpGraph(())
    assert topological_order(g) == []
    assert topo_indices(g).tolist() == []


@settings(max_examples=150, deadline=None)
@given(random_dags())
def test_random_dag_order_is_valid(case):
    g, nxg = case
    order = topological_order(g)
    # a permutation of all ops
    assert sorted(order) == sorted(g.names)
    pos = {name: i for i, name in enumerate(order)}
    # every dependency strictly before its op
    for op in g.ops:
        for d in op.deps:
            assert pos[d] < pos[op.name]
    # the same holds for the independently built networkx graph
    for u, v in nxg.edges:
        assert pos[u] < pos[v]
    # indices agree with names
    assert [g.names[i] for i in topo_indices(g)] == order


@settings(max_examples=100, deadline=None)
@given(random_dags())
def test_random_dag_sources_first_in_file_order(case):
    g, _ = case
    order = topological_order(g)
    sources = [op.name for op in g.ops if not op.deps]
    # FIFO Kahn: the initial queue holds all sources in file order and they are popped first
    assert order[: len(sources)] == sources

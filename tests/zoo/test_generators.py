"""Generators: sizes, DAG structure, seeds, options (hand checks and structural recognisers)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import numpy as np
import pytest

from opsched.analysis import critical_path
from opsched.errors import ProblemError
from opsched.ir import kinds
from opsched.ir.graph import OpGraph
from opsched.zoo.generators import (
    _pair_of_index,
    example_graph,
    fork_join,
    gnp,
    layered,
    random_network,
    series_parallel,
)


def _sources_sinks(g: OpGraph) -> tuple[list[str], list[str]]:
    return [op.name for op in g.ops if not op.deps], [
        op.name for op in g.ops if not g.successors(op.name)
    ]


def _in_file_topo_order(g: OpGraph) -> bool:
    return all(g.index(d) < i for i, op in enumerate(g.ops) for d in op.deps)


def test_layered_unchanged_by_the_speedup() -> None:
    # digest of these graphs made by the original (quadratic) implementation
    docs = [layered(n, seed=s).to_dict() for n, s in [(24, 0), (24, 1), (60, 3), (200, 7)]]
    digest = hashlib.sha256(json.dumps(docs, sort_keys=True).encode()).hexdigest()
    assert digest == "78a4fab7d1896c63bd9a6d5a275b020265af4e117f9d1cca2727e4fd8f30cf94"


def test_pair_index_is_a_bijection() -> None:
    n = 40
    k = np.arange(n * (n - 1) // 2)
    i, j = _pair_of_index(k)
    assert np.all(i < j) and np.all(i >= 0) and np.all(j < n)
    assert len(set(zip(i.tolist(), j.tolist(), strict=True))) == len(k)
    # huge indices (a million ops): exact, despite the float square root
    jj = np.array([999_999, 500_000, 123_457, 2**20 + 1], dtype=np.int64)
    ii = np.array([999_998, 0, 17, 2**19], dtype=np.int64)
    i2, j2 = _pair_of_index(jj * (jj - 1) // 2 + ii)
    assert i2.tolist() == ii.tolist() and j2.tolist() == jj.tolist()


def test_gnp_extremes_and_order() -> None:
    assert gnp(7, 0.0).num_edges == 0
    full = gnp(7, 1.0)
    assert full.num_edges == 21 and full["t6"].deps == tuple(f"t{i}" for i in range(6))
    g = gnp(300, 0.05, seed=4)
    assert g.num_ops == 300 and _in_file_topo_order(g)
    assert all(1 <= d <= 10 and d == int(d) for d in g.durations)


def test_gnp_edge_count_follows_the_binomial_law() -> None:
    n, p = 200, 0.05
    counts = [gnp(n, p, seed=s).num_edges for s in range(20)]
    mean, sd = n * (n - 1) / 2 * p, (n * (n - 1) / 2 * p * (1 - p)) ** 0.5
    assert abs(np.mean(counts) - mean) < 4 * sd / len(counts) ** 0.5
    # each pair equally likely: the first and the last pair appear about p of the time
    hits = sum("t0" in gnp(30, 0.3, seed=s)["t1"].deps for s in range(400))
    assert 0.3 * 400 - 50 < hits < 0.3 * 400 + 50


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 9, 17, 40, 101])
def test_fork_join_exact_size_one_source_one_sink(n: int) -> None:
    g = fork_join(n, max_width=4, max_depth=3, seed=n)
    assert g.num_ops == n and _in_file_topo_order(g)
    sources, sinks = _sources_sinks(g)
    assert sources == ["f0"] and sinks == [f"f{n - 1}"]


def test_fork_join_structure() -> None:
    g = fork_join(200, max_width=5, max_depth=3, seed=1)
    # branch ops are chain links (in 1, out 1); a join (in >= 2) is the next stage's fork
    hubs = [op.name for op in g.ops if len(op.deps) != 1 or len(g.successors(op.name)) != 1]
    for h in hubs[1:-1]:
        assert 2 <= len(g[h].deps) <= 5 and 2 <= len(g.successors(h)) <= 5
    assert len(g.successors("f0")) >= 2
    # a fork-join graph is series-parallel
    assert _is_series_parallel(g)


def _is_series_parallel(g: OpGraph) -> bool:
    """Two-terminal SP recognition: series and parallel reductions down to one edge."""
    succ: dict[str, set[str]] = {op.name: set() for op in g.ops}
    pred: dict[str, set[str]] = {op.name: set(op.deps) for op in g.ops}
    for op in g.ops:
        for d in op.deps:
            succ[d].add(op.name)
    changed = True
    while changed:
        changed = False
        for x in list(succ):
            if len(pred[x]) == 1 and len(succ[x]) == 1:
                (u,), (v,) = pred[x], succ[x]
                succ[u].discard(x)
                pred[v].discard(x)
                succ[u].add(v)  # a set: a parallel edge merges at once
                pred[v].add(u)
                del succ[x], pred[x]
                changed = True
    return len(succ) == 2 and sum(len(s) for s in succ.values()) == 1


@pytest.mark.parametrize("n", [2, 3, 5, 10, 33, 120])
def test_series_parallel_is_series_parallel(n: int) -> None:
    g = series_parallel(n, seed=n, parallel_prob=0.4)
    assert g.num_ops == n and _in_file_topo_order(g)
    assert _sources_sinks(g) == (["s0"], [f"s{n - 1}"])
    assert g.num_edges <= 2 * n - 3 or n == 2
    assert _is_series_parallel(g)


def test_series_parallel_single_op_and_not_sp_detected() -> None:
    assert series_parallel(1).num_ops == 1
    # the recogniser rejects the smallest non-SP DAG (the "N" graph with terminals)
    from opsched.ir import Op

    n_graph = OpGraph(
        (
            Op("s"),
            Op("a", deps=("s",)),
            Op("b", deps=("s",)),
            Op("c", deps=("a",)),
            Op("d", deps=("a", "b")),
            Op("t", deps=("c", "d")),
        )
    )
    assert not _is_series_parallel(n_graph)


@pytest.mark.parametrize(
    "make",
    [
        lambda s: gnp(60, 0.1, seed=s, memory=True),
        lambda s: fork_join(60, seed=s, memory=True),
        lambda s: series_parallel(60, seed=s, memory=True),
        lambda s: random_network(60, seed=s),
        lambda s: layered(60, seed=s),
    ],
)
def test_seeds_reproduce_and_differ(make) -> None:  # type: ignore[no-untyped-def]
    assert make(5).to_dict() == make(5).to_dict()
    assert make(5).to_dict() != make(6).to_dict()


def test_memory_option() -> None:
    unit = 4096
    g = series_parallel(50, memory=True, size_unit=unit, max_size=3, workspace_prob=1.0, seed=2)
    assert all(op.output_bytes in (unit, 2 * unit, 3 * unit) for op in g.ops)
    assert all(op.workspace_bytes == unit for op in g.ops)  # max(1, 3 // 2) units
    assert [op.name for op in g.ops if op.output] == [g.ops[-1].name]
    plain = series_parallel(50, seed=2)
    assert all(op.output_bytes == 0 and not op.output for op in plain.ops)


def test_random_network_shapes_follow_the_kinds_vocabulary() -> None:
    g = random_network(150, batch=2, channels=16, size=8, dtype="float16", seed=3)
    assert g.num_ops == 150 and _in_file_topo_order(g)
    assert {op.kind for op in g.ops} <= set(kinds.KINDS)
    for op in g.ops:
        assert op.output_bytes == kinds.output_numel(op.kind, op.attrs) * 2
        assert op.duration >= 2.0  # the launch overhead
    assert sum(op.output for op in g.ops) == 1 and g.ops[-1].output


def test_examples() -> None:
    seed = example_graph("seed")
    assert seed.num_ops == 7 and critical_path(seed).length == 6
    cp = example_graph("critical-path")
    assert critical_path(cp).length == 3 and cp["D"].deps == ("B",)
    with pytest.raises(ProblemError, match="unknown example"):
        example_graph("nope")


@pytest.mark.parametrize(
    "call",
    [
        lambda: gnp(0, 0.1),
        lambda: gnp(5, 1.5),
        lambda: fork_join(5, max_width=1),
        lambda: series_parallel(5, parallel_prob=1.0),
        lambda: random_network(5, dtype="float13"),
        lambda: fork_join(5, seed=-1),
        lambda: gnp(5, 0.5, memory=True, max_size=0),
    ],
)
def test_bad_arguments_raise_problem_error(call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ProblemError):
        call()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: gnp(2.5, 0.1), "ops must be an integer >= 1, got 2.5"),
        (lambda: gnp(True, 0.1), "ops must be an integer >= 1, got True"),
        (lambda: gnp(5, "0.5"), "p (the edge probability) must be a number in [0, 1], got '0.5'"),
        (lambda: gnp(5, float("nan")), "p (the edge probability) must be a number in [0, 1]"),
    ],
)
def test_gnp_names_a_wrong_typed_argument(call: Callable[[], object], message: str) -> None:
    # a float or bool op count and a text p had failed inside NumPy with a TypeError
    with pytest.raises(ProblemError) as e:
        call()
    assert str(e.value) == message or str(e.value).startswith(message)

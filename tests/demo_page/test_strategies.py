"""The strategy comparison (tab 2 of the demo page)."""

from __future__ import annotations

import itertools

import pytest

from opsched.demo import seed_graph
from opsched.demo_page.strategies import (
    admission_interval,
    compare_strategies,
    inception_block,
    unroll_micro_batches,
)
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule
from opsched.validate import validate


@pytest.fixture(scope="module")
def block_result() -> dict:
    return compare_strategies(inception_block(), units=4, micro_batches=4, time_limit=10)


def test_block_shapes_and_roofline_durations() -> None:
    g = inception_block()
    # b2_3x3: 2*N*K*C*R*S*P*Q = 2*128*96*9*784 = 173,408,256 FLOPs -> 17.3 us at 10 TFLOP/s
    assert g["b2_3x3"].duration == 18 and g["b2_3x3"].output_bytes == 128 * 28 * 28 * 4
    # an input op moves no bytes in the kinds vocabulary (bytes_min 0): the 1 us floor
    assert g["in"].duration == 1 and g["in"].output_bytes == 192 * 28 * 28 * 4
    assert g["concat"].output_bytes == 256 * 28 * 28 * 4 and g["concat"].output
    assert g.work == 38


def _min_peak_one_unit(g: OpGraph) -> int:
    """Brute force: least peak over every topological order run back to back on one unit."""
    best = None
    names = g.names
    for perm in itertools.permutations(names[1:-1]):
        order = [names[0], *perm, names[-1]]
        pos = {v: i for i, v in enumerate(order)}
        if any(pos[d] > pos[op.name] for op in g.ops for d in op.deps):
            continue
        t, starts = 0.0, {}
        for v in order:
            starts[v] = t
            t += g[v].duration
        p = Schedule.build(Problem(g, Machine(units=1)), starts, solver="brute").peak_memory
        best = p if best is None or p < best else best
    assert best is not None
    return best


def test_memory_aware_is_the_least_peak(block_result: dict) -> None:
    mem = block_result["memory"]["metrics"]
    assert mem["proven"]
    assert mem["peak_memory"] == _min_peak_one_unit(inception_block()) == 1605632
    assert mem["makespan"] == 38  # one unit, no idle time
    assert block_result["parallel"]["metrics"]["peak_memory"] > mem["peak_memory"]


def test_parallel_reaches_the_critical_path(block_result: dict) -> None:
    par = block_result["parallel"]
    assert par["metrics"]["makespan"] == block_result["graph"]["critical_path"] == 26
    assert max(o["unit"] for o in par["ops"]) <= 3


def test_pipeline_latency_and_interval(block_result: dict) -> None:
    pipe = block_result["pipeline"]
    m = pipe["metrics"]
    # admitted every 18 (the 18 us b2_3x3 takes micro-batches one at a time); each one
    # then runs at the single-input makespan, 26
    assert m["admission_interval"] == 18 and m["initiation_interval"] == 18
    assert pipe["latency"] == [26, 26, 26, 26]
    assert m["makespan"] == 3 * 18 + 26
    assert m["throughput"] > block_result["parallel"]["metrics"]["throughput"]
    # the panel's schedule really is valid for the unrolled problem, memory curve included
    u = unroll_micro_batches(inception_block(), 4, admit_every=18)
    p = Problem(u, Machine(units=4))
    s = Schedule.build(p, {o["name"]: o["start"] for o in pipe["ops"]},
                       {o["name"]: o["unit"] for o in pipe["ops"]}, solver="panel")  # fmt: skip
    assert validate(p, s).valid
    assert s.peak_memory == m["peak_memory"] == max(pipe["memory"]["bytes"])


def test_unroll_chains_each_op_across_micro_batches() -> None:
    u = unroll_micro_batches(seed_graph(), 3)
    assert u.num_ops == 21 and u.num_edges == 3 * 7 + 2 * 7
    assert u["Add@2"].deps == ("BN@2", "ReLU@2", "Add@1")
    assert unroll_micro_batches(seed_graph(), 1).to_dict()["ops"][1]["deps"] == ["Input@0"]
    a = unroll_micro_batches(seed_graph(), 3, admit_every=2.5)
    assert [a[f"admit@{m}"].deps for m in range(2)] == [(), ("admit@0",)]
    assert "admit@2" not in a and a["Input@2"].deps == ("Input@1", "admit@1")
    with pytest.raises(ValueError):
        unroll_micro_batches(seed_graph(), 0)


def test_admission_interval_bounds() -> None:
    g = OpGraph((Op("a", 4), Op("b", 1), Op("c", 1), Op("d", 6, demands={"units": 2})))
    assert admission_interval(g, 1) == 4 + 1 + 1 + 12
    assert admission_interval(g, 8) == 6


def test_seed_graph_strategies_without_memory_sizes() -> None:
    r = compare_strategies(seed_graph(), units=2, micro_batches=3, time_limit=5)
    assert r["parallel"]["metrics"]["makespan"] == 6
    assert r["memory"]["metrics"]["makespan"] == 7
    assert r["memory"]["metrics"]["peak_memory"] == 0
    assert r["pipeline"]["latency"] == [6, 6, 6]
    assert r["pipeline"]["metrics"]["admission_interval"] == 3.5


def test_a_graph_op_named_admit_keeps_its_own_copies() -> None:
    # the gates were always named admit@m: a graph op "admit" had its copies collide with
    # them ("op 'admit@1': dependency 'admit@0' is listed twice" from opsched demo page)
    g = OpGraph((Op("admit", 2), Op("admit_", 3, deps=("admit",)), Op("c", 1, deps=("admit_",))))
    u = unroll_micro_batches(g, 2, admit_every=6)
    assert u.num_ops == 2 * 3 + 1 and u["admit__@0"].kind == "admit"
    assert u["admit@0"].duration == 2 and u["admit@1"].deps == ("admit@0", "admit__@0")
    # the chain takes 6; on 2 units a micro-batch enters every max(3, 6 / 2) = 3 and each
    # runs its chain undisturbed: latency 6 each
    r = compare_strategies(g, units=2, micro_batches=3, time_limit=5)
    assert r["pipeline"]["metrics"]["admission_interval"] == 3
    assert r["pipeline"]["latency"] == [6, 6, 6]

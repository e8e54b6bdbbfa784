"""Tests for opsched.analysis.bounds: parallelism profile, serial ops, Amdahl, lower bounds and
the memory lower bound.

Bounds are checked against brute force: the optimal makespan of tiny graphs by exhaustive
search, and the least serial peak memory over every topological order.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opsched.analysis import (
    amdahl,
    earliest_starts,
    lower_bounds,
    min_memory_bound,
    parallelism_profile,
    serial_ops,
)
from opsched.datasets import dataset_path, stg_optima
from opsched.demo import seed_graph
from opsched.heuristics.greedy import greedy
from opsched.importers import read_stg
from opsched.ir import Op, OpGraph
from opsched.liveness import peak_memory
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule
from opsched.validate import validate

# ---------------------------------------------------------------------- helpers


@st.composite
def random_dags(
    draw,
    max_ops: int = 9,
    min_ops: int = 0,
    durations=None,
    demands=None,
    memory: bool = False,
):
    """A random DAG (file order shuffled) and an independent networkx copy of its edges.

    ``demands``: a strategy for each op's demands mapping. ``memory``: random output sizes,
    workspaces, graph-output flags and persistent bytes.
    """
    if durations is None:
        durations = st.integers(0, 5)
    n = draw(st.integers(min_ops, max_ops))
    file_order = draw(st.permutations(range(n)))
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if draw(st.booleans())]
    preds: dict[int, list[str]] = {j: [] for j in range(n)}
    for i, j in edges:
        preds[j].append(f"v{i}")
    ops = []
    for r in file_order:
        kw = {}
        if demands is not None:
            kw["demands"] = draw(demands)
        if memory:
            kw["output_bytes"] = draw(st.integers(0, 9))
            kw["workspace_bytes"] = draw(st.integers(0, 4))
            kw["output"] = draw(st.booleans())
        ops.append(Op(f"v{r}", draw(durations), deps=tuple(preds[r]), **kw))
    persistent = draw(st.integers(0, 5)) if memory else 0
    nxg = nx.DiGraph()
    nxg.add_nodes_from(f"v{r}" for r in range(n))
    nxg.add_edges_from((f"v{i}", f"v{j}") for i, j in edges)
    return OpGraph(tuple(ops), persistent_bytes=persistent), nxg


def graph_from_edges(n: int, edges, durations=None) -> OpGraph:
    durations = durations or [1] * n
    ops = tuple(
        Op(f"v{j}", durations[j], deps=tuple(f"v{i}" for i, k in edges if k == j)) for j in range(n)
    )
    return OpGraph(ops)


def optimal_makespan(graph: OpGraph, caps: dict[str, int]) -> tuple[float, list[float]]:
    """Exact optimum by exhaustive serial schedule generation over every precedence-feasible
    order (each op at its earliest resource-feasible time). This enumerates all *active*
    schedules, which include an optimal one. Zero-duration ops hold nothing."""
    n = graph.num_ops
    d = graph.durations.tolist()
    preds = [[graph.index(p) for p in op.deps] for op in graph.ops]
    dem = [{r: op.demands.get(r, 0) for r in caps} for op in graph.ops]
    starts: list[float | None] = [None] * n
    best = [math.inf, None]

    def used_at(t: float, r: str) -> int:
        return sum(
            dem[u][r]
            for u in range(n)
            if starts[u] is not None and d[u] > 0 and starts[u] <= t < starts[u] + d[u]
        )

    def fits(t: float, v: int) -> bool:
        if d[v] == 0:
            return True
        points = [t] + [s for s in starts if s is not None and t < s < t + d[v]]
        return all(used_at(p, r) + dem[v][r] <= cap for p in points for r, cap in caps.items())

    def rec(count: int, makespan: float) -> None:
        if makespan >= best[0]:
            return
        if count == n:
            best[0], best[1] = makespan, list(starts)
            return
        for v in range(n):
            if starts[v] is not None or any(starts[p] is None for p in preds[v]):
                continue
            est = max((starts[p] + d[p] for p in preds[v]), default=0.0)
            ends = {s + d[u] for u, s in enumerate(starts) if s is not None}
            for t in sorted({est} | {e for e in ends if e > est}):
                if fits(t, v):
                    break
            starts[v] = t
            rec(count + 1, max(makespan, t + d[v]))
            starts[v] = None

    rec(0, 0.0)
    return best[0], best[1]


def test_brute_force_optimum_hand_values():
    # sanity of the exhaustive search: the seed graph takes its work 7 on one unit and its
    # critical path 6 on two; three unit ops on two units take 2
    assert optimal_makespan(seed_graph(), {"units": 1})[0] == 7.0
    assert optimal_makespan(seed_graph(), {"units": 2})[0] == 6.0
    assert optimal_makespan(graph_from_edges(3, []), {"units": 2})[0] == 2.0
    # v0 (1) -> v1 (3), v0 -> v2 (1) -> v3 (1) on two units: v1 beside v2 then v3,
    # 1 + max(3, 1 + 1) = 4
    g = graph_from_edges(4, [(0, 1), (0, 2), (2, 3)], [1, 3, 1, 1])
    assert optimal_makespan(g, {"units": 2})[0] == 4.0


@settings(max_examples=40, deadline=None)
@given(random_dags(max_ops=6, min_ops=1, durations=st.integers(0, 4)), st.integers(1, 3))
def test_brute_force_not_worse_than_greedy(case, k):
    g, _ = case
    p = Problem(g, Machine(units=k))
    assert optimal_makespan(g, {"units": k})[0] <= greedy(p).makespan
    assert optimal_makespan(g, {"units": k})[0] <= greedy(p, priority="b-level").makespan


# ---------------------------------------------------------------------- parallelism profile


def test_profile_seed():
    # unit ops: Input [0,1), Conv1 [1,2), BN and Conv2 [2,3), ReLU [3,4), Add, Output
    t, r = parallelism_profile(seed_graph())
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert r.tolist() == [1, 1, 2, 1, 1, 1, 0]


def test_profile_hand_example():
    # A(2) -> {B(3), C(1)} -> D(1), E(4) alone. ASAP: A [0,2), B [2,5), C [2,3), D [5,6),
    # E [0,4). Running: [0,2) A,E = 2; [2,3) B,C,E = 3; [3,4) B,E = 2; [4,5) B = 1;
    # [5,6) D = 1; then 0. A zero-duration op Z (after A) is not counted.
    g = OpGraph(
        (
            Op("A", 2),
            Op("B", 3, deps=("A",)),
            Op("C", 1, deps=("A",)),
            Op("D", 1, deps=("B", "C")),
            Op("E", 4),
            Op("Z", 0, deps=("A",)),
        )
    )
    t, r = parallelism_profile(g)
    assert t.tolist() == [0.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert r.tolist() == [2, 3, 2, 1, 1, 0]
    # integral 2*2 + 3*1 + 2*1 + 1*1 + 1*1 = 11 = work 2+3+1+1+4
    assert float(np.sum(np.diff(t) * r[:-1])) == 11.0 == g.work


def test_profile_only_zero_durations():
    t, r = parallelism_profile(OpGraph((Op("a", 0), Op("b", 0, deps=("a",)))))
    assert t.tolist() == [0.0]
    assert r.tolist() == [0]
    t, r = parallelism_profile(OpGraph(()))
    assert t.tolist() == [0.0]
    assert r.tolist() == [0]


@settings(max_examples=120, deadline=None)
@given(random_dags(max_ops=10))
def test_profile_random(case):
    g, nxg = case
    t, r = parallelism_profile(g)
    d = {op.name: op.duration for op in g.ops}
    # independent ASAP starts
    est: dict[str, float] = {}
    for v in nx.topological_sort(nxg):
        est[v] = max((est[u] + d[u] for u in nxg.predecessors(v)), default=0.0)
    positive_work = sum(x for x in d.values() if x > 0)
    assert float(np.sum(np.diff(t) * r[:-1])) == positive_work
    assert r[-1] == 0
    assert t[0] == 0.0
    assert np.all(np.diff(t) > 0)
    if positive_work:
        assert t[-1] == max(est[v] + d[v] for v in d)
    # at the midpoint of each interval, the count equals the number of ops running there
    for i in range(len(t) - 1):
        mid = (t[i] + t[i + 1]) / 2
        running = sum(1 for v in d if d[v] > 0 and est[v] <= mid < est[v] + d[v])
        assert r[i] == running


# ---------------------------------------------------------------------- serial ops


def brute_serial(g: OpGraph, nxg: nx.DiGraph) -> list[bool]:
    n = g.num_ops
    return [len(nx.ancestors(nxg, v)) + len(nx.descendants(nxg, v)) == n - 1 for v in g.names]


def test_serial_seed():
    g = seed_graph()
    # BN runs beside Conv2/ReLU; every other op has all others above or below it
    assert [n for n, s in zip(g.names, serial_ops(g), strict=True) if s] == [
        "Input",
        "Conv1",
        "Add",
        "Output",
    ]


@pytest.mark.parametrize("n", [1, 2, 5])
def test_serial_chain(n):
    g = graph_from_edges(n, [(i, i + 1) for i in range(n - 1)])
    assert serial_ops(g).tolist() == [True] * n


@pytest.mark.parametrize("n", [2, 3, 6])
def test_serial_fully_parallel(n):
    g = graph_from_edges(n, [])
    assert serial_ops(g).tolist() == [False] * n


def test_serial_single_and_empty():
    assert serial_ops(OpGraph((Op("a", 1),))).tolist() == [True]
    assert serial_ops(OpGraph(())).tolist() == []


def test_serial_diamond():
    # 0 -> {1, 2} -> 3: the fork and the join are serial, the branches are not
    g = graph_from_edges(4, [(0, 1), (0, 2), (1, 3), (2, 3)])
    assert serial_ops(g).tolist() == [True, False, False, True]


def test_serial_transitive_not_direct():
    # 0 -> 1 -> 2 and 0 -> 3 -> 2 and 3 -> 4 -> 2: 0 and 2 are serial through paths, 1 runs
    # beside 3 and 4
    g = graph_from_edges(5, [(0, 1), (1, 2), (0, 3), (3, 4), (4, 2)])
    assert serial_ops(g).tolist() == [True, False, True, False, False]


def test_serial_file_order_not_topological():
    # the chain c -> b -> a written backwards plus a parallel op x beside b only
    g = OpGraph(
        (
            Op("a", 1, deps=("b",)),
            Op("b", 1, deps=("c",)),
            Op("x", 1, deps=("c",)),
            Op("c", 1),
        )
    )
    # x is neither above nor below a or b: a and b are not serial; c is the common ancestor
    assert serial_ops(g).tolist() == [False, False, False, True]


@settings(max_examples=300, deadline=None)
@given(random_dags(max_ops=10))
def test_serial_brute_force(case):
    g, nxg = case
    assert serial_ops(g).tolist() == brute_serial(g, nxg)


# ---------------------------------------------------------------------- Amdahl


def test_amdahl_seed():
    g = seed_graph()
    a = amdahl(g, units=2)
    # serial ops Input, Conv1, Add, Output: 4 of the 7 unit-duration ops
    assert a.work == 7.0
    assert a.serial_work == 4.0
    assert a.serial_fraction == pytest.approx(4 / 7)
    assert a.critical_path == 6.0
    assert a.average_parallelism == pytest.approx(7 / 6)
    # 1 / (4/7 + (3/7)/2) = 1 / (4/7 + 3/14) = 14/11
    assert a.amdahl_speedup_bound == pytest.approx(1 / (4 / 7 + 3 / 14))
    assert a.amdahl_speedup_bound == pytest.approx(14 / 11)
    # the DAG caps it lower: work / critical path = 7/6
    assert a.speedup_bound == pytest.approx(7 / 6)
    # unlimited units: Amdahl gives 1/f = 7/4, the DAG still 7/6
    u = amdahl(g)
    assert u.amdahl_speedup_bound == pytest.approx(7 / 4)
    assert u.speedup_bound == pytest.approx(7 / 6)
    # one unit: 1 / (4/7 + 3/7) = 1
    assert amdahl(g, units=1).speedup_bound == pytest.approx(1.0)


def test_amdahl_fully_parallel():
    # four independent unit ops: nothing serial, f = 0, Amdahl alone is unbounded without a
    # unit limit, and work / critical path = 4
    g = graph_from_edges(4, [])
    a = amdahl(g)
    assert a.serial_fraction == 0.0
    assert a.amdahl_speedup_bound == math.inf
    assert a.speedup_bound == 4.0
    # on 3 units the unit count caps it: min(1/(0 + 1/3), 4, 3) = 3
    assert amdahl(g, units=3).speedup_bound == pytest.approx(3.0)


def test_amdahl_zero_work():
    a = amdahl(OpGraph((Op("a", 0),)), units=2)
    assert a.work == 0.0
    assert a.serial_fraction == 1.0
    assert a.average_parallelism == 1.0


def _optimum_cases():
    return random_dags(max_ops=6, min_ops=1, durations=st.integers(0, 4))


@settings(max_examples=80, deadline=None)
@given(_optimum_cases(), st.integers(1, 3))
def test_amdahl_is_an_upper_bound(case, k):
    g, _ = case
    if g.work == 0:
        return
    opt, starts = optimal_makespan(g, {"units": k})
    # the brute force itself produces a valid schedule
    p = Problem(g, Machine(units=k))
    assert validate(p, Schedule.build(p, starts, solver="brute")).valid
    a = amdahl(g, units=k)
    speedup = g.work / opt
    assert speedup <= a.speedup_bound + 1e-9
    assert speedup <= a.amdahl_speedup_bound + 1e-9


def test_amdahl_ops_without_units():
    # two unit-less ops (demands={}) on Machine(units=1) may both run at once: makespan 1,
    # work 2, speedup 2 - a valid schedule - but amdahl(units=1).speedup_bound is 1
    g = OpGraph((Op("a", 1, demands={}), Op("b", 1, demands={})))
    p = Problem(g, Machine(units=1))
    s = Schedule.build(p, {"a": 0, "b": 0}, solver="hand")
    assert validate(p, s).valid
    assert g.work / s.makespan <= amdahl(g, units=1).speedup_bound


# ---------------------------------------------------------------------- lower bounds


def test_lower_bounds_seed():
    g = seed_graph()
    lb = lower_bounds(g, units=2)
    # cp 6; work ceil(7/2) = 4; serial 4 + 3/2 = 5.5 -> 6
    assert (lb.critical_path, lb.work, lb.serial, lb.energy) == (6.0, 4.0, 6.0, {})
    assert lb.value == 6.0
    assert lb.binding == "critical_path"
    lb1 = lower_bounds(g, units=1)
    # one unit: work 7, serial 4 + 3 = 7
    assert (lb1.critical_path, lb1.work, lb1.serial) == (6.0, 7.0, 7.0)
    assert lb1.value == 7.0
    assert lb1.binding == "work"
    d = lb1.to_dict()
    assert d["value"] == 7.0
    assert d["binding"] == "work"
    # unlimited units: work and serial bounds are the serial work, 4
    lbu = lower_bounds(g)
    assert (lbu.critical_path, lbu.work, lbu.serial, lbu.value) == (6.0, 4.0, 4.0, 6.0)


def test_lower_bounds_rounding():
    # three independent unit ops on 2 units: work 3/2 = 1.5 rounds up to 2 (integer durations)
    lb = lower_bounds(graph_from_edges(3, []), units=2)
    assert (lb.critical_path, lb.work, lb.serial, lb.value) == (1.0, 2.0, 2.0, 2.0)
    # durations 0.5: not integral, no rounding: work 1.5 / 2 = 0.75
    lb = lower_bounds(graph_from_edges(3, [], [0.5, 0.5, 0.5]), units=2)
    assert (lb.critical_path, lb.work, lb.serial, lb.value) == (0.5, 0.75, 0.75, 0.75)
    # integral floats (2.0) still round
    lb = lower_bounds(graph_from_edges(3, [], [2.0, 2.0, 2.0]), units=4)
    assert lb.work == 2.0  # 6 / 4 = 1.5 -> 2
    assert lb.value == 2.0


def test_lower_bounds_energy():
    # three independent ops of duration 2 each using 2 of "bw" (capacity 3):
    # energy 3 * 2 * 2 / 3 = 4; on 4 units work 6/4 = 1.5 -> 2; cp 2
    ops = tuple(Op(f"o{i}", 2, demands={"units": 1, "bw": 2}) for i in range(3))
    g = OpGraph(ops, resources={"bw": 3})
    lb = lower_bounds(g, units=4)
    assert lb.energy == {"bw": 4.0}
    assert lb.value == 4.0
    assert lb.binding == "energy:bw"
    # explicit capacities override the graph's; a capacity of 0 is skipped
    assert lower_bounds(g, units=4, capacities={"bw": 6}).energy == {"bw": 2.0}
    assert lower_bounds(g, units=4, capacities={"bw": 0}).energy == {}
    # the true optimum: only one op at a time fits in bw (2 + 2 > 3), so 6 >= 4
    assert optimal_makespan(g, {"units": 4, "bw": 3})[0] == 6.0


def test_lower_bounds_units_demand():
    # two independent ops each holding 2 units, on 2 units: unit-work 2*1*2 = 4 over 2 = 2
    g = OpGraph(tuple(Op(f"o{i}", 1, demands={"units": 2}) for i in range(2)))
    lb = lower_bounds(g, units=2)
    assert lb.work == 2.0
    assert lb.value == 2.0 == optimal_makespan(g, {"units": 2})[0]


_DEMANDS = st.fixed_dictionaries({"units": st.integers(0, 2), "bw": st.integers(0, 3)})


@settings(max_examples=100, deadline=None)
@given(
    random_dags(max_ops=6, min_ops=1, durations=st.integers(0, 4), demands=_DEMANDS),
    st.integers(2, 3),
    st.integers(3, 5),
)
def test_lower_bounds_below_optimum(case, k, bw):
    g, _ = case
    caps = {"units": k, "bw": bw}
    opt, starts = optimal_makespan(g, caps)
    p = Problem(g, Machine(units=k, resources={"bw": bw}))
    assert validate(p, Schedule.build(p, starts, solver="brute")).valid
    lb = lower_bounds(g, units=k, capacities={"bw": bw})
    assert lb.value <= opt
    # integer durations: every part is an integer
    for part in [lb.critical_path, lb.work, lb.serial, *lb.energy.values()]:
        assert part == int(part)


@settings(max_examples=60, deadline=None)
@given(
    random_dags(max_ops=6, min_ops=1, durations=st.sampled_from([0.0, 0.5, 1.25, 2.5, 3.0])),
    st.integers(1, 3),
)
def test_lower_bounds_below_optimum_fractional(case, k):
    g, _ = case
    opt, _ = optimal_makespan(g, {"units": k})
    assert lower_bounds(g, units=k).value <= opt + 1e-9
    # unlimited units: the optimum is the critical path, which is the bound
    assert lower_bounds(g).value == pytest.approx(float(max(earliest_starts(g) + g.durations)))


def test_stg_rand0000():
    # 50 tasks, work 262: on 4 units ceil(262 / 4) = ceil(65.5) = 66 beats the critical path 55
    g = read_stg(dataset_path("stg/50/rand0000.stg"))
    assert g.work == 262.0
    lb = lower_bounds(g, units=4)
    assert lb.critical_path == 55.0
    assert lb.work == 66.0
    assert lb.value == 66.0
    assert lb.binding == "work"
    # the published optimum on 4 processors is 66: the bound is tight here
    assert stg_optima(4)["rand0000"] == (66, 66)


def test_stg50_bounds_below_published_optima():
    files = sorted(Path(dataset_path("stg/50")).glob("*.stg"))
    assert len(files) == 180
    graphs = {f.stem: read_stg(f) for f in files}
    for k in (2, 4, 8, 16):
        optima = stg_optima(k)
        assert set(optima) == set(graphs)
        for name, g in graphs.items():
            _lb, ub = optima[name]  # ub is the proven optimum (== lb where proven)
            assert lower_bounds(g, units=k).value <= ub, (name, k)


# ---------------------------------------------------------------------- memory bound


def test_memory_bound_docstring_example():
    # c reads a (4) and b (4), writes 2, uses 1 of workspace; persistent 10: 4+4+2+1+10 = 21
    g = OpGraph(
        (
            Op("a", 1, output_bytes=4),
            Op("b", 1, output_bytes=4),
            Op("c", 1, deps=("a", "b"), output_bytes=2, workspace_bytes=1),
        ),
        persistent_bytes=10,
    )
    assert min_memory_bound(g) == (
        21,
        "op 'c' (inputs 8 + output 2 + workspace 1 + persistent 10)",
    )


def chain_graph() -> OpGraph:
    # a (out 4) -> b (out 2, ws 3) -> c (out 1, graph output), persistent 5
    return OpGraph(
        (
            Op("a", 1, output_bytes=4),
            Op("b", 1, deps=("a",), output_bytes=2, workspace_bytes=3),
            Op("c", 1, deps=("b",), output_bytes=1, output=True),
        ),
        persistent_bytes=5,
    )


def test_memory_bound_chain_is_tight():
    g = chain_graph()
    # a: 4; b: inputs 4 + output 2 + ws 3 = 9; c: 2 + 1 = 3; the end: output 1.
    # max 9, plus persistent 5 = 14
    need, who = min_memory_bound(g)
    assert need == 14
    assert who == "op 'b' (inputs 4 + output 2 + workspace 3 + persistent 5)"
    # the only schedule of the chain reaches exactly that peak, during b
    assert peak_memory(g, np.array([0.0, 1.0, 2.0])) == 14


def test_memory_bound_outputs_at_end():
    # three independent graph outputs of 5, 6, 7 B: any single op needs at most 7, but all
    # three are live just before the makespan: 18, plus persistent 2 = 20
    g = OpGraph(
        tuple(Op(f"o{i}", 1, output_bytes=b, output=True) for i, b in enumerate([5, 6, 7])),
        persistent_bytes=2,
    )
    assert min_memory_bound(g) == (20, "the graph outputs held at the end (+ persistent 2)")
    # indeed a serial run on one unit peaks at 20 at the end
    assert peak_memory(g, np.array([0.0, 1.0, 2.0])) == 20


def test_memory_bound_output_with_consumer_not_held():
    # o is a graph output but has a consumer: it is freed when c ends, so only c's output
    # (1, not a graph output and not held) ... the need is op c: input 5 + output 1 = 6
    g = OpGraph(
        (
            Op("o", 1, output_bytes=5, output=True),
            Op("c", 1, deps=("o",), output_bytes=1),
        )
    )
    assert min_memory_bound(g) == (6, "op 'c' (inputs 5 + output 1 + workspace 0 + persistent 0)")


def test_memory_bound_zero_duration_ignored():
    # a zero-duration op holds nothing; with nothing else the bound is the persistent bytes
    g = OpGraph((Op("z", 0, output_bytes=100, workspace_bytes=50),), persistent_bytes=3)
    assert min_memory_bound(g) == (3, "persistent bytes")
    assert min_memory_bound(OpGraph((), persistent_bytes=10)) == (10, "persistent bytes")
    assert min_memory_bound(OpGraph(())) == (0, "persistent bytes")


def test_infeasibility_reason_names_op():
    g = chain_graph()
    reason = Problem(g, Machine(memory_cap=13)).infeasibility_reason()
    assert reason is not None
    assert "op 'b'" in reason
    assert "(14 B)" in reason
    assert "(13 B)" in reason
    # at the bound exactly, no reason
    assert Problem(g, Machine(memory_cap=14)).infeasibility_reason() is None
    outs = OpGraph(tuple(Op(f"o{i}", 1, output_bytes=4, output=True) for i in range(3)))
    reason = Problem(outs, Machine(memory_cap=11)).infeasibility_reason()
    assert reason is not None
    assert "graph outputs held at the end" in reason
    assert "(12 B)" in reason


@settings(max_examples=80, deadline=None)
@given(random_dags(max_ops=6, durations=st.integers(0, 3), memory=True))
def test_memory_bound_below_every_serial_order(case):
    g, nxg = case
    need, _ = min_memory_bound(g)
    d = {op.name: op.duration for op in g.ops}
    best = math.inf
    for order in itertools.islice(nx.all_topological_sorts(nxg), 720):
        t, starts = 0.0, {}
        for v in order:
            starts[v] = t
            t += d[v]
        arr = np.array([starts[n] for n in g.names], dtype=np.float64)
        best = min(best, peak_memory(g, arr))
    if g.num_ops == 0:
        best = g.persistent_bytes
    assert need <= best
    # the ASAP schedule on unlimited units is a valid schedule too
    if g.num_ops:
        assert need <= peak_memory(g, earliest_starts(g))
    # and a cap just below the bound is reported as infeasible
    if need > 0:
        assert Problem(g, Machine(units=None, memory_cap=need - 1)).infeasibility_reason(cut=True)
    assert Problem(g, Machine(units=None, memory_cap=need)).infeasibility_reason(cut=True) is None

"""The recorded scheduling loop (tab 1 of the demo page)."""

from __future__ import annotations

import random

import pytest

from opsched.demo import seed_problem
from opsched.demo_page.trace import layered_layout, trace_greedy
from opsched.errors import ProblemError
from opsched.heuristics import greedy
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem


def test_seed_on_two_units_step_by_step() -> None:
    # Worked by hand: Input 0-1, Conv1 1-2, then BN and Conv2 together on units 0 and 1,
    # ReLU 3-4, Add 4-5, Output 5-6.
    tr = trace_greedy(seed_problem(units=2))
    steps = tr["steps"]
    assert [s["t"] for s in steps] == [0, 1, 2, 3, 4, 5, 6]
    assert [[x["op"] for x in s["started"]] for s in steps] == [
        ["Input"], ["Conv1"], ["BN", "Conv2"], ["ReLU"], ["Add"], ["Output"], []
    ]  # fmt: skip
    assert [x["unit"] for x in steps[2]["started"]] == [0, 1]
    assert steps[3]["finished"] == ["BN", "Conv2"]
    # BN finishing leaves Add one dependency short; Conv2 releases ReLU
    assert {"from": "BN", "op": "Add", "indeg": 1} in steps[3]["released"]
    assert {"from": "Conv2", "op": "ReLU", "indeg": 0} in steps[3]["released"]
    assert steps[3]["indeg"]["Add"] == 1 and steps[3]["states"]["ReLU"] == "running"
    assert [s["next_t"] for s in steps] == [1, 2, 3, 4, 5, 6, None]
    assert steps[-1]["states"] == dict.fromkeys(tr["analysis"]["order"], "done")
    a = tr["analysis"]
    assert (a["serial"], a["critical_path"], tr["makespan"]) == (7, 6, 6)
    assert a["indeg"] == {"Input": 0, "Conv1": 1, "BN": 1, "Conv2": 1, "ReLU": 1, "Add": 2,
                          "Output": 1}  # fmt: skip


def test_one_unit_makes_a_ready_op_wait() -> None:
    tr = trace_greedy(seed_problem(units=1))
    at2 = tr["steps"][2]
    assert at2["ready"] == ["BN", "Conv2"] and at2["waiting"] == ["Conv2"]
    assert tr["makespan"] == 7
    running = [s["running"] for s in tr["steps"]]
    assert all(len(r) <= 1 for r in running)


def _random_graph(rng: random.Random, n: int) -> OpGraph:
    ops = []
    for i in range(n):
        deps = tuple(f"v{j}" for j in range(i) if rng.random() < 0.3)
        dur = rng.choice([0, 1, 1, 2, 3, 5])
        units = rng.choice([1, 1, 1, 0, 2])
        ops.append(Op(f"v{i}", dur, deps=deps, demands={"units": units}))
    return OpGraph(tuple(ops), name=f"rand{n}")


@pytest.mark.parametrize("seed", range(40))
def test_trace_matches_greedy_on_random_graphs(seed: int) -> None:
    rng = random.Random(seed)
    g = _random_graph(rng, rng.randint(1, 14))
    k = rng.choice([None, 2, 3])
    prio = rng.choice(["fifo", "b-level"])
    p = Problem(g, Machine(units=k))
    tr = trace_greedy(p, prio)  # raises if a start or unit differs from greedy's
    ref = greedy(p, priority=prio)
    assert tr["makespan"] == ref.makespan
    starts = {x["op"]: s["t"] for s in tr["steps"] for x in s["started"]}
    assert starts == ref.starts()
    for s in tr["steps"]:
        busy = sum(g[r["op"]].units for r in s["running"])
        assert k is None or busy <= k
        assert set(s["waiting"]) <= set(s["ready"]) | {x["op"] for x in s["released"]}


def test_zero_duration_op_releases_its_successor_in_the_same_step() -> None:
    g = OpGraph((Op("a", 1), Op("z", 0, deps=("a",)), Op("b", 2, deps=("z",))))
    tr = trace_greedy(Problem(g, Machine(units=1)))
    assert [[x["op"] for x in s["started"]] for s in tr["steps"]] == [["a"], ["z", "b"], []]
    assert tr["makespan"] == 3


def test_rejects_what_the_trace_cannot_show() -> None:
    g = OpGraph((Op("a", 1, output_bytes=4),))
    with pytest.raises(ProblemError, match="memory cap"):
        trace_greedy(Problem(g, Machine(units=1, memory_cap=8)))
    g = OpGraph((Op("a", 1, demands={"units": 1, "dma": 1}),), resources={"dma": 1})
    with pytest.raises(ProblemError, match="op 'a'"):
        trace_greedy(Problem(g, Machine(units=1)))
    with pytest.raises(ValueError, match="priority"):
        trace_greedy(seed_problem(units=1), "random")


def test_layout_columns_are_longest_paths() -> None:
    g = OpGraph((Op("a", 1), Op("b", 1, deps=("a",)), Op("c", 1, deps=("a", "b")), Op("d", 1)))
    assert layered_layout(g) == {"a": (0, 0), "b": (1, 0), "c": (2, 0), "d": (0, 1)}

"""Tests for opsched.demo: the seed's scheduling loop and the critical-path demo."""

from __future__ import annotations

import pytest

from opsched.demo import (
    critical_path_demo,
    critical_path_program,
    seed_demo,
    seed_graph,
    seed_problem,
)
from opsched.problem import Machine, Problem
from opsched.transforms import dependency_edges, program_order_chain
from opsched.validate import validate

SEED_ORDER = ["Input", "Conv1", "BN", "Conv2", "ReLU", "Add", "Output"]


def test_seed_graph_shape():
    g = seed_graph()
    # 7 unit ops, edges: Input->Conv1, Conv1->BN, Conv1->Conv2, Conv2->ReLU, BN->Add,
    # ReLU->Add, Add->Output = 7
    assert (g.num_ops, g.num_edges, g.work) == (7, 7, 7.0)
    assert g.names == SEED_ORDER
    assert [op.name for op in g.ops if op.output] == ["Output"]
    assert seed_graph([2] * 7).work == 14.0


@pytest.mark.parametrize("units", [None, 2])
def test_seed_demo_values(units):
    r = seed_demo(units)
    assert r["order"] == SEED_ORDER
    # serial: 7 unit ops one after another
    assert r["serial"] == 7.0
    # critical path: every op but BN, 6
    assert r["critical_path"] == 6.0
    assert r["critical_path_ops"] == ["Input", "Conv1", "Conv2", "ReLU", "Add", "Output"]
    # greedy reaches the critical path: BN runs beside Conv2 (2 units suffice)
    assert r["greedy"] == 6.0
    assert r["units"] == units
    sched = r["schedule"]
    assert sched.makespan == 6.0
    report = validate(seed_problem(units), sched)
    assert report.valid, report.summary()
    assert report.makespan == 6.0
    starts = {o.name: o.start for o in sched.ops}
    # BN and Conv2 both start right after Conv1, at 2
    assert starts["BN"] == starts["Conv2"] == 2.0
    assert starts["Output"] == 5.0


def test_seed_demo_one_unit():
    # one unit: nothing overlaps, greedy equals serial, 7
    r = seed_demo(1)
    assert r["greedy"] == 7.0
    assert r["serial"] == 7.0
    assert r["critical_path"] == 6.0
    assert validate(seed_problem(1), r["schedule"]).valid


def test_critical_path_program_shape():
    g = critical_path_program()
    assert g.names == ["A", "B", "C", "D", "E"]
    assert [op.deps for op in g.ops] == [()] * 5
    assert [op.reads for op in g.ops] == [(), ("a",), ("a",), ("b",), ("c",)]
    assert [op.name for op in g.ops if op.output] == ["D", "E"]


def test_critical_path_demo_values():
    r = critical_path_demo()
    # chain A..E of unit ops: 5; RAW only: A -> B -> D (or A -> C -> E): 3
    assert r["before"] == 5.0
    assert r["after"] == 3.0
    # (5 - 3) / 5 = 40 %
    assert r["speedup_percent"] == 40.0
    assert r["edges"] == ["A -> B", "A -> C", "B -> D", "C -> E"]
    assert r["edge_kinds"] == ["RAW"] * 4
    assert r["before_path"] == ["A", "B", "C", "D", "E"]
    assert r["after_path"] == ["A", "B", "D"]  # ties broken by file order: B before C
    assert r["schedule_before"].makespan == 5.0
    assert r["schedule_after"].makespan == 3.0


@pytest.mark.parametrize(("units", "after"), [(None, 3.0), (2, 3.0), (1, 5.0)])
def test_critical_path_demo_schedules_valid(units, after):
    r = critical_path_demo(units)
    program = critical_path_program()
    chain = program_order_chain(program)
    derived, _ = dependency_edges(program)
    rep_before = validate(Problem(chain, Machine(units=units)), r["schedule_before"])
    rep_after = validate(Problem(derived, Machine(units=units)), r["schedule_after"])
    assert rep_before.valid, rep_before.summary()
    assert rep_after.valid, rep_after.summary()
    assert rep_before.makespan == 5.0
    # on 2 units B runs beside C and D beside E: 3; on one unit nothing overlaps: 5
    assert rep_after.makespan == after
    # the after schedule is invalid for the chain (it overlaps ops the chain orders) unless
    # it is itself serial
    chain_check = validate(Problem(chain, Machine(units=units)), r["schedule_after"])
    assert chain_check.valid == (after == 5.0)

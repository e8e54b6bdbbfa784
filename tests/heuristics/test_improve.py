"""Tests of forward-backward justification (:mod:`opsched.heuristics.improve`)."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import numpy as np
import pytest

from opsched.datasets import dataset_path
from opsched.heuristics import greedy
from opsched.heuristics.improve import forward_place, justify, justify_arrays
from opsched.heuristics.listsched import list_schedule
from opsched.importers import read_stg
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule, Status
from opsched.solver import solve_brute_force
from opsched.validate import validate
from opsched.zoo.generators import gnp, layered


def _vary(g: OpGraph, seed: int) -> OpGraph:
    """Some ops of zero duration, some demanding no unit."""
    rng = random.Random(seed)
    ops = []
    for op in g.ops:
        ch: dict[str, Any] = {}
        if rng.random() < 0.1:
            ch["duration"] = 0.0
        if rng.random() < 0.1:
            ch["demands"] = {}
        ops.append(dataclasses.replace(op, **ch) if ch else op)
    return g.replace_ops(ops)


def _sources(p: Problem, seed: int) -> list[Schedule]:
    return [
        list_schedule(p),
        list_schedule(p, "lpt", "insertion"),
        list_schedule(p, "successors"),
        list_schedule(p, "random", seed=seed),
        list_schedule(p, "random", "insertion", seed=seed + 1),
        greedy(p, "fifo"),
    ]


def _check(p: Problem, s: Schedule) -> bool:
    """Justify ``s``; assert it is valid and no longer; True if strictly shorter."""
    j = justify(p, s)
    rep = validate(p, j)
    assert rep.valid, rep.summary()
    assert j.makespan is not None and s.makespan is not None
    assert j.makespan <= s.makespan + 1e-9
    if j is s:
        return False
    assert j.makespan < s.makespan - 1e-9  # a new object only when strictly better
    assert j.solver == f"{s.solver}+fbi" and j.info["fbi_rounds"] >= 1
    assert j.status == s.status
    return True


def test_hand_made_strict_improvement() -> None:
    # "successors" ranks the three independent ops equally, so file order decides:
    # a and b at 0 on the two units, c [4] after them at 2: makespan 6.
    # Backward pass on the reversed graph, latest end first (c, then a, b by index): c takes
    # reversed [0, 4) on unit 0, a [0, 2) and b [2, 4) on unit 1. Mapped back (6 - reversed
    # end, shifted to start at 0): c 0, a 2, b 0. Forward pass in that order (b before c
    # on the tie, by index): b [0, 2) on unit 0, c [0, 4) on unit 1, a [2, 4) on unit 0.
    # Makespan 4, the optimum.
    g = OpGraph((Op("a", 2), Op("b", 2), Op("c", 4)))
    p = Problem(g, Machine(units=2))
    s = list_schedule(p, "successors")
    assert s.makespan == 6.0
    j = justify(p, s)
    assert j.makespan == 4.0 == solve_brute_force(p).makespan
    assert {o.name: o.start for o in j.ops} == {"a": 2.0, "b": 0.0, "c": 0.0}
    # rounds counts the passes run: the first improves, the second finds nothing and stops
    assert j.solver == "list-successors+fbi" and j.info["fbi_rounds"] == 2
    assert validate(p, j).valid


def test_never_longer_on_random_graphs() -> None:
    improved = total = 0
    for seed in range(30):
        g = layered(35, seed=seed) if seed % 2 else gnp(30, 0.12, seed=seed)
        if seed % 3 == 0:
            g = _vary(g, seed)
        for k in (1, 2, 3, 4):
            p = Problem(g, Machine(units=k))
            for s in _sources(p, seed):
                improved += _check(p, s)
                total += 1
    assert total == 720 and improved > 20


def test_never_longer_on_stg_50() -> None:
    improved = 0
    for i in range(0, 180, 6):
        g = read_stg(dataset_path(f"stg/50/rand{i:04d}.stg"))
        for k in (2, 4, 8):
            p = Problem(g, Machine(units=k))
            for s in (list_schedule(p), list_schedule(p, "lpt", "insertion"), greedy(p, "fifo")):
                improved += _check(p, s)
    assert improved > 10


@pytest.mark.parametrize("seed", range(5))
def test_forward_place_never_moves_an_op_later(seed: int) -> None:
    g = layered(40, seed=seed)
    for k in (1, 2, 3):
        p = Problem(g, Machine(units=k))
        for s in _sources(p, seed):
            starts = np.array([o.start for o in s.ops])
            new, units = forward_place(p, starts)
            assert (new <= starts + 1e-9).all()
            assert validate(p, Schedule.build(p, new, units, solver="fwd")).valid


def test_justify_arrays_returns_a_valid_schedule_and_rounds() -> None:
    g = gnp(30, 0.1, seed=11)
    p = Problem(g, Machine(units=3))
    s = greedy(p, "fifo")
    starts, units, rounds = justify_arrays(p, np.array([o.start for o in s.ops]))
    new = Schedule.build(p, starts, units, solver="fbi")
    assert s.makespan is not None and new.makespan is not None
    assert validate(p, new).valid and new.makespan <= s.makespan
    assert 0 <= rounds <= 10
    # zero rounds allowed: only the forward pass
    s0, _, r0 = justify_arrays(p, np.array([o.start for o in s.ops]), max_rounds=0)
    assert r0 == 0 and float((s0 + g.durations).max()) <= s.makespan


def test_not_applicable_returns_the_input() -> None:
    g = OpGraph((Op("a", 2, output_bytes=4), Op("b", 2, output_bytes=4), Op("c", 4)))
    capped = Problem(g, Machine(units=2, memory_cap=100))
    s = list_schedule(capped, "successors")
    assert justify(capped, s) is s
    unlimited = Problem(g, Machine(units=None))
    s = list_schedule(unlimited)
    assert justify(unlimited, s) is s
    wide = OpGraph((Op("a", 2, demands={"units": 2}), Op("b", 1)))
    pw = Problem(wide, Machine(units=2))
    s = list_schedule(pw)
    assert justify(pw, s) is s
    empty = Schedule.empty(capped, solver="x", status=Status.UNKNOWN)
    assert justify(capped, empty) is empty

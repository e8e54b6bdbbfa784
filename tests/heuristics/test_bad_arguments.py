"""Bad arguments to the heuristics' Python functions: one clear exception naming the problem,
not a traceback from deep inside (an IndexError in a compiled kernel, numpy's broadcast error,
an AttributeError on a graph passed for its problem)."""

from __future__ import annotations

import numpy as np
import pytest

from opsched.demo import seed_problem
from opsched.errors import ProblemError, ScheduleFormatError
from opsched.heuristics import greedy
from opsched.heuristics.improve import justify
from opsched.heuristics.listsched import list_schedule
from opsched.heuristics.memory import min_memory_order
from opsched.heuristics.memory_list import memory_list
from opsched.heuristics.portfolio import portfolio
from opsched.heuristics.safe_list import safe_list
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule
from opsched.zoo.generators import layered


def test_memory_list_refuses_an_order_of_the_wrong_length():
    p = seed_problem(units=2)
    with pytest.raises(ProblemError, match="each of the 7 ops once"):
        memory_list(p, order=[0, 0, 1])


def test_safe_list_refuses_a_graph_for_its_problem():
    p = seed_problem(units=2)
    with pytest.raises(TypeError, match="safe_list takes a Problem"):
        safe_list(p.graph, min_memory_order(p))  # type: ignore[arg-type]


def test_justify_refuses_a_graph_and_another_graphs_schedule():
    p = seed_problem(units=2)
    with pytest.raises(TypeError, match="justify takes a Problem"):
        justify(p.graph, greedy(p))  # type: ignore[arg-type]
    other = Problem(OpGraph((Op("x", 1),)), Machine(units=1))
    with pytest.raises(ScheduleFormatError, match="does not schedule the ops"):
        justify(p, greedy(other))


def test_justify_reads_starts_by_name_not_by_position():
    # a schedule whose ops are listed in another order (a file's) is the same schedule
    p = Problem(layered(12, seed=0), Machine(units=2))
    s = list_schedule(p, "lpt", "earliest")
    shuffled = Schedule(s.graph, s.solver, s.status, list(reversed(s.ops)), s.machine,
                        s.makespan, s.peak_memory)  # fmt: skip
    a, b = justify(p, s), justify(p, shuffled)
    assert a.makespan == 39.0 < s.makespan
    assert b.starts() == a.starts()


def test_greedy_refuses_nan_priorities():
    p = seed_problem(units=2)
    with pytest.raises(ValueError, match="finite"):
        greedy(p, [np.nan] * p.graph.num_ops)


def test_portfolio_refuses_candidates_that_are_not_candidates():
    with pytest.raises(TypeError, match="sequence of Candidate"):
        portfolio(seed_problem(units=2), candidates="list")  # type: ignore[arg-type]

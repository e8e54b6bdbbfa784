"""Echoing a schedule or a front in a notebook prints a line, not every op."""

from __future__ import annotations

from opsched.heuristics import greedy
from opsched.problem import Machine, Problem
from opsched.zoo.generators import layered


def test_schedule_repr_is_one_line_whatever_the_graph_size() -> None:
    g = layered(2000, seed=0)
    s = greedy(Problem(g, Machine(units=4)))
    text = repr(s)
    assert "\n" not in text and len(text) < 200, text
    assert text.startswith("<Schedule ") and text.endswith("; 2000 ops>")
    assert f"makespan {s.makespan:g}" in text

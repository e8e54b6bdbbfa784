"""The pipeline heuristic's lower bound."""

from __future__ import annotations

from opsched.pipeline.heuristic import pipeline_heuristic


def test_the_heuristics_bound_holds_for_every_assignment_unless_one_is_given():
    # its balanced partition [0, 0, 1, 1] ends at 5, another ([0, 0, 0, 1]) at 4: the bound of
    # its own assignment (5) had claimed a gap of 0
    from opsched.ir import Op, OpGraph
    from opsched.pipeline.cpsat import pipeline_cpsat
    from opsched.problem import Machine, Problem

    g = OpGraph((Op("o0", 1, output_bytes=4), Op("o1", 2, deps=("o0",), output_bytes=4),
                 Op("o2", 1, deps=("o1",), output_bytes=2),
                 Op("o3", 1, deps=("o0",), output_bytes=3)))  # fmt: skip
    p = Problem(g, Machine(units=3))
    h = pipeline_heuristic(p, 2, 2)
    c = pipeline_cpsat(p, 2, 2, formulation="unrolled", time_limit=5)
    assert c.schedule.status.value == "OPTIMAL" and c.schedule.makespan == 4
    assert h.schedule.makespan == 5 and h.schedule.lower_bound <= 4
    fixed = pipeline_heuristic(p, 2, 2, assignment=[0, 0, 1, 1])  # that assignment's problem
    assert fixed.schedule.lower_bound == 5 == fixed.schedule.makespan

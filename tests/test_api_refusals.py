"""The Python API refuses what it would get wrong: orders for units the machine lacks, graphs
that skip their read-after-write edges, unusable worker counts and start times."""

from __future__ import annotations

import pytest

import opsched
from opsched.errors import ProblemError, ScheduleFormatError
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem


def _three(units: int = 1) -> Problem:
    return Problem(OpGraph((Op("a", 2), Op("b", 1), Op("c", 1))), Machine(units=units))


def test_orders_for_more_units_than_the_machine_has_are_refused() -> None:
    p = _three(units=1)
    with pytest.raises(ScheduleFormatError, match=r"unit 1, but the machine has 1 unit"):
        opsched.execute_orders(p, [["a"], ["b"], ["c"]])  # was FEASIBLE with makespan 2
    with pytest.raises(ScheduleFormatError, match=r"unit 5, but the machine has 1 unit"):
        opsched.execute_orders(p, {0: ["a", "b"], 5: ["c"]})
    with pytest.raises(ScheduleFormatError, match=r"not an index"):
        opsched.execute_orders(p, {-1: ["a", "b", "c"]})
    s = opsched.execute_orders(p, [["a", "b", "c"]])
    assert s.makespan == 4.0 and opsched.validate(p, s).valid


def test_orders_refuse_durations_they_cannot_use() -> None:
    p = _three(units=2)
    with pytest.raises(ScheduleFormatError, match=r"not in the graph: \['zz'\]"):
        opsched.execute_orders(p, [["a"], ["b", "c"]], {"zz": 3})
    with pytest.raises(ScheduleFormatError, match=r"2 entries, the graph 3 ops"):
        opsched.execute_orders(p, [["a"], ["b", "c"]], [1.0, 2.0])
    with pytest.raises(ScheduleFormatError, match=r"op 'b' must be finite and >= 0, got nan"):
        opsched.execute_orders(p, [["a"], ["b", "c"]], [1.0, float("nan"), 1.0])
    s = opsched.execute_orders(p, [["a"], ["b", "c"]], {"b": 3})
    assert s.makespan == 4.0  # b 0-3, c 3-4 on unit 1; a 0-2 on unit 0


def test_an_op_holding_two_units_is_checked_after_a_replay() -> None:
    g = OpGraph((Op("w", 2, demands={"units": 2}), Op("x", 1)))
    p = Problem(g, Machine(units=2))
    s = opsched.execute_orders(p, [["w"], ["x"]])  # x beside w: three units in use
    assert s.status is opsched.Status.UNKNOWN and "break the problem" in s.info["reason"]


def test_a_graph_built_in_program_form_needs_its_edges_derived() -> None:
    g = OpGraph((Op("A", 1, writes=("x",)), Op("B", 1, reads=("x",))))
    with pytest.raises(ProblemError, match=r"op 'B': reads buffer 'x', written by op 'A'"):
        Problem(g, Machine(units=2))  # greedy had run A and B together: makespan 1
    p = Problem(opsched.derive_deps(g), Machine(units=2))
    assert opsched.greedy(p).makespan == 2.0
    # an edge implied through other ops is enough (the naive program order chains them)
    chain = OpGraph((Op("A", 1, writes=("x",)), Op("M", 1, deps=("A",)),
                     Op("B", 1, reads=("x",), deps=("M",))))  # fmt: skip
    assert Problem(chain, Machine(units=2)).graph is chain
    # renaming removes write-after-read edges, never read-after-write ones: accepted
    renamed, _ = opsched.rename_buffers(g)
    Problem(renamed, Machine(units=2))


@pytest.mark.parametrize("workers", [0, -1, 2.5, "2", True])
def test_worker_counts_are_checked_before_cpsat_sees_them(workers) -> None:
    p = _three(units=2)
    with pytest.raises(ProblemError, match=r"num_workers must be an integer >= 1"):
        opsched.solve_cpsat(p, num_workers=workers)


def test_start_times_must_be_finite() -> None:
    p = _three(units=2)
    with pytest.raises(ScheduleFormatError, match=r"op 'b': start time must be finite, got nan"):
        opsched.Schedule.build(p, [0.0, float("nan"), 2.0], solver="hand")


def test_registry_refuses_options_it_would_drop() -> None:
    p = _three(units=2)
    with pytest.raises(ProblemError, match=r"unknown option 'time_limt'"):
        opsched.registry.run("greedy", p, time_limt=2)
    with pytest.raises(ProblemError, match=r"a heuristic minimises the makespan, not peak_memory"):
        opsched.registry.run("list", p, objective="peak_memory")
    assert opsched.registry.run("list", p, time_limit=2, objective="makespan").makespan == 2.0


def test_bounds_refuse_unit_counts_and_horizons_no_machine_has() -> None:
    from opsched.analysis import amdahl, latest_starts, slack

    g = opsched.seed_graph()  # critical path 6
    for bad in (0, -2, 1.5):
        with pytest.raises(ProblemError, match="units must be a positive integer"):
            opsched.lower_bounds(g, units=bad)
        with pytest.raises(ProblemError, match="units must be a positive integer"):
            amdahl(g, units=bad)
    with pytest.raises(ProblemError, match=r"critical path \(6\), got 2"):
        slack(g, horizon=2)  # was a list of negative slacks
    with pytest.raises(ProblemError, match="got nan"):
        latest_starts(g, horizon=float("nan"))
    assert slack(g, horizon=8).min() == 2.0


def test_noise_spreads_are_bounded_and_per_op_names_checked() -> None:
    from opsched.dynamic.noise import Lognormal
    from opsched.dynamic.robust import expected_makespan

    with pytest.raises(ProblemError, match=r"must be a number in \[0, 5\], got 50"):
        Lognormal(50)  # every draw underflowed: makespans of 0
    p = _three(units=2)
    with pytest.raises(ProblemError, match=r"not in the graph: \['typo'\]"):
        expected_makespan(p, "greedy", Lognormal(0.1, per_op={"typo": 0.5}), runs=5)


def test_graph_files_refuse_repeated_keys_and_nameless_resources(tmp_path) -> None:
    from opsched.errors import GraphError, InputError

    dup = tmp_path / "dup.json"
    dup.write_text('{"ops": [{"name": "a", "duration": 1, "duration": 2}]}')
    with pytest.raises(InputError, match="the key 'duration' appears twice"):
        opsched.read_graph(dup)  # read as duration 2 before, without a word
    with pytest.raises(GraphError, match="resource names must be non-empty"):
        OpGraph((Op("a", 1),), resources={"": 3})


def test_a_graph_and_its_problem_mixed_up_get_a_clear_type_error() -> None:
    from opsched.dynamic.robust import expected_makespan

    p = Problem(opsched.seed_graph(), Machine(units=2))
    with pytest.raises(TypeError, match="greedy takes a Problem, got OpGraph"):
        opsched.greedy(p.graph)
    with pytest.raises(TypeError, match=r"critical_path takes an OpGraph, got Problem"):
        opsched.critical_path(p)
    with pytest.raises(TypeError, match="the other way round"):
        opsched.simulate(opsched.greedy(p), p)
    with pytest.raises(TypeError, match=r"one Op: OpGraph\(\(op,\)\)"):
        OpGraph(Op("a", 1))
    with pytest.raises(TypeError, match="noise must be a noise model"):
        expected_makespan(p, "greedy", 0.1)


def test_the_serial_check_reads_sizes_as_a_machine_does() -> None:
    g = opsched.seed_graph()
    assert opsched.serial_cap_check(g, "1GiB").fits is True
    with pytest.raises(ProblemError, match="size must be >= 0"):
        opsched.serial_cap_check(g, -1)  # was fits=False, as if refuted

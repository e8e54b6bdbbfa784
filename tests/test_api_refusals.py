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


# ---- arguments of the wrong kind or value, refused at the entry point ---------------------


def _graph_and_problem() -> tuple[OpGraph, Problem]:
    g = opsched.seed_graph()
    return g, Problem(g, Machine(units=2))


@pytest.mark.parametrize(
    "entry",
    [
        "opsched.heuristics.listsched.list_schedule",
        "opsched.heuristics.portfolio.portfolio",
        "opsched.heuristics.lns.lns",
        "opsched.heuristics.memory_list.memory_list",
        "opsched.heuristics.memory.min_memory",
        "opsched.heuristics.memory.inductor_memory",
        "opsched.heuristics.memory.xla_memory",
        "opsched.solver.pareto_front",
    ],
)
def test_schedulers_given_a_graph_say_they_take_a_problem(entry: str) -> None:
    import importlib

    module, _, name = entry.rpartition(".")
    fn = getattr(importlib.import_module(module), name)
    g, _ = _graph_and_problem()
    with pytest.raises(TypeError, match=rf"{name} takes a Problem, got OpGraph"):
        fn(g)


def test_replays_and_simulations_check_their_arguments(tmp_path) -> None:
    g, p = _graph_and_problem()
    s = opsched.greedy(p)
    with pytest.raises(TypeError, match=r"execute_orders\(problem, orders\) takes a Problem"):
        opsched.execute_orders(g, [list(g.names)])
    with pytest.raises(TypeError, match="schedule must be a Schedule, got NoneType"):
        opsched.simulate(p, None)
    with pytest.raises(TypeError, match="schedule must be a Schedule, got dict"):
        opsched.simulate(p, s.to_dict())
    with pytest.raises(TypeError, match=r"write_graph_json\(graph, path\) takes an OpGraph"):
        opsched.write_graph_json("x", tmp_path / "g.json")  # type: ignore[arg-type]
    assert not (tmp_path / "g.json").exists()


@pytest.mark.parametrize(
    ("entry", "name"),
    [
        (lambda p: opsched.topological_order(p), "topological_order"),
        (lambda p: opsched.earliest_starts(p), r"earliest_starts \(t_level\)"),
        (lambda p: opsched.t_level(p), r"earliest_starts \(t_level\)"),
        (lambda p: opsched.latest_starts(p), "latest_starts"),
        (lambda p: opsched.slack(p), "slack"),
        (lambda p: opsched.b_level(p), "b_level"),
        (lambda p: opsched.parallelism_profile(p), "parallelism_profile"),
        (lambda p: opsched.min_memory_bound(p), "min_memory_bound"),
        (lambda p: opsched.lower_bounds(p, 2), "lower_bounds"),
        (lambda p: opsched.derive_deps(p), "derive_deps"),
        (lambda p: opsched.dependency_edges(p), "dependency_edges"),
    ],
)
def test_graph_functions_given_a_problem_point_at_its_graph(entry, name: str) -> None:
    _, p = _graph_and_problem()
    with pytest.raises(TypeError, match=rf"{name} takes an OpGraph, got Problem .*problem.graph"):
        entry(p)


def test_solve_cpsat_checks_params_flags_and_progress() -> None:
    _, p = _graph_and_problem()
    for params in ({"num_workers": 2}, "fast"):
        with pytest.raises(TypeError, match="solve_cpsat takes a Params as params, got"):
            opsched.solve_cpsat(p, params=params)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"progress must be a function .* got True"):
        opsched.solve_cpsat(p, progress=True)  # type: ignore[arg-type]
    with pytest.raises(ProblemError, match="hint must be True or False, got 'x'"):
        opsched.solve_cpsat(p, hint="x")  # type: ignore[arg-type]
    with pytest.raises(ProblemError, match="deterministic must be True or False, got 'no'"):
        opsched.solve_cpsat(p, deterministic="no")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="progress must be a function"):
        opsched.registry.run("lns", p, progress="yes", time_limit=1)


@pytest.mark.parametrize("seed", ["a", 1.5, -1, True, None])
def test_seeds_must_be_whole_numbers_of_zero_or_more(seed) -> None:
    from opsched.heuristics.listsched import list_schedule
    from opsched.heuristics.portfolio import portfolio

    _, p = _graph_and_problem()
    msg = "seed must be a non-negative integer, got"
    if seed is None:  # through the registry, None is the scheduler's own default seed
        assert opsched.registry.run("list-random", p, seed=seed).has_schedule
    else:
        with pytest.raises(ProblemError, match=msg):
            opsched.registry.run("list-random", p, seed=seed)
    with pytest.raises(ProblemError, match=msg):
        portfolio(p, seed=seed)
    with pytest.raises(ProblemError, match=msg):
        list_schedule(p, "random", seed=seed)


@pytest.mark.parametrize("noise", [-1, "x", float("nan"), float("inf"), True])
def test_portfolio_noise_is_a_finite_spread(noise) -> None:
    from opsched.heuristics.portfolio import portfolio

    _, p = _graph_and_problem()
    with pytest.raises(ProblemError, match="noise must be a finite number >= 0, got"):
        opsched.registry.run("portfolio", p, noise=noise)
    with pytest.raises(ProblemError, match="noise must be a finite number >= 0, got"):
        portfolio(p, noise=noise)


@pytest.mark.parametrize("gpu", [None, 100, ["T4"]])
def test_cost_model_gpu_names_must_be_strings(gpu) -> None:
    from opsched.cost import load_profile
    from opsched.cost.apply import apply

    g, _ = _graph_and_problem()
    with pytest.raises(TypeError, match="a GPU name must be a str, got"):
        load_profile(gpu)
    with pytest.raises(TypeError, match="a GPU name must be a str, got"):
        apply(g, gpu)


def test_cost_model_checks_what_it_prices() -> None:
    from opsched.cost import load_profile
    from opsched.cost.apply import apply

    _, p = _graph_and_problem()
    with pytest.raises(TypeError, match=r"apply\(graph, gpu\) takes an OpGraph, got Problem"):
        apply(p, "T4")  # type: ignore[arg-type]
    prof = load_profile("T4")
    shape = {"rows": 1024, "cols": 1024}
    with pytest.raises(ValueError, match=r"unknown timing method 'foo'; known: .*cupti"):
        prof.predict("softmax", shape, method="foo")
    with pytest.raises(TypeError, match=r"attrs must be a mapping of shape attrs.*got list"):
        prof.predict("softmax", [1, 2])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="predict takes an Op or a kind name, got int"):
        prof.predict(3, shape)
    assert prof.predict("softmax", shape, method="events") > 0


def test_numpy_integers_count_as_integers() -> None:
    import numpy as np

    from opsched.zoo import build_model

    m = Machine(units=np.int64(2), resources={"r": np.int64(3)})
    assert m.units == 2 and type(m.units) is int and type(m.resources["r"]) is int
    assert m.to_dict() == Machine(units=2, resources={"r": 3}).to_dict()
    g = build_model("gpt2_block", batch=np.int64(2))
    assert g.attrs["batch"] == 2 and type(g.attrs["batch"]) is int
    with pytest.raises(ProblemError, match="units must be a positive integer, got True"):
        Machine(units=True)
    _, p = _graph_and_problem()
    a = opsched.registry.run("list-random", p, seed=np.int64(3))  # a NumPy seed is taken
    assert a.makespan == opsched.registry.run("list-random", p, seed=3).makespan


@pytest.mark.parametrize(
    ("kwargs", "msg"),
    [
        ({"max_deps": 0}, "max_deps must be an integer >= 1, got 0"),
        ({"max_duration": 0}, "max_duration must be an integer >= 1, got 0"),
        ({"max_duration": 1.5}, "max_duration must be an integer >= 1, got 1.5"),
        ({"max_size": 0}, "max_size must be an integer >= 1, got 0"),
        ({"size_unit": 0}, "size_unit must be an integer >= 1, got 0"),
        ({"layers": 0}, "layers must be an integer >= 1, got 0"),
        ({"workspace_prob": 2}, r"workspace_prob must be in \[0, 1\], got 2"),
        ({"workspace_prob": float("nan")}, r"workspace_prob must be in \[0, 1\], got nan"),
        ({"seed": -1}, "seed must be a non-negative integer, got -1"),
        ({"ops": 1.5}, "ops must be an integer >= 1, got 1.5"),
    ],
)
def test_the_layered_generator_checks_its_arguments(kwargs, msg: str) -> None:
    from opsched.zoo import layered

    with pytest.raises(ProblemError, match=msg):
        layered(**{"ops": 10, **kwargs})


def test_the_layered_generator_still_draws_the_same_graphs() -> None:
    import numpy as np

    from opsched.zoo import layered

    g = layered(30, layers=6, seed=1)
    assert g.to_dict() == layered(np.int64(30), layers=6, seed=np.int64(1)).to_dict()


def test_names_and_lists_where_one_name_belongs() -> None:
    from opsched.zoo import build_model

    _, p = _graph_and_problem()
    with pytest.raises(TypeError, match=r"a solver name must be a str, got list \['cpsat'\]"):
        opsched.registry.run(["cpsat"], p)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"a model name must be a str, got list \['resnet50'\]"):
        build_model(["resnet50"])  # type: ignore[arg-type]
    with pytest.raises(ProblemError, match=r"unknown dtype \['float16'\]"):
        build_model("gpt2_block", dtype=["float16"])  # type: ignore[arg-type]


def test_minor_arguments_get_their_own_messages() -> None:
    from opsched.errors import GraphError

    g, p = _graph_and_problem()
    with pytest.raises(TypeError, match="ops must be a sequence of Op, got NoneType"):
        OpGraph(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="priority must be 'fifo', 'b-level' or one number"):
        opsched.greedy(p, None)  # type: ignore[arg-type]
    with pytest.raises(ProblemError, match="capacity of resource 'r' must be an integer >= 0"):
        opsched.lower_bounds(g, 2, capacities={"r": "x"})  # type: ignore[dict-item]
    for bad in (1, ""):
        with pytest.raises(ProblemError, match="resource names must be non-empty strings"):
            Machine(resources={bad: 2})  # type: ignore[dict-item]
    assert isinstance(ProblemError("x"), ValueError) and issubclass(GraphError, ValueError)


@pytest.mark.parametrize("name", [None, 3])
def test_a_graph_name_must_be_a_string(name) -> None:
    from opsched.errors import GraphError

    with pytest.raises(GraphError, match=f"graph name must be a string, got {name!r}"):
        OpGraph((Op("a", 1),), name=name)

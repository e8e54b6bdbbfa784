"""Tests of :mod:`opsched.registry` and its CLI faces (`opsched solvers`, `opsched solve`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.datasets import dataset_path
from opsched.errors import ProblemError
from opsched.heuristics import greedy, serial
from opsched.heuristics.listsched import list_schedule
from opsched.heuristics.portfolio import portfolio
from opsched.importers import read_graph
from opsched.problem import Machine, Problem
from opsched.registry import SOLVERS, get_solver, run
from opsched.schedule import Status
from opsched.validate import validate

HEURISTICS = ("serial", "greedy", "list", "portfolio", "lns", "heft")
GRAPH = dataset_path("stg/50/rand0000.stg")


@pytest.fixture(scope="module")
def problem() -> Problem:
    return Problem(read_graph(GRAPH), Machine(units=4))


def test_registry_has_the_heuristic_family() -> None:
    for name in (*HEURISTICS, "greedy-blevel", "list-cpop", "list-tlevel", "list-lpt",
                 "list-successors", "list-random", "list-memory"):  # fmt: skip
        assert name in SOLVERS and not SOLVERS[name].exact
        assert get_solver(name).name == name
    assert SOLVERS["cpsat"].exact and SOLVERS["brute-force"].exact


def test_unknown_solver_lists_the_known_ones() -> None:
    with pytest.raises(ProblemError) as e:
        get_solver("astar")
    for name in HEURISTICS:
        assert name in str(e.value)


def test_registry_entries_run_what_they_say(problem: Problem) -> None:
    same = {
        "serial": serial(problem),
        "greedy": greedy(problem, "fifo"),
        "greedy-blevel": greedy(problem, "b-level"),
        "list": list_schedule(problem),
        "heft": list_schedule(problem, "heft", "insertion"),
        "list-cpop": list_schedule(problem, "cpop"),
        "list-tlevel": list_schedule(problem, "t-level"),
        "list-lpt": list_schedule(problem, "lpt"),
        "list-successors": list_schedule(problem, "successors"),
        "list-memory": list_schedule(problem, "b-level", "memory"),
        "portfolio": portfolio(problem),
    }
    for name, ref in same.items():
        got = run(name, problem)
        assert got.solver == ref.solver, name
        assert [o.start for o in got.ops] == [o.start for o in ref.ops], name
        assert validate(problem, got).valid, name


def test_options_reach_the_heuristics(problem: Problem) -> None:
    a = run("list-random", problem, seed=5)
    assert [o.start for o in a.ops] == [o.start for o in run("list-random", problem, seed=5).ops]
    ref = list_schedule(problem, "random", seed=5)
    assert [o.start for o in a.ops] == [o.start for o in ref.ops]
    noisy = run("portfolio", problem, noise=0.05, seed=2)
    assert noisy.info["noise"] == 0.05 and noisy.info["seed"] == 2
    s = run("lns", problem, time_limit=0.3, seed=4, objective="makespan")  # extra options ignored
    assert s.solver == "lns" and validate(problem, s).valid


def test_every_heuristic_reports_its_registry_name(problem: Problem) -> None:
    for name, info in SOLVERS.items():
        if not info.exact and name != "lns":
            assert run(name, problem).solver == name


# ----------------------------------------------------------------------------- CLI


def test_cli_solvers_lists_the_family() -> None:
    r = CliRunner().invoke(main, ["solvers"])
    assert r.exit_code == 0
    names = [line.split()[0] for line in r.output.splitlines() if line.strip()]
    for name in HEURISTICS:
        assert name in names
    row = next(line for line in r.output.splitlines() if line.startswith("heft "))
    assert "heuristic" in row and "insertion" in row
    r = CliRunner().invoke(main, ["solvers", "--json"])
    data = json.loads(r.output)
    assert r.exit_code == 0 and set(HEURISTICS) <= set(data)
    assert data["cpsat"]["exact"] is True and data["list"]["exact"] is False


@pytest.mark.parametrize("name", HEURISTICS)
def test_cli_solve_with_each_heuristic(name: str, problem: Problem, tmp_path: Path) -> None:
    out = tmp_path / f"{name}.json"
    args = ["solve", str(GRAPH), "--solver", name, "-k", "4", "--json", "-o", str(out)]
    if name == "lns":
        args += ["--time-limit", "0.5"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["status"] == Status.FEASIBLE and data["machine"]["units"] == 4
    if name == "lns":
        assert data["solver"] == "lns" and data["makespan"] <= portfolio(problem).makespan
    else:
        assert data["makespan"] == run(name, problem).makespan
    # the written schedule passes `opsched validate`
    v = CliRunner().invoke(main, ["validate", str(GRAPH), str(out), "-k", "4"])
    assert v.exit_code == 0, v.output
    assert json.loads(out.read_text())["makespan"] == data["makespan"]


def test_cli_solve_text_output_and_unknown_solver(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["solve", str(GRAPH), "--solver", "list", "-k", "2"])
    assert r.exit_code == 0 and "FEASIBLE" in r.output
    out = tmp_path / "s.json"
    r = CliRunner().invoke(main, ["solve", str(GRAPH), "--solver", "nope", "-o", str(out)])
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [r.output.strip()]  # one line
    assert "unknown solver 'nope'" in r.output and "portfolio" in r.output
    assert not out.exists()

"""``opsched validate GRAPH SCHEDULE``: check a schedule file against a graph with the
independent validator (:func:`opsched.validate.validate`); exit 0 if valid, 1 with the
violations if not, 2 for input it cannot read.

Examples
--------
>>> from click.testing import CliRunner
>>> from opsched.cli import main
>>> r = CliRunner().invoke(main, ["validate", "--help"])
>>> r.exit_code, "Check SCHEDULE against GRAPH" in r.output
(0, True)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from opsched._clikit import (
    EXIT_INVALID,
    _emit_json,
    _machine,
    cap_option,
    check_resource_names,
    handle_errors,
    json_option,
    res_option,
    units_option,
)
from opsched.errors import ProblemError

__all__ = ["register", "validate"]


@click.command("validate")
@click.argument("graph", type=click.Path(path_type=Path))
@click.argument("schedule", type=click.Path(path_type=Path))
@units_option
@cap_option
@res_option
@json_option
@handle_errors
def validate(
    graph: Path,
    schedule: Path,
    units: int | None,
    memory_cap: str | None,
    resources: str | None,
    as_json: bool,
) -> None:
    """Check SCHEDULE against GRAPH; exit 0 if valid, 1 with the violations if not.

    The machine defaults to the one recorded in the schedule file, but a recorded capacity
    may not loosen one the graph itself sets (a PSPLIB file's): pass --resources to check
    against a larger machine. A line on stderr names the machine checked against.
    """
    from opsched.importers import read_graph
    from opsched.problem import Problem
    from opsched.schedule import read_schedule
    from opsched.validate import validate as check

    g = read_graph(graph)
    sched = read_schedule(schedule)  # its errors name the file
    recorded = sched.machine or {}
    if units is None:
        units = recorded.get("units")
        if units is not None and (
            isinstance(units, bool) or not isinstance(units, int) or units < 1
        ):
            raise ProblemError(f"{schedule}: machine.units must be a positive integer")
    from opsched.problem import Machine

    cli_machine = _machine(units, memory_cap, resources)  # options first: errors name them
    check_resource_names(g, cli_machine.resources, str(graph))
    try:
        recorded_machine = Machine(
            units=units,
            resources=dict(recorded.get("resources") or {}),
            memory_cap=recorded.get("memory_cap"),
        )
    except ProblemError as e:
        raise e.located(f"{schedule}: machine") from None
    for res, cap in recorded_machine.resources.items():
        own = g.resources.get(res)
        if own is not None and cap > own and res not in cli_machine.resources:
            raise ProblemError(
                f"machine.resources records {res} = {cap}, above the graph's own capacity "
                f"{own}; pass --resources {res}={cap} to check against that machine",
                str(schedule),
            )
    machine = Machine(
        units=units,
        resources={**recorded_machine.resources, **cli_machine.resources},
        memory_cap=cli_machine.memory_cap
        if memory_cap is not None
        else recorded_machine.memory_cap,
    )
    problem = Problem(g, machine)
    if not sched.ops and g.num_ops:
        raise ProblemError(
            f"{schedule}: no schedule to check (status {sched.status.value}, no ops)"
        )
    report = check(problem, sched)
    # an unrolled pipeline (``opsched pipeline --graph-out``) also keeps each op on its own
    # stage's units, which the capacities alone do not enforce
    from opsched.pipeline.model import stage_violations

    try:
        report.violations += stage_violations(problem, sched)
    except ProblemError as e:
        raise e.located(str(graph)) from None
    if as_json:
        _emit_json(report.to_dict() | {"machine": problem.machine_record()})
    else:
        click.echo(report.summary())
        click.echo(f"checked on: {_machine_words(problem)}", err=True)
    sys.exit(0 if report.valid else EXIT_INVALID)


def _machine_words(problem: Any) -> str:
    """The machine a schedule was checked on, in words: units, capacities, memory cap."""
    units = problem.machine.units
    parts = [f"{units} units" if units is not None else "unlimited units"]
    parts += [f"{r} {c}" for r, c in problem.capacities.items() if r != "units" and c is not None]
    cap = problem.memory_cap
    parts.append(f"memory cap {cap} B" if cap is not None else "no memory cap")
    return ", ".join(parts)


def register(main: click.Group) -> None:
    """Add ``validate`` to the ``opsched`` group."""
    main.add_command(validate)

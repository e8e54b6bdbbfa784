"""The solving commands of the ``opsched`` command line: ``solve``, ``solvers`` and ``pareto``
(``validate`` is in :mod:`opsched.validate.commands`).

``solve`` runs any registered scheduler (or the heterogeneous solvers with ``--devices``) and
checks its result with the independent validator before writing or printing it; options no
schedule can meet (a memory cap below the memory bound, a demand above a capacity, or a
result the exact solver proves INFEASIBLE) are an error, exit 2, nothing written; ``pareto``
gives the exact makespan / peak-memory front. The core commands (``demo``,
``analyze``, ``convert``, ``quick``) and the group itself are in :mod:`opsched.cli`, which
calls :func:`register`.

Examples
--------
>>> from click.testing import CliRunner
>>> from opsched.cli import main
>>> r = CliRunner().invoke(main, ["solve", "--help"])
>>> r.exit_code, "--objective [lex|lex-memory|makespan|peak-memory]" in r.output
(0, True)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from opsched._clikit import (
    EXIT_NO_SCHEDULE,
    FiniteFloat,
    _emit_json,
    _fail,
    _load_problem,
    cap_option,
    handle_errors,
    json_option,
    progress_lines,
    res_option,
    units_option,
)
from opsched._files import check_writable, note_input
from opsched.errors import ProblemError
from opsched.solver.defaults import DEFAULT_WORKERS, MAX_WORKERS

__all__ = ["OBJECTIVES", "pareto", "register", "solve", "solvers"]


# ---------------------------------------------------------------------------------- solve
OBJECTIVES = {
    "makespan": "makespan",
    "peak-memory": "peak_memory",
    "lex": "makespan_then_memory",
    "lex-memory": "memory_then_makespan",
}


@click.command("solve")
@click.argument("graph", type=click.Path(path_type=Path))
@click.option(
    "--solver",
    "-s",
    default="cpsat",
    show_default=True,
    help="Scheduler name (see `opsched solvers`).",
)
@units_option
@cap_option
@res_option
@click.option(
    "--objective",
    type=click.Choice(sorted(OBJECTIVES)),
    default="makespan",
    show_default=True,
    help="For exact solvers: makespan, peak-memory, or lexicographic (lex: makespan "
    "then memory; lex-memory: memory then makespan).",
)
@click.option(
    "--makespan-limit",
    type=FiniteFloat(),
    default=None,
    help="With --objective peak-memory: only schedules ending by this time.",
)
@click.option(
    "--time-limit",
    type=FiniteFloat(min=0.01),
    default=10.0,
    show_default=True,
    help="Seconds, for exact solvers.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, MAX_WORKERS),
    default=DEFAULT_WORKERS,
    show_default=True,
    help="CP-SAT search threads.",
)
@click.option("--deterministic", is_flag=True, help="Same result on every run (CP-SAT).")
@click.option("--log", is_flag=True, help="Print CP-SAT's search log.")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr (cpsat, lns).")
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the schedule (opsched-schedule/1 JSON) here.",
)
@click.option(
    "--devices",
    default=None,
    help="Heterogeneous machine, e.g. gpu:4,cpu:8 (solvers cpsat, heft, cpop); durations "
    "per type from each op's attrs.durations. See docs/hetero.md.",
)
@click.option(
    "--link-bandwidth",
    type=FiniteFloat(),
    default=None,
    help="With --devices: bytes per time unit between device types (default: infinite).",
)
@click.option(
    "--link-latency",
    type=FiniteFloat(),
    default=0.0,
    show_default=True,
    help="With --devices: time units per transfer between device types.",
)
@json_option
@handle_errors
def solve(
    graph: Path,
    solver: str,
    units: int | None,
    memory_cap: str | None,
    resources: str | None,
    objective: str,
    makespan_limit: float | None,
    time_limit: float,
    workers: int,
    deterministic: bool,
    log: bool,
    quiet: bool,
    output: Path | None,
    devices: str | None,
    link_bandwidth: float | None,
    link_latency: float,
    as_json: bool,
) -> None:
    """Schedule GRAPH; the result is checked by the independent validator.

    PSPLIB files bring their resource capacities; --resources overrides them. With
    --devices the machine is heterogeneous (opsched.hetero). CP-SAT prints each improving
    schedule and its bound on stderr, lns each improvement (not with --quiet, --json or
    --log).
    """
    say = None if quiet or as_json or log else progress_lines()
    if devices is None and (link_bandwidth is not None or link_latency != 0.0):
        raise ProblemError("--link-bandwidth and --link-latency apply with --devices only")
    note_input(graph)  # so that -o GRAPH is refused now, not after the search
    check_writable(output)  # before the search, not after it
    if devices is not None:
        from opsched.hetero.commands import solve_on_devices

        solve_on_devices(
            graph, solver, devices, link_bandwidth, link_latency, time_limit=time_limit,
            workers=workers, deterministic=deterministic, log=log, output=output,
            as_json=as_json, units=units, memory_cap=memory_cap, resources=resources,
            objective=objective, makespan_limit=makespan_limit, progress=say,
        )  # fmt: skip
        return
    from opsched.registry import get_solver
    from opsched.validate import validate as check
    from opsched.viz import gantt_text

    info = get_solver(solver)
    if not info.exact and objective != "makespan":
        raise ProblemError(
            f"--objective {objective}: {solver} is a heuristic, it minimises the makespan "
            "(the exact solvers take other objectives: opsched solvers)"
        )
    if makespan_limit is not None and solver != "cpsat":
        raise ProblemError(f"--makespan-limit applies to --solver cpsat, not {solver}")
    problem = _load_problem(graph, units, memory_cap, resources)
    _refuse_impossible(problem, graph)
    opts: dict[str, Any] = {}
    if info.exact:
        opts = {"objective": OBJECTIVES[objective]}
    if solver == "cpsat":
        opts.update(
            time_limit=time_limit,
            num_workers=workers,
            deterministic=deterministic,
            log=log,
            makespan_limit=makespan_limit,
        )
        if say is not None:
            opts.update(progress=say)
    if solver in ("lns", "downsets"):
        opts.update(time_limit=time_limit, progress=say)
    try:
        result = info.fn(problem, **opts)
    except ProblemError as e:  # a solver refusing this problem (downsets: no memory cap...)
        raise e.located(str(graph)) from None
    lns_note = str(result.info.get("lns", "")) if solver == "lns" else ""
    if lns_note.startswith("not applicable"):
        import warnings

        warnings.warn(f"lns {lns_note}: the portfolio schedule as it is", stacklevel=1)
    report = check(problem, result)
    if not report.valid:  # a solver bug: never hand out an invalid schedule
        _fail(f"{solver} produced an invalid schedule: {report.violations[0]}", 3)
    if result.status.value == "INFEASIBLE":  # proven by the search: the options are impossible
        raise ProblemError(f"no schedule exists: {result.info.get('reason', solver)}", str(graph))
    if not result.has_schedule and problem.memory_cap is not None and not info.exact:
        _explain_missing_schedule(problem, result, graph)
    if output is not None and result.has_schedule:  # no file for no schedule (exit 1)
        result.to_json(str(output))
    if as_json:
        _emit_json(result.to_dict())
        if not result.has_schedule:
            sys.exit(EXIT_NO_SCHEDULE)
        return
    click.echo(result.summary())
    if result.info.get("reason"):
        click.echo(f"reason: {result.info['reason']}")
    if not result.has_schedule:
        if output is not None:
            click.echo(f"no schedule: {output} not written", err=True)
        sys.exit(EXIT_NO_SCHEDULE)
    sc = result.info.get("scaling")
    if sc:
        click.echo(
            f"integers: {sc['time_scale']:g} ticks per time unit"
            f" ({'exact' if sc['time_exact'] else 'rounded up'}), memory quantum "
            f"{sc['memory_quantum']} B ({'exact' if sc['memory_exact'] else 'rounded'})"
        )
    if result.has_schedule and problem.graph.num_ops <= 60:
        click.echo(gantt_text(result, width=64))


@click.command("solvers")
@json_option
def solvers(as_json: bool) -> None:
    """List every registered scheduler (exact solvers and heuristics)."""
    from opsched.registry import SOLVERS

    if as_json:
        _emit_json({n: {"description": s.description, "exact": s.exact}
                    for n, s in SOLVERS.items()})  # fmt: skip
        return
    width = max(map(len, SOLVERS)) + 1
    for name, s in SOLVERS.items():
        kind = "exact" if s.exact else "heuristic"
        click.echo(f"{name:{width}s} {kind:9s} {s.description}")


@click.command("pareto")
@click.argument("graph", type=click.Path(path_type=Path))
@units_option
@cap_option
@res_option
@click.option(
    "--time-limit",
    type=FiniteFloat(min=0.1),
    default=60.0,
    show_default=True,
    help="Seconds for the whole front.",
)
@click.option(
    "--point-time-limit",
    type=FiniteFloat(min=0.1),
    default=10.0,
    show_default=True,
    help="Seconds for each point.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the front as CSV (makespan, peak_memory, proven).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")
@json_option
@handle_errors
def pareto(
    graph: Path,
    units: int | None,
    memory_cap: str | None,
    resources: str | None,
    time_limit: float,
    point_time_limit: float,
    output: Path | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """The exact Pareto front of makespan vs peak memory (CP-SAT, epsilon constraints).

    Each point is printed on stderr as it is found (not with --quiet or --json); the front,
    checked by the validator, at the end. No point found, nor refuted, within the time:
    exit 1 and no file written, as for solve.
    """
    from opsched._files import write_text_atomic
    from opsched.solver import pareto_front
    from opsched.validate import validate as check

    check_writable(output)  # before the search, not after it
    problem = _load_problem(graph, units, memory_cap, resources)
    _refuse_impossible(problem, graph)
    say = progress_lines()

    def progress(p: Any) -> None:
        how = "proven" if p.proven else "not proven"
        say(f"makespan {p.makespan:g}, peak memory {p.peak_memory} ({how})")

    front = pareto_front(problem, time_limit=time_limit, point_time_limit=point_time_limit,
                         progress=None if quiet or as_json else progress)  # fmt: skip
    if front.reason is not None:
        raise ProblemError(f"no schedule exists: {front.reason}", str(graph))
    for p in front.points:
        rep = check(problem, p.schedule)
        if not rep.valid:
            _fail(f"pareto point ({p.makespan:g}, {p.peak_memory}) is invalid: "
                  f"{rep.violations[0]}", 3)  # fmt: skip
    if not front.points:  # none found, none refuted: as solve, exit 1 and no file
        if as_json:
            _emit_json(front.to_dict())
        else:
            click.echo(front.summary())
            if output is not None:
                click.echo(f"no point: {output} not written", err=True)
        sys.exit(EXIT_NO_SCHEDULE)
    if output is not None:
        write_text_atomic(front.to_frame().to_csv(index=False), output)
    if as_json:
        _emit_json(front.to_dict())
        return
    click.echo(front.summary())


#: States the one-unit search may keep when a heuristic found no schedule under a cap.
EXPLAIN_STATES = 100_000
#: Most ops of a graph whose missing schedule that search explains (its state sets take
#: memory and time that grow with the square of the ops: 38 s and 1.2 GB at 10,000 ops).
EXPLAIN_MAX_OPS = 2_000


def _explain_missing_schedule(problem: Any, result: Any, graph: Path) -> None:
    """A heuristic found no schedule under the memory cap: say whether one exists.

    The one-unit search (:func:`opsched.solver.serial.serial_cap_check`) decides it for any
    number of units: no order within the cap is an error (exit 2), as for the exact solvers;
    an order within it goes into the result's reason, so the user knows a schedule exists.
    """
    from opsched.solver.serial import serial_cap_check
    from opsched.units import format_bytes

    if problem.graph.num_ops > EXPLAIN_MAX_OPS:
        result.info["reason"] = (
            f"{result.info.get('reason', 'no schedule found')}; whether any schedule fits "
            f"the cap was not checked (more than {EXPLAIN_MAX_OPS:,} ops): try --solver "
            "memory-list, or a looser cap"
        )
        return
    cap = int(problem.memory_cap)
    check = serial_cap_check(problem.graph, cap, max_states=EXPLAIN_STATES)
    if check.fits is False:
        raise ProblemError(f"no schedule exists: {check.describe(cap)}", str(graph))
    if check.fits and check.peak is not None:
        result.info["reason"] = (
            f"{result.info.get('reason', 'no schedule found')}; a schedule within the cap "
            f"exists (one op at a time in some order it peaks at {format_bytes(check.peak)}): "
            f"try --solver memory-list or cpsat"
        )


def _refuse_impossible(problem: Any, graph: Path) -> None:
    """Options no schedule can meet are bad input: one line naming why, exit 2, no output.

    Checked before solving: a demand above a capacity, and a memory cap below the memory
    bound of :func:`opsched.analysis.min_memory_bound` (with its minimum cut).
    """
    reason = problem.infeasibility_reason(cut=True)
    if reason is not None:
        raise ProblemError(reason, str(graph))


def register(main: click.Group) -> None:
    """Add ``solve``, ``solvers`` and ``pareto`` to the ``opsched`` group."""
    for command in (solve, solvers, pareto):
        main.add_command(command)

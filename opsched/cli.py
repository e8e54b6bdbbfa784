"""The ``opsched`` command line.

Every command has ``--help``; those that report take ``--json`` for machine-readable output.
Bad input (a malformed or missing file, a cycle, an unknown dependency, a bad number, an
impossible option) prints one line on stderr naming the problem and where, and exits with
status 2; no output file is written then. ``validate`` exits 1 when the schedule is invalid.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import click

from opsched._clikit import (
    EXIT_INVALID,
    _emit_json,
    _fail,
    _load_problem,
    _machine,
    _parse_resources,
    cap_option,
    handle_errors,
    json_option,
    res_option,
    units_option,
)
from opsched.errors import OpschedError, ProblemError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="opsched")
def main() -> None:
    """opsched: operator scheduling for AI compilers (exact optima, heuristics, validation)."""


# ---------------------------------------------------------------------------------- demo
@main.group()
def demo() -> None:
    """The seed document's demos."""


@demo.command("seed")
@units_option
@json_option
@handle_errors
def demo_seed(units: int | None, as_json: bool) -> None:
    """The seed graph: topological order, serial time, critical path, greedy schedule."""
    from opsched.demo import seed_demo
    from opsched.viz import gantt_text

    r = seed_demo(units)
    if as_json:
        _emit_json(
            {k: v for k, v in r.items() if k != "schedule"}
            | {"schedule": r["schedule"].to_dict()["ops"]}
        )
        return
    click.echo(f"topological order: {' -> '.join(r['order'])}")
    click.echo(f"serial time:       {r['serial']:g}")
    click.echo(
        f"critical path:     {r['critical_path']:g}  ({' -> '.join(r['critical_path_ops'])})",
    )
    where = f"{units} units" if units else "unlimited units"
    click.echo(f"greedy schedule:   {r['greedy']:g}  ({where})")
    click.echo(gantt_text(r["schedule"], width=48))


@demo.command("critical-path")
@units_option
@json_option
@handle_errors
def demo_critical_path(units: int | None, as_json: bool) -> None:
    """Program A..E: program-order chain (length 5) vs true RAW dependencies (length 3)."""
    from opsched.demo import critical_path_demo
    from opsched.viz import gantt_text

    r = critical_path_demo(units)
    if as_json:
        doc = {k: v for k, v in r.items() if not k.startswith("schedule")}
        doc["schedule_before"] = r["schedule_before"].to_dict()["ops"]
        doc["schedule_after"] = r["schedule_after"].to_dict()["ops"]
        _emit_json(doc)
        return
    click.echo(
        f"before (program order): critical path {r['before']:g}: {' -> '.join(r['before_path'])}"
    )
    click.echo(gantt_text(r["schedule_before"], width=40))
    click.echo(f"derived dependencies:   {', '.join(r['edges'])}")
    click.echo(
        f"after (RAW only):       critical path {r['after']:g}: {' -> '.join(r['after_path'])}"
    )
    click.echo(gantt_text(r["schedule_after"], width=40))
    click.echo(f"speedup: {r['speedup_percent']:g}% shorter")


# ---------------------------------------------------------------------------------- analyze
@main.command()
@click.argument("graph", type=click.Path(path_type=Path))
@units_option
@res_option
@json_option
@handle_errors
def analyze(graph: Path, units: int | None, resources: str | None, as_json: bool) -> None:
    """Ops, edges, work, critical path, lower bounds, parallelism, Amdahl, least memory."""
    from opsched.analysis import analyze as run
    from opsched.importers import read_graph
    from opsched.units import format_bytes

    g = read_graph(graph)
    caps = {**g.resources, **_parse_resources(resources)}
    a = run(g, units, caps)
    if as_json:
        _emit_json(a)
        return
    lb = a["lower_bound"]
    am = a["amdahl"]
    k = units if units else "unlimited"
    click.echo(f"graph {a['name']}: {a['ops']} ops, {a['edges']} edges, work {a['work']:g}")
    cp_ops = a["critical_path_ops"]
    shown = " -> ".join(cp_ops[:12]) + (" -> ..." if len(cp_ops) > 12 else "")
    click.echo(f"critical path {a['critical_path']:g}: {shown}")
    click.echo(
        f"lower bound on {k} units: {lb['value']:g} (binding: {lb['binding']}; "
        f"critical path {lb['critical_path']:g}, work {lb['work']:g}, "
        f"serial {lb['serial']:g})"
    )
    for r, v in lb["energy"].items():
        click.echo(f"  energy bound of {r}: {v:g}")
    click.echo(f"parallelism: max {a['max_parallelism']}, average {a['average_parallelism']:.3f}")
    click.echo(
        f"Amdahl: serial fraction {am['serial_fraction']:.3f}, speedup bound "
        f"{am['speedup_bound_amdahl']:.3f} (with the DAG: {am['speedup_bound']:.3f})"
    )
    mm = a["min_memory"]
    click.echo(
        f"least memory any schedule needs: {format_bytes(mm['bytes'])} ({mm['bytes']} B), "
        f"{mm['needed_by']}"
    )


# ---------------------------------------------------------------------------------- validate
@main.command()
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

    The machine defaults to the one recorded in the schedule file.
    """
    from opsched.importers import read_graph
    from opsched.ir.jsonio import load_json_file
    from opsched.problem import Problem
    from opsched.schedule import Schedule
    from opsched.validate import validate as check

    g = read_graph(graph)
    doc = load_json_file(schedule)  # its errors already name the file
    try:
        sched = Schedule.from_dict(doc)
    except OpschedError as e:
        raise e.located(str(schedule)) from None
    recorded = sched.machine or {}
    if units is None:
        units = recorded.get("units")
        if units is not None and (not isinstance(units, int) or units < 1):
            raise ProblemError(f"{schedule}: machine.units must be a positive integer")
    from opsched.problem import Machine

    cli_machine = _machine(units, memory_cap, resources)  # options first: errors name them
    try:
        recorded_machine = Machine(
            units=units,
            resources=dict(recorded.get("resources") or {}),
            memory_cap=recorded.get("memory_cap"),
        )
    except ProblemError as e:
        raise e.located(f"{schedule}: machine") from None
    machine = Machine(
        units=units,
        resources={**recorded_machine.resources, **cli_machine.resources},
        memory_cap=cli_machine.memory_cap
        if memory_cap is not None
        else recorded_machine.memory_cap,
    )
    problem = Problem(g, machine)
    report = check(problem, sched)
    if as_json:
        _emit_json(report.to_dict())
    else:
        click.echo(report.summary())
    sys.exit(0 if report.valid else EXIT_INVALID)


# ---------------------------------------------------------------------------------- solve
OBJECTIVES = {
    "makespan": "makespan",
    "peak-memory": "peak_memory",
    "lex": "makespan_then_memory",
    "lex-memory": "memory_then_makespan",
}


@main.command()
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
    type=float,
    default=None,
    help="With --objective peak-memory: only schedules ending by this time.",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0.01),
    default=10.0,
    show_default=True,
    help="Seconds, for exact solvers.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="CP-SAT search threads.",
)
@click.option("--deterministic", is_flag=True, help="Same result on every run (CP-SAT).")
@click.option("--log", is_flag=True, help="Print CP-SAT's search log.")
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
    type=float,
    default=None,
    help="With --devices: bytes per time unit between device types (default: infinite).",
)
@click.option(
    "--link-latency",
    type=float,
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
    output: Path | None,
    devices: str | None,
    link_bandwidth: float | None,
    link_latency: float,
    as_json: bool,
) -> None:
    """Schedule GRAPH; the result is checked by the independent validator.

    PSPLIB files bring their resource capacities; --resources overrides them. With
    --devices the machine is heterogeneous (opsched.hetero).
    """
    if devices is not None:
        from opsched.hetero.commands import solve_on_devices

        solve_on_devices(
            graph, solver, devices, link_bandwidth, link_latency, time_limit=time_limit,
            workers=workers, deterministic=deterministic, log=log, output=output,
            as_json=as_json, units=units, memory_cap=memory_cap, resources=resources,
            objective=objective, makespan_limit=makespan_limit,
        )  # fmt: skip
        return
    from opsched.registry import get_solver
    from opsched.validate import validate as check
    from opsched.viz import gantt_text

    info = get_solver(solver)
    problem = _load_problem(graph, units, memory_cap, resources)
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
    if solver == "lns":
        opts.update(time_limit=time_limit)
    result = info.fn(problem, **opts)
    report = check(problem, result)
    if not report.valid:  # a solver bug: never hand out an invalid schedule
        _fail(f"{solver} produced an invalid schedule: {report.violations[0]}", 3)
    if output is not None:
        result.to_json(str(output))
    if as_json:
        _emit_json(result.to_dict())
        return
    click.echo(result.summary())
    if result.info.get("reason"):
        click.echo(f"reason: {result.info['reason']}")
    sc = result.info.get("scaling")
    if sc:
        click.echo(
            f"integers: {sc['time_scale']:g} ticks per time unit"
            f" ({'exact' if sc['time_exact'] else 'rounded up'}), memory quantum "
            f"{sc['memory_quantum']} B ({'exact' if sc['memory_exact'] else 'rounded'})"
        )
    if result.has_schedule and problem.graph.num_ops <= 60:
        click.echo(gantt_text(result, width=64))


@main.command("solvers")
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


@main.command()
@click.argument("graph", type=click.Path(path_type=Path))
@units_option
@cap_option
@res_option
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    help="Seconds for the whole front.",
)
@click.option(
    "--point-time-limit",
    type=click.FloatRange(min=0.1),
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
    as_json: bool,
) -> None:
    """The exact Pareto front of makespan vs peak memory (CP-SAT, epsilon constraints)."""
    from opsched._files import write_text_atomic
    from opsched.solver import pareto_front
    from opsched.validate import validate as check

    problem = _load_problem(graph, units, memory_cap, resources)
    front = pareto_front(problem, time_limit=time_limit, point_time_limit=point_time_limit)
    for p in front.points:
        rep = check(problem, p.schedule)
        if not rep.valid:
            _fail(f"pareto point ({p.makespan:g}, {p.peak_memory}) is invalid: "
                  f"{rep.violations[0]}", 3)  # fmt: skip
    if output is not None:
        write_text_atomic(front.to_frame().to_csv(index=False), output)
    if as_json:
        _emit_json(front.to_dict())
        return
    click.echo(front.summary())


# ---------------------------------------------------------------------------------- convert
@main.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.argument("target", type=click.Path(path_type=Path))
@json_option
@handle_errors
def convert(source: Path, target: Path, as_json: bool) -> None:
    """Convert a graph (.json, .stg, .sm) to opsched-graph/1 JSON."""
    from opsched.importers import read_graph
    from opsched.ir.jsonio import write_graph_json

    if target.suffix.lower() != ".json":
        raise OpschedError(
            f"can only write opsched-graph/1 JSON (.json), not {target.suffix or 'no extension'!r}",
            str(target),
        )
    g = read_graph(source)
    write_graph_json(g, target)
    if as_json:
        _emit_json({"output": str(target), "name": g.name, "ops": g.num_ops,
                    "edges": g.num_edges, "work": g.work})  # fmt: skip
        return
    click.echo(f"wrote {target}: {g.summary()}")


# ---------------------------------------------------------------------------------- quick
@main.command()
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports/quick"),
    show_default=True,
    help="Folder for the report (report.md, results.csv).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="Only the first N instances of each set (for a smoke run).",
)
@json_option
@handle_errors
def quick(output: Path, limit: int | None, as_json: bool) -> None:
    """The main job: heuristics vs proven optima on the built-in STG and PSPLIB sets."""
    from opsched.bench import run_quick

    summary = run_quick(output, limit=limit, progress=not as_json)
    if as_json:
        _emit_json(summary)
    else:
        click.echo(f"wrote {output / 'report.md'} and {output / 'results.csv'}")


# Command groups that live next to their subsystem. Each module defines ``register(main)``
# and imports its heavy dependencies inside the commands, so ``opsched --help`` stays fast.
_COMMAND_MODULES: tuple[str, ...] = (
    "opsched.cost.commands",
    "opsched.zoo.generate_commands",
    "opsched.transforms.fuse_commands",
    "opsched.zoo.commands",
    "opsched.demo_page.commands",
    "opsched.experiments.commands",
    "opsched.report.commands",
    "opsched.importers.trace_commands",
    "opsched.pipeline.commands",
    "opsched.dynamic.commands",
    "opsched.hetero.commands",
)
for _module in _COMMAND_MODULES:
    importlib.import_module(_module).register(main)


if __name__ == "__main__":  # pragma: no cover
    main()

"""Command line of the heterogeneous scheduler.

``opsched solve GRAPH --devices gpu:4,cpu:8 [--link-bandwidth B] [--link-latency L]
[--solver cpsat|heft|cpop]`` hands off to :func:`solve_on_devices`;
``opsched hetero validate GRAPH SCHEDULE --devices ...`` checks a heterogeneous schedule
(exit 0 valid, 1 invalid, 2 bad input). The machine of ``validate`` defaults to the one the
schedule file records.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from opsched._clikit import EXIT_INVALID, FiniteFloat, emit_json, fail, handle_errors, json_option
from opsched.errors import OpschedError, ProblemError

__all__ = ["register", "solve_on_devices"]

HETERO_SOLVERS = ("cpsat", "heft", "cpop")


def _problem(
    graph: Path,
    devices: str,
    bandwidth: float | None,
    latency: float,
    links: Any = None,
    schedule: Path | None = None,
) -> Any:
    """The problem of GRAPH on the machine of the options. ``links``: the per-pair links the
    file ``schedule`` records (already checked by its reader against its own devices)."""
    from dataclasses import replace

    from opsched.hetero.model import HeteroMachine, HeteroProblem, Link
    from opsched.importers import read_graph

    try:
        machine = HeteroMachine.parse(devices, bandwidth, latency)
    except ProblemError as e:
        msg = e.message
        if not msg.startswith("--"):
            flags = (("bandwidth", "--link-bandwidth"), ("latency", "--link-latency"))
            flag = next((f for w, f in flags if w in msg), "--devices")
            msg = f"{flag}: {msg}"
        raise ProblemError(msg) from None
    if links:  # per-pair links a schedule file records ({"between": [a, b], ...})
        pairs = {(str(r["between"][0]), str(r["between"][1])):
                 Link(r.get("bandwidth"), r.get("latency", 0.0)) for r in links}  # fmt: skip
        try:
            machine = replace(machine, links=pairs)
        except ProblemError as e:  # a type the file's machine has but --devices has not
            raise ProblemError(f"{e.message} of --devices {devices}",
                               f"{schedule}: machine.links") from None  # fmt: skip
    g = read_graph(graph)
    try:
        return HeteroProblem(g, machine)
    except ProblemError as e:
        raise e.located(str(graph)) from None


def _gantt_lines(sched: Any) -> list[str]:
    per: dict[tuple[str, int], list[Any]] = {}
    for o in sched.ops:
        per.setdefault((o.device, o.instance), []).append(o)
    lines = []
    for (dev, k), ops in per.items():
        ops.sort(key=lambda o: (o.start, o.end))
        lines.append(f"{dev}:{k}  " + " ".join(f"{o.name}[{o.start:g},{o.end:g})" for o in ops))
    return lines


def solve_on_devices(
    graph: Path,
    solver: str,
    devices: str,
    link_bandwidth: float | None,
    link_latency: float,
    *,
    time_limit: float = 10.0,
    workers: int = 2,
    deterministic: bool = False,
    log: bool = False,
    output: Path | None = None,
    as_json: bool = False,
    units: int | None = None,
    memory_cap: str | None = None,
    resources: str | None = None,
    objective: str = "makespan",
    makespan_limit: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> None:
    """The body of ``opsched solve --devices``: solve, validate, print, write.

    Options of the homogeneous model that the heterogeneous one does not have (``--units``,
    ``--memory-cap``, ``--resources``, ``--objective`` other than makespan,
    ``--makespan-limit``) are refused with a one-line error.
    """
    for flag, given in (("--units", units is not None), ("--memory-cap", memory_cap is not None),
                        ("--resources", resources is not None),
                        ("--objective", objective != "makespan"),
                        ("--makespan-limit", makespan_limit is not None)):  # fmt: skip
        if given:
            raise ProblemError(f"{flag} does not apply with --devices (makespan only; the "
                               "device counts replace the units)")  # fmt: skip
    if solver not in HETERO_SOLVERS:
        raise ProblemError(f"--solver {solver!r} does not support --devices; use one of "
                           f"{', '.join(HETERO_SOLVERS)}")  # fmt: skip
    from opsched.hetero.cpsat import solve_hetero_cpsat
    from opsched.hetero.heft import cpop, heft
    from opsched.hetero.validate import validate_hetero

    problem = _problem(graph, devices, link_bandwidth, link_latency)
    if solver == "cpsat":
        result = solve_hetero_cpsat(problem, time_limit=time_limit, num_workers=workers,
                                    deterministic=deterministic, log=log,
                                    progress=progress)  # fmt: skip
    else:
        result = heft(problem) if solver == "heft" else cpop(problem)
    report = validate_hetero(problem, result)
    if not report.valid:  # a solver bug: never hand out an invalid schedule
        fail(f"{solver} produced an invalid schedule: {report.violations[0]}", 3)
    if output is not None:
        result.to_json(str(output))
    if as_json:
        emit_json(result.to_dict())
        return
    click.echo(result.summary())
    sc = result.info.get("scaling")
    if sc:
        click.echo(f"integers: {sc['time_scale']:g} ticks per time unit "
                   f"({'exact' if sc['time_exact'] else 'rounded up'})")  # fmt: skip
    if problem.graph.num_ops <= 60:
        for line in _gantt_lines(result):
            click.echo(line)


def register(main: click.Group) -> None:
    """Add the ``hetero`` command group to ``main``."""

    @main.group("hetero")
    def hetero() -> None:
        """Heterogeneous devices (solve with `opsched solve GRAPH --devices gpu:4,cpu:8`)."""

    @hetero.command("validate")
    @click.argument("graph", type=click.Path(path_type=Path))
    @click.argument("schedule", type=click.Path(path_type=Path))
    @click.option("--devices", default=None, help="e.g. gpu:4,cpu:8; default: the schedule's.")
    @click.option("--link-bandwidth", type=FiniteFloat(), default=None, help="Bytes per time unit.")
    @click.option(
        "--link-latency", type=FiniteFloat(), default=None, help="Time units per transfer."
    )
    @json_option
    @handle_errors
    def validate_cmd(
        graph: Path,
        schedule: Path,
        devices: str | None,
        link_bandwidth: float | None,
        link_latency: float | None,
        as_json: bool,
    ) -> None:
        """Check a heterogeneous SCHEDULE of GRAPH: exit 0 if valid, 1 with the violations."""
        from opsched.hetero.schedule import HeteroSchedule
        from opsched.hetero.validate import validate_hetero
        from opsched.ir.jsonio import load_json_file

        doc = load_json_file(schedule)
        try:
            sched = HeteroSchedule.from_dict(doc)
        except OpschedError as e:
            raise e.located(str(schedule)) from None
        rec = sched.machine or {}
        if devices is None:
            counts = rec.get("devices")
            if not isinstance(counts, dict) or not counts:
                raise ProblemError(f"{schedule}: records no devices; give --devices")
            devices = ",".join(f"{t}:{c}" for t, c in counts.items())
        link: dict[str, Any] = rec["link"] if isinstance(rec.get("link"), dict) else {}
        bw = link_bandwidth if link_bandwidth is not None else link.get("bandwidth")
        lat = link_latency if link_latency is not None else link.get("latency", 0.0)
        # the per-pair links the file records hold unless the link is given on the command line
        given = link_bandwidth is not None or link_latency is not None
        pairs = None if given or not isinstance(rec.get("links"), list) else rec["links"]
        problem = _problem(graph, devices, bw, lat, pairs, schedule)
        report = validate_hetero(problem, sched)
        if as_json:
            emit_json(report.to_dict())
        else:
            click.echo(report.summary())
        sys.exit(0 if report.valid else EXIT_INVALID)

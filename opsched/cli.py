"""The ``opsched`` command line.

Every command has ``--help``; those that report take ``--json`` for machine-readable output.
Bad input (a malformed or missing file, a cycle, an unknown dependency, a bad number, an
impossible option) prints one line on stderr naming the problem and where, and exits with
status 2; no output file is written then. ``validate`` exits 1 when the schedule is invalid.

This module holds the group and the core commands (``demo``, ``analyze``, ``convert``,
``quick``); ``solve``, ``solvers`` and ``pareto`` are in :mod:`opsched.solve_commands`,
``validate`` in :mod:`opsched.validate.commands`, and the other command groups next to their
subsystems (see ``_COMMAND_MODULES``). All are registered when this module loads.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import click

from opsched._clikit import (
    _emit_json,
    handle_errors,
    json_option,
    units_option,
)
from opsched._files import is_stream

# re-exported: these commands live in opsched.analysis.commands, opsched.solve_commands and
# opsched.validate.commands (registered below)
from opsched.analysis.commands import analyze
from opsched.errors import OpschedError
from opsched.solve_commands import OBJECTIVES, pareto, solve, solvers
from opsched.validate.commands import validate

__all__ = [
    "OBJECTIVES",
    "analyze",
    "convert",
    "demo",
    "main",
    "pareto",
    "quick",
    "solve",
    "solvers",
    "validate",
]


class OneLineGroup(click.Group):
    """The ``opsched`` group: a bad option or argument is one line on stderr, as every other
    refusal (``opsched: error: WHAT (see 'opsched CMD --help')``, exit status 2), not click's
    usage block."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)  # type: ignore[call-overload]
        import sys

        try:
            rv = super().main(*args, standalone_mode=False, **kwargs)  # type: ignore[call-overload]
        except click.UsageError as e:
            if type(e).__name__ == "NoArgsIsHelpError" and e.ctx is not None:
                click.echo(e.ctx.get_help())  # a group called bare: its help, as click does
                sys.exit(e.exit_code)
            path = e.ctx.command_path if e.ctx is not None else "opsched"
            message = " ".join(e.format_message().split())
            click.echo(f"opsched: error: {message} (see '{path} --help')", err=True)
            sys.exit(e.exit_code)
        except click.ClickException as e:
            click.echo(f"opsched: error: {' '.join(e.format_message().split())}", err=True)
            sys.exit(e.exit_code)
        except click.exceptions.Abort:
            sys.exit(130)  # Ctrl-C before a command started
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=OneLineGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="opsched")
def main() -> None:
    """opsched: operator scheduling for AI compilers (exact optima, heuristics, validation)."""
    import warnings

    warnings.showwarning = _warning_line


def _warning_line(message: Warning | str, *_: object, **__: object) -> None:
    """A warning on the command line: one line on stderr, without the code that raised it."""
    click.echo(f"opsched: warning: {message}", err=True)


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
    click.echo(f"greedy schedule:   {r['greedy']:g}  ({_units_phrase(units)})")
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
    # the critical path always drops 40 %; the schedule only where two units run B beside C
    click.echo(
        f"critical path: {r['before']:g} -> {r['after']:g}, {r['speedup_percent']:g}% shorter"
    )
    was, now = r["schedule_before"].makespan, r["schedule_after"].makespan
    saved = f"{100 * (was - now) / was:.3g}% shorter" if now < was else "no shorter"
    click.echo(f"schedule ({_units_phrase(units)}): {was:g} -> {now:g}, {saved}")


def _units_phrase(units: int | None) -> str:
    return "unlimited units" if units is None else f"{units} unit{'s' if units != 1 else ''}"


# ---------------------------------------------------------------------------------- analyze
# ---------------------------------------------------------------------------------- convert
@main.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.argument("target", type=click.Path(path_type=Path))
@json_option
@handle_errors
def convert(source: Path, target: Path, as_json: bool) -> None:
    """Convert a graph (.json, .stg, .sm, .rcp, .onnx, .hlo, .pt2) to opsched-graph/1 JSON."""
    from opsched.importers import read_graph
    from opsched.ir.jsonio import write_graph_json

    if target.suffix.lower() != ".json" and not is_stream(target):
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
    "opsched.analysis.commands",
    "opsched.solve_commands",
    "opsched.validate.commands",
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

"""CLI command ``opsched report``."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["register"]


def register(main: click.Group) -> None:
    """Add ``report`` to the ``opsched`` command group."""
    from opsched._clikit import _emit_json, handle_errors, json_option

    @main.command()
    @click.argument("db", type=click.Path(path_type=Path))
    @click.option(
        "-o", "--output", type=click.Path(path_type=Path), required=True, help="The HTML report."
    )
    @click.option(
        "--markdown",
        type=click.Path(path_type=Path),
        default=None,
        help="Also write a Markdown report.",
    )
    @click.option(
        "--png-dir",
        type=click.Path(path_type=Path),
        default=None,
        help="Folder of the PNGs (default: <report>_figures next to the HTML).",
    )
    @click.option("--experiment", default=None, help="Only this experiment.")
    @click.option(
        "--instance",
        "instances",
        multiple=True,
        help="Draw this instance (id or graph name); repeatable.",
    )
    @click.option(
        "--gantt",
        "n_instances",
        type=click.IntRange(min=0),
        default=2,
        show_default=True,
        help="Without --instance: draw this many instances, largest gap first.",
    )
    @json_option
    @handle_errors
    def report(
        db: Path,
        output: Path,
        markdown: Path | None,
        png_dir: Path | None,
        experiment: str | None,
        instances: tuple[str, ...],
        n_instances: int,
        as_json: bool,
    ) -> None:
        """Heuristics vs proven optima: gaps, wins, times, profiles, peaks, Gantt charts."""
        from opsched.report.build import build_report

        data = build_report(
            db,
            output,
            markdown=markdown,
            png_dir=png_dir,
            experiment=experiment,
            instances=instances,
            n_instances=n_instances,
        )
        s = data.summary()
        if as_json:
            _emit_json(s | {"output": str(output), "markdown": str(markdown or "")})
            return
        click.echo(
            f"{s['jobs']} jobs, {s['instances']} instances ({s['with_proven_optimum']} with a "
            f"proven optimum) -> {output}"
        )
        if s["unfinished_jobs"]:
            click.echo(f"not finished: {s['unfinished_jobs']} jobs of the experiment file have "
                       "no result yet; the tables cover the finished ones only")  # fmt: skip
        if s["earlier_jobs_left_out"]:
            click.echo(f"left out {s['earlier_jobs_left_out']} stored jobs of an earlier version "
                       "of the experiment file (settings edited since)")  # fmt: skip

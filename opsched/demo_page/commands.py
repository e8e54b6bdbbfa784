"""``opsched demo page``: write the three-mode visual demo as one self-contained HTML file."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["register"]


def _page_command() -> click.Command:
    # opsched.cli imports this module while it loads, so its helpers are imported here,
    # once it has finished, and never at this module's top level.
    from opsched._clikit import FiniteFloat, _emit_json, handle_errors, json_option
    from opsched._files import check_writable

    @click.command("page")
    @click.option(
        "-o",
        "--output",
        "output",
        type=click.Path(path_type=Path),
        required=True,
        help="HTML file to write.",
    )
    @click.option(
        "--graph",
        "graph",
        type=click.Path(path_type=Path),
        default=None,
        help="Graph of the strategy tab (.json/.stg/.sm/.rcp, at most 60 ops); "
        "an Inception-style block by default.",
    )
    @click.option(
        "--units",
        "-k",
        type=click.IntRange(1, 64),
        default=4,
        show_default=True,
        help="Compute units of the parallel and pipeline strategies.",
    )
    @click.option(
        "--seed-units",
        type=click.IntRange(1, 64),
        default=2,
        show_default=True,
        help="Compute units of the step-by-step seed loop.",
    )
    @click.option(
        "--micro-batches",
        "-m",
        type=click.IntRange(min=1, max=64),
        default=4,
        show_default=True,
        help="Micro-batches of the pipeline strategy.",
    )
    @click.option(
        "--time-limit",
        type=FiniteFloat(min=0, min_open=True),
        default=10.0,
        show_default=True,
        help="CP-SAT seconds for the memory-aware strategy.",
    )
    @json_option
    @handle_errors
    def demo_page(
        output: Path,
        graph: Path | None,
        units: int,
        seed_units: int,
        micro_batches: int,
        time_limit: float,
        as_json: bool,
    ) -> None:
        """One offline HTML page: the scheduling loop, strategies side by side, critical path."""
        from opsched.demo_page.build import write_page
        from opsched.importers import read_graph

        check_writable(output)  # before the seconds of solving, not after them
        g = read_graph(graph) if graph is not None else None
        data = write_page(
            output,
            seed_units=seed_units,
            graph=g,
            units=units,
            micro_batches=micro_batches,
            time_limit=time_limit,
        )
        s = data["strategies"]
        summary = {
            "output": str(output),
            "seed_makespan": data["seed"]["makespan"],
            "seed_steps": len(data["seed"]["steps"]),
            "strategy_graph": s["graph"]["name"],
            "strategies": {k: s[k]["metrics"] for k in ("parallel", "memory", "pipeline")},
            "critical_path": [
                data["critical"]["before"]["length"],
                data["critical"]["after"]["length"],
            ],
        }
        if as_json:
            _emit_json(summary)
            return
        click.echo(f"wrote {output}")
        click.echo(
            f"  loop:       seed graph, {summary['seed_steps']} events, makespan "
            f"{summary['seed_makespan']:g}"
        )
        for k, m in summary["strategies"].items():
            click.echo(
                f"  {k:<11} makespan {m['makespan']:g}, peak {m['peak_memory']} B, "
                f"throughput {m['throughput']:.4g}"
            )
        before, after = summary["critical_path"]
        click.echo(f"  critical:   {before:g} -> {after:g}")

    return demo_page


def register(main: click.Group) -> None:
    """Add ``page`` to the ``demo`` group of the ``opsched`` command."""
    group = main.commands["demo"]
    assert isinstance(group, click.Group)
    group.add_command(_page_command())

"""``opsched simulate``: a schedule's makespan under sampled duration noise.

Examples
--------
>>> import json, tempfile, os
>>> from click.testing import CliRunner
>>> from opsched.cli import main
>>> d = tempfile.mkdtemp()
>>> r = CliRunner().invoke(main, ["solve", "datasets/stg/50/rand0000.stg", "-k", "4",
...                               "--solver", "greedy-blevel", "-o", os.path.join(d, "s.json")])
>>> r = CliRunner().invoke(main, ["simulate", "datasets/stg/50/rand0000.stg",
...                               os.path.join(d, "s.json"), "--noise", "0", "--runs", "3",
...                               "--json"])
>>> doc = json.loads(r.output)
>>> r.exit_code, doc["static"]["mean"] == doc["static"]["estimate"]
(0, True)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

__all__ = ["register"]


def register(main: click.Group) -> None:
    """Add the ``simulate`` command to the ``opsched`` command line."""
    from opsched._clikit import (
        MAX_SIMULATED_DURATIONS,
        MAX_SIMULATED_RUNS,
        FiniteFloat,
        _emit_json,
        handle_errors,
        json_option,
    )
    from opsched.dynamic.noise import MAX_SPREAD

    @main.command()
    @click.argument("graph", type=click.Path(path_type=Path))
    @click.argument("schedule", type=click.Path(path_type=Path))
    @click.option(
        "--noise",
        type=FiniteFloat(min=0, max=MAX_SPREAD),
        default=0.1,
        show_default=True,
        help="Spread: lognormal sigma, or the relative error with --model uniform.",
    )
    @click.option(
        "--model",
        "noise_model",
        type=click.Choice(["lognormal", "uniform"]),
        default="lognormal",
        show_default=True,
        help="Noise model.",
    )
    @click.option(
        "--runs", type=click.IntRange(min=1, max=MAX_SIMULATED_RUNS), default=100,
        show_default=True,
        help=f"Sampled executions: at most {MAX_SIMULATED_RUNS:,}, and runs x ops at most "
        f"{MAX_SIMULATED_DURATIONS:,} (the draws take 24 B each in memory, 6 GB at that).",
    )  # fmt: skip
    @click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
    @click.option(
        "--online", is_flag=True, help="Also run online list scheduling (b-level of the estimates)."
    )
    @click.option(
        "--units",
        "-k",
        type=click.IntRange(min=1),
        default=None,
        help="Compute units; the schedule's machine by default.",
    )
    @json_option
    @handle_errors
    def simulate(
        graph: Path,
        schedule: Path,
        noise: float,
        noise_model: str,
        runs: int,
        seed: int,
        online: bool,
        units: int | None,
        as_json: bool,
    ) -> None:
        """Replay SCHEDULE's unit orders on GRAPH under sampled durations.

        Reports the makespan with the estimates, and the mean, p95 and worst over the runs;
        --online adds the online list scheduler on the same draws. Same seed, same numbers.
        """
        from opsched.dynamic import Lognormal, Online, RelativeError, expected_makespan
        from opsched.errors import OpschedError, ProblemError
        from opsched.importers import read_graph
        from opsched.ir.jsonio import load_json_file
        from opsched.problem import Machine, Problem
        from opsched.schedule import Schedule
        from opsched.units import format_bytes
        from opsched.validate import validate

        g = read_graph(graph)
        if runs * g.num_ops > MAX_SIMULATED_DURATIONS:
            raise ProblemError(
                f"--runs {runs:,}: {runs:,} runs of the {g.num_ops:,} ops draw more than the "
                f"{MAX_SIMULATED_DURATIONS:,} durations allowed (24 B each in memory); "
                f"at most --runs {MAX_SIMULATED_DURATIONS // g.num_ops:,} here",
                str(graph),
            )
        doc_in = load_json_file(schedule)  # its errors already name the file
        try:
            sched = Schedule.from_dict(doc_in)
        except OpschedError as e:
            raise e.located(str(schedule)) from None
        rec = sched.machine or {}
        try:
            machine = Machine(
                units=units if units is not None else rec.get("units"),
                resources=dict(rec.get("resources") or {}),
                memory_cap=rec.get("memory_cap"),
            )
        except ProblemError as e:
            raise e.located(f"{schedule}: machine") from None
        problem = Problem(g, machine)
        report = validate(problem, sched)
        if not report.valid:
            first = report.violations[0]
            raise ProblemError(
                f"the schedule is not valid for this graph ({first}); "
                "run `opsched validate` for every violation",
                str(schedule),
            )
        if noise_model == "uniform" and noise >= 1:
            raise ProblemError(f"--noise: a uniform relative error must be below 1, got {noise}")
        model = Lognormal(noise) if noise_model == "lognormal" else RelativeError(noise)
        doc: dict[str, Any] = {
            "graph": g.name,
            "noise": {"model": noise_model, "spread": noise},
            "runs": runs,
            "seed": seed,
            "static": expected_makespan(problem, sched, model, runs, seed).to_dict(),
        }
        if online:
            doc["online"] = expected_makespan(problem, Online(), model, runs, seed).to_dict()
        if as_json:
            _emit_json(doc)
            return
        click.echo(f"{g.name}: {runs} runs, {noise_model} noise {noise:g}, seed {seed}")
        for key in ("static", "online"):
            if key in doc:
                s = doc[key]
                est = "-" if s["estimate"] is None else f"{s['estimate']:.6g}"
                click.echo(
                    f"  {key:7s} estimate {est}  mean {s['mean']:.6g}  "
                    f"sd {s['std']:.3g}  p95 {s['p95']:.6g}  max {s['max']:.6g}"
                )
                if s.get("dead_ends"):
                    click.echo(f"  {'':7s} {s['dead_ends']} of {runs} runs hit a memory dead "
                               "end (left out of the statistics)")  # fmt: skip
                if s.get("memory_cap") is not None and s.get("peak_max") is not None:
                    cap, peak = format_bytes(s["memory_cap"]), format_bytes(s["peak_max"])
                    over = f"{s['over_cap']} of {runs} runs over the cap"
                    click.echo(f"  {'':7s} peak memory max {peak} (cap {cap}): {over}")
                if s.get("left_out"):
                    click.echo(f"  {'':7s} {s['left_out']} of {runs} runs break a resource "
                               "capacity (a replay keeps the unit orders only; left out of "
                               "the statistics)")  # fmt: skip

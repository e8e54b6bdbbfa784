"""``opsched pipeline``: partition a graph into stages and pipeline micro-batches through it.

Examples
--------
>>> from click.testing import CliRunner
>>> from opsched.cli import main
>>> r = CliRunner().invoke(main, ["pipeline", "datasets/stg/50/rand0000.stg", "--stages", "2",
...                               "--microbatches", "3", "--json"])
>>> r.exit_code, '"valid": true' in r.output
(0, True)
"""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["register"]


def register(main: click.Group) -> None:
    """Add the ``pipeline`` command to the ``opsched`` command line."""
    from opsched._clikit import FiniteFloat, _emit_json, cap_option, handle_errors, json_option

    @main.command()
    @click.argument("graph", type=click.Path(path_type=Path))
    @click.option(
        "--stages",
        "-s",
        type=click.IntRange(min=1),
        required=True,
        help="Number of pipeline stages.",
    )
    @click.option(
        "--microbatches",
        "-m",
        type=click.IntRange(min=1),
        required=True,
        help="Micro-batches (inputs) flowing through the graph.",
    )
    @click.option(
        "--units",
        "-k",
        type=click.IntRange(min=1),
        default=None,
        help="Compute units in all, split evenly over the stages (default: one each).",
    )
    @click.option(
        "--solver",
        type=click.Choice(["heuristic", "cpsat"]),
        default="heuristic",
        show_default=True,
    )
    @click.option(
        "--formulation",
        type=click.Choice(["auto", "unrolled", "modulo"]),
        default="auto",
        show_default=True,
        help="CP-SAT model (see docs/pipeline.md).",
    )
    @click.option(
        "--time-limit",
        type=FiniteFloat(min=0.01),
        default=10.0,
        show_default=True,
        help="CP-SAT seconds.",
    )
    @click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr (CP-SAT).")
    @cap_option
    @click.option(
        "-o",
        "--output",
        type=click.Path(path_type=Path),
        default=None,
        help="Write the unrolled schedule (opsched-schedule/1).",
    )
    @click.option(
        "--graph-out",
        type=click.Path(path_type=Path),
        default=None,
        help="Write the unrolled graph, to check OUT with `opsched validate`.",
    )
    @json_option
    @handle_errors
    def pipeline(
        graph: Path,
        stages: int,
        microbatches: int,
        units: int | None,
        solver: str,
        formulation: str,
        time_limit: float,
        quiet: bool,
        memory_cap: str | None,
        output: Path | None,
        graph_out: Path | None,
        as_json: bool,
    ) -> None:
        """Pipeline MICROBATCHES copies of GRAPH over STAGES stages.

        Reports the latency of one input and the initiation interval (throughput); the
        schedule is one of the unrolled graph (ops named OP@M) and is validated.
        """
        from opsched._clikit import (
            EXIT_NO_SCHEDULE,
            MAX_GENERATED_OPS,
            check_graph_memory,
            fail,
            machine_from_options,
            progress_lines,
        )
        from opsched._files import check_writable
        from opsched.errors import ProblemError
        from opsched.importers import read_graph
        from opsched.ir.jsonio import write_graph_json
        from opsched.pipeline import check_stages, pipeline_cpsat, pipeline_heuristic
        from opsched.problem import Problem
        from opsched.validate import validate

        g = read_graph(graph)
        check_writable(output, graph_out)  # both, before either is written
        copies = g.num_ops * microbatches
        if copies > MAX_GENERATED_OPS:
            raise ProblemError(f"--microbatches {microbatches}: the unrolled graph would have "
                               f"{copies:,} ops (at most {MAX_GENERATED_OPS:,})",
                               str(graph))  # fmt: skip
        # the unrolled graph and its schedule, as generate estimates a graph (measured: about
        # 2.2-2.4 KB per unrolled op of layered and STG graphs, edges included)
        check_graph_memory(copies, g.num_edges * microbatches,
                           f"--microbatches {microbatches}: the unrolled graph of {copies:,} ops",
                           where=str(graph))  # fmt: skip
        if stages > g.num_ops:
            raise ProblemError(f"--stages {stages}: more stages than the graph's {g.num_ops} ops",
                               str(graph))  # fmt: skip
        problem = Problem(g, machine_from_options(units, memory_cap, None))
        # a cap one micro-batch cannot meet, no pipeline of them meets: bad input, as in solve
        reason = problem.infeasibility_reason(cut=True)
        if reason is not None:
            raise ProblemError(f"no schedule exists: {reason}", str(graph))
        if solver == "cpsat":
            say = None if quiet or as_json else progress_lines()
            res = pipeline_cpsat(problem, stages, microbatches, formulation=formulation,
                                 time_limit=time_limit, progress=say)  # fmt: skip
        else:
            res = pipeline_heuristic(problem, stages, microbatches)
        # proven impossible, by the search or by the unrolled problem's own checks (an op
        # demanding more of its stage than the stage has): bad input, as in solve
        why = None if res.schedule.has_schedule else res.problem.infeasibility_reason()
        if why is None and res.schedule.status.value == "INFEASIBLE":
            why = res.schedule.info.get("reason", solver)
        if why is not None:
            raise ProblemError(f"no schedule exists: {why}", str(graph))
        report = validate(res.problem, res.schedule) if res.schedule.has_schedule else None
        misplaced = check_stages(res.problem, res.schedule)
        if (report is not None and not report.valid) or misplaced:
            # a solver bug: never hand out an invalid schedule (solve and hetero do the same)
            first = report.violations[0] if report is not None and not report.valid else None
            fail(f"{solver} produced an invalid schedule: {first or misplaced[0]}", 3)
        res.schedule.info = {
            **res.schedule.info,
            **res.to_dict(),
            "stage_of": dict(zip(problem.graph.names, res.assignment, strict=True)),
        }
        if output is not None and res.schedule.has_schedule:
            res.schedule.to_json(str(output))
        if graph_out is not None:
            write_graph_json(res.problem.graph, graph_out)
        doc = {
            **res.to_dict(),
            "makespan": res.schedule.makespan,
            "peak_memory": res.schedule.peak_memory,
            "wall_time_s": res.schedule.wall_time_s,
            "valid": None if report is None else report.valid and not misplaced,
            "violations": [] if report is None else [str(v) for v in report.violations] + misplaced,
        }
        if as_json:
            _emit_json(doc)
            if not res.schedule.has_schedule:
                raise SystemExit(EXIT_NO_SCHEDULE)
            return
        click.echo(res.summary())
        if res.metrics is not None:
            m = res.metrics
            click.echo(
                f"throughput {m.throughput:.6g} micro-batches per time unit; mean "
                f"latency {m.mean_latency:g}; stage work {m.stage_work}"
            )
        if res.schedule.has_schedule:
            click.echo(
                f"peak memory {res.schedule.peak_memory} B; time {res.schedule.wall_time_s:.3f} s"
            )
        if report is not None:
            click.echo(report.summary() if not misplaced else f"misplaced: {misplaced[:5]}")
        elif res.schedule.info.get("reason"):
            click.echo(f"no schedule: {res.schedule.info['reason']}")
        if not res.schedule.has_schedule:  # ran, found none (as solve does): exit 1
            raise SystemExit(EXIT_NO_SCHEDULE)

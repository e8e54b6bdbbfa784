"""``opsched generate KIND``: write a generated graph (and a planted optimum) as JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from opsched._clikit import (
    GENERATE_MEMORY_BYTES,
    GRAPH_EDGE_BYTES,
    GRAPH_OP_BYTES,
    MAX_GENERATED_OPS,
    NETWORK_OP_BYTES,
    FiniteFloat,
    _emit_json,
    check_graph_memory,
    handle_errors,
    json_option,
)
from opsched._files import is_stream
from opsched.errors import InputError, ProblemError

__all__ = ["GENERATORS", "generate_graph", "register"]

#: Generator kinds of ``opsched generate``.
GENERATORS = (
    "layered",
    "gnp",
    "fork-join",
    "series-parallel",
    "network",
    "planted",
    "seed",
    "critical-path",
)


def generate_graph(
    kind: str,
    ops: int | None,
    *,
    seed: int = 0,
    units: int | None = None,
    memory: bool = False,
    max_duration: int | None = None,
    p: float | None = None,
    avg_deps: float | None = None,
) -> Any:
    """Run generator ``kind``; return an OpGraph, or a PlantedGraph for ``"planted"``.

    ``--units`` belongs to ``planted`` only, ``--p`` to ``gnp`` (default
    ``2 avg_deps / (ops - 1)``: about ``avg_deps`` dependencies per op), ``avg_deps`` (default
    2) to ``gnp`` (without ``p``) and ``planted``; ``max_duration`` (default 10) and
    ``memory`` to every random generator but ``network`` (its own durations and no tensors),
    and ``layered`` always draws tensor sizes; the two examples have a fixed size. An option
    the generator does not use is refused, not ignored.

    Examples
    --------
    >>> generate_graph("fork-join", 20, seed=1).num_ops
    20
    >>> generate_graph("planted", 12, units=3, memory=True).makespan > 0
    True
    """
    from opsched.zoo import generators as gen
    from opsched.zoo.planted import planted

    if kind not in GENERATORS:
        raise ProblemError(f"unknown generator {kind!r}; known: {', '.join(GENERATORS)}")
    if units is not None and kind != "planted":
        raise ProblemError(f"--units is for the planted generator, not {kind!r}")
    if p is not None and kind != "gnp":
        raise ProblemError(f"--p is for the gnp generator, not {kind!r}")
    if avg_deps is not None and kind not in ("gnp", "planted"):
        raise ProblemError(f"--avg-deps is for the gnp and planted generators, not {kind!r}")
    if avg_deps is not None and p is not None:  # --p fixes gnp's edges: --avg-deps is unused
        raise ProblemError("give --p or --avg-deps, not both: --p sets gnp's edge probability")
    if kind in gen.EXAMPLES or kind == "network":
        for flag, given in (("--memory", memory), ("--max-duration", max_duration is not None)):
            if given:
                raise ProblemError(f"{flag} does not apply to the {kind} generator")
    avg_deps = 2.0 if avg_deps is None else avg_deps
    max_duration = 10 if max_duration is None else max_duration
    if kind in gen.EXAMPLES:
        g = gen.example_graph(kind)
        if ops is not None and ops != g.num_ops:
            raise ProblemError(f"the {kind} example has {g.num_ops} ops; omit --ops")
        return g
    if ops is None:
        raise ProblemError(f"--ops is required for the {kind} generator")
    _check_memory(kind, ops, p, avg_deps)
    common: dict[str, Any] = {"seed": seed, "max_duration": max_duration}
    if kind == "layered":  # always has memory sizes
        return gen.layered(ops, **common)
    if kind == "network":
        return gen.random_network(ops, seed=seed)
    common["memory"] = memory
    if kind == "gnp":
        prob = p if p is not None else min(1.0, 2.0 * avg_deps / max(1, ops - 1))
        return gen.gnp(ops, prob, **common)
    if kind == "fork-join":
        return gen.fork_join(ops, **common)
    if kind == "series-parallel":
        return gen.series_parallel(ops, **common)
    return planted(ops, units or 4, avg_deps=avg_deps, **common)


def _check_memory(kind: str, ops: int, p: float | None, avg_deps: float) -> None:
    """Refuse a graph whose estimated memory is past :data:`GENERATE_MEMORY_BYTES`, naming the
    options that make it so (gnp: ``p n (n - 1) / 2`` edges; planted: ``avg_deps`` per op;
    the others about 2 per op)."""
    if kind == "gnp" and p is not None:
        edges, given = p * ops * (ops - 1) / 2, f" with --p {p:g}"
    elif kind in ("gnp", "planted"):
        edges, given = avg_deps * ops, f" with --avg-deps {avg_deps:g}" if avg_deps != 2 else ""
    else:
        edges, given = 2.0 * ops, ""
    per_op = NETWORK_OP_BYTES if kind == "network" else GRAPH_OP_BYTES
    what = f"--ops {ops:,}{given}: a {kind} graph of about {edges:,.0f} edges"
    check_graph_memory(ops, edges, what, per_op)


def register(main: click.Group) -> None:
    """Add ``generate`` to the ``opsched`` command group."""

    @main.command("generate")
    @click.argument("kind", type=click.Choice(GENERATORS))
    @click.option(
        "--ops", "-n", type=click.IntRange(min=1, max=MAX_GENERATED_OPS), default=None,
        help=f"Number of ops. A graph is refused past {GENERATE_MEMORY_BYTES // 2**30} GiB of "
        f"memory at about {GRAPH_OP_BYTES:,} B per op ({NETWORK_OP_BYTES:,} for network) and "
        f"{GRAPH_EDGE_BYTES} B per edge: about 7,000,000 ops at 2 deps each.",
    )  # fmt: skip
    @click.option("--seed", "-s", type=click.IntRange(min=0), default=0, show_default=True)
    @click.option(
        "--units", "-k", type=click.IntRange(min=1), default=None,
        help="planted: units of the planted zero-idle schedule [default: 4].",
    )  # fmt: skip
    @click.option(
        "--memory", is_flag=True,
        help="Draw tensor sizes (layered: always; planted: and cap memory at the planted "
        "peak; not network).",
    )  # fmt: skip
    @click.option(
        "--max-duration", type=click.IntRange(min=1, max=2**40), default=None,
        help="Durations are integers in [1, max] (planted: they average about (1 + max) / 2, "
        "and one may exceed max; not network) [default: 10].",
    )  # fmt: skip
    @click.option("--p", "p", type=FiniteFloat(0, 1), default=None, help="gnp: edge prob.")
    @click.option(
        "--avg-deps", type=FiniteFloat(min=0, max=1e6), default=None,
        help="gnp and planted: mean dependencies per op [default: 2].",
    )  # fmt: skip
    @click.option(
        "--schedule", "schedule_out", type=click.Path(path_type=Path), default=None,
        help="planted: also write the optimal planted schedule here.",
    )  # fmt: skip
    @click.option("--output", "-o", type=click.Path(path_type=Path), required=True)
    @json_option
    @handle_errors
    def generate(
        kind: str,
        ops: int | None,
        seed: int,
        units: int | None,
        memory: bool,
        max_duration: int | None,
        p: float | None,
        avg_deps: float | None,
        schedule_out: Path | None,
        output: Path,
        as_json: bool,
    ) -> None:
        """Generate a graph: layered, gnp, fork-join, series-parallel, network, planted...

        \b
        opsched generate planted --ops 100000 --units 8 --memory -o p.json --schedule s.json
        opsched generate gnp --ops 1000 --p 0.01 --seed 3 -o g.json
        """
        from opsched.ir.jsonio import write_graph_json
        from opsched.zoo.planted import PlantedGraph

        if schedule_out is not None and kind != "planted":
            raise ProblemError(f"--schedule is for the planted generator, not {kind!r}")
        ctx = click.get_current_context()
        if kind in ("seed", "critical-path") and (
            ctx.get_parameter_source("seed") is click.core.ParameterSource.COMMANDLINE
        ):  # the two examples are fixed graphs: a seed would be ignored in silence
            raise ProblemError(f"--seed does not apply to the {kind} example (a fixed graph)")
        # the files are JSON whatever their name: a graph written as g.onnx or g.txt could
        # not be read back (read_graph goes by the suffix), as zoo export and fuse refuse
        for flag, path in (("-o", output), ("--schedule", schedule_out)):
            if path is not None and path.suffix.lower() != ".json" and not is_stream(path):
                raise InputError(
                    f"{flag} is written as JSON and must end with .json, not "
                    f"{path.suffix or 'no extension'!r}",
                    str(path),
                )
        from opsched._files import check_writable

        check_writable(output, schedule_out)  # both, before either is written
        made = generate_graph(
            kind, ops, seed=seed, units=units, memory=memory, max_duration=max_duration,
            p=p, avg_deps=avg_deps,
        )  # fmt: skip
        inst = made if isinstance(made, PlantedGraph) else None
        g = inst.graph if inst is not None else made
        write_graph_json(g, output)
        doc: dict[str, Any] = {
            "output": str(output), "kind": kind, "name": g.name, "ops": g.num_ops,
            "edges": g.num_edges, "work": g.work,
        }  # fmt: skip
        if inst is not None:
            doc |= {"units": inst.units, "makespan": inst.makespan,
                    "memory_cap": inst.memory_cap}  # fmt: skip
            if schedule_out is not None:
                inst.schedule.to_json(str(schedule_out))
                doc["schedule"] = str(schedule_out)
        if as_json:
            _emit_json(doc)
            return
        click.echo(f"wrote {output}: {g.summary()}")
        if inst is not None:
            cap = f", memory cap {inst.memory_cap} B" if inst.memory_cap is not None else ""
            click.echo(f"planted optimum: makespan {inst.makespan:g} on {inst.units} units{cap}")
            if schedule_out is not None:
                click.echo(f"wrote {schedule_out}: the planted (optimal) schedule")

"""CLI: ``opsched import-trace`` and ``opsched cost collect``.

``import-trace`` reads a PyTorch profiler trace and writes the op graph of one profiler step
(``-o``), optionally its measured schedule (``--schedule``) and the per-op kernel timing rows
of the whole trace (``--rows``). ``cost collect`` times a grid of ops with torch and writes
rows in the NeuSight table's schema. The commands are built in :func:`register`, which
imports the CLI helpers only then (``opsched.cli`` imports this module).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from opsched.errors import InputError

__all__ = ["register"]


def _check_suffix(path: Path, suffixes: tuple[str, ...], what: str) -> None:
    if not path.name.lower().endswith(suffixes):
        raise InputError(f"{what} must end with {' or '.join(suffixes)}", str(path))


def _write_rows(frame: Any, path: Path) -> None:
    """Write a DataFrame as CSV (gzip-compressed for ``.gz``), atomically."""
    import gzip

    from opsched._files import write_bytes_atomic

    data = frame.to_csv(index=False).encode("utf-8")
    if path.name.lower().endswith(".gz"):
        data = gzip.compress(data, mtime=0)  # the same rows give the same bytes
    write_bytes_atomic(data, path)


def _import_trace(
    trace: Path,
    output: Path,
    rows: Path | None,
    schedule: Path | None,
    step: int | None,
    device: int | None = None,
) -> tuple[Any, list[Path]]:
    """Import ``trace`` and write the requested files; returns the import and the paths."""
    from opsched._files import check_writable
    from opsched.importers.trace import import_trace
    from opsched.ir.jsonio import INDENT_MAX_OPS, graph_to_dict, write_json_atomic

    _check_suffix(output, (".json",), "-o")
    if schedule is not None:
        _check_suffix(schedule, (".json",), "--schedule")
    if rows is not None:
        _check_suffix(rows, (".csv", ".csv.gz"), "--rows")
    check_writable(output, schedule, rows)  # a bad --rows must not leave -o written
    imp = import_trace(trace, step, device)  # all computed before any file is written
    tl = imp.timeline
    doc = graph_to_dict(tl.graph)
    indent = 1 if tl.graph.num_ops <= INDENT_MAX_OPS else None
    writes: list[tuple[Path, Callable[[], object]]] = [
        (output, lambda: write_json_atomic(doc, output, indent))
    ]
    if schedule is not None:
        writes.append((schedule, lambda: tl.schedule.to_json(str(schedule))))
    if rows is not None:
        writes.append((rows, lambda: _write_rows(imp.rows, rows)))
    for _, write in writes:
        write()
    return imp, [p for p, _ in writes]


def register(main: click.Group) -> None:
    """Add ``import-trace`` to ``main`` and ``collect`` to its ``cost`` group.

    The ``cost`` group belongs to :mod:`opsched.cost.commands`; if it is not registered yet,
    that module is registered first (when it exists), so ``collect`` lands in the same group
    object whatever the order of the CLI's module list; without it a bare group is made.
    """
    from opsched._clikit import _emit_json, handle_errors, json_option

    @main.command("import-trace")
    @click.argument("trace", type=click.Path(path_type=Path))
    @click.option(
        "--output", "-o", type=click.Path(path_type=Path), required=True,
        help="Graph of the step (opsched-graph/1 JSON).",
    )  # fmt: skip
    @click.option(
        "--rows", type=click.Path(path_type=Path), default=None,
        help="Kernel timing rows of the whole trace (CSV, Kineto ops schema).",
    )  # fmt: skip
    @click.option(
        "--schedule", type=click.Path(path_type=Path), default=None,
        help="The measured timeline as an opsched-schedule/1 JSON.",
    )  # fmt: skip
    @click.option("--step", type=int, default=None, help="ProfilerStep number (default: first).")
    @click.option("--device", type=click.IntRange(min=0), default=None,
                  help="GPU of a step that ran on several (default: the only one).")  # fmt: skip
    @json_option
    @handle_errors
    def import_trace_cmd(
        trace: Path, output: Path, rows: Path | None, schedule: Path | None, step: int | None,
        device: int | None, as_json: bool,
    ) -> None:  # fmt: skip
        """Import a PyTorch profiler (Kineto) trace TRACE.json[.gz]."""
        imp, paths = _import_trace(trace, output, rows, schedule, step, device)
        tl = imp.timeline
        if as_json:
            a = tl.graph.attrs
            _emit_json({
                "graph": str(output), "schedule": str(schedule) if schedule else None,
                "rows_file": str(rows) if rows else None, "step": tl.step, "gpu": a["gpu"],
                "ops": tl.graph.num_ops, "edges": tl.graph.num_edges, "streams": a["streams"],
                "kernels": a["kernels"], "kernel_time_us": a["kernel_time_us"],
                "makespan_us": tl.schedule.makespan, "dropped_edges": a["dropped_edges"],
                "rows": len(imp.rows),
            })  # fmt: skip
            return
        click.echo(imp.summary())
        click.echo(f"wrote {', '.join(map(str, paths))}")

    @click.command("collect")
    @click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True)
    @click.option(
        "--output", "-o", type=click.Path(path_type=Path), required=True,
        help="Rows (CSV, NeuSight schema).",
    )  # fmt: skip
    @click.option("--quick", is_flag=True, help="A few tiny shapes (a smoke test).")
    @click.option(
        "--shapes", "shapes_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
        default=None, help="Time the shapes of this table instead of the grid: NeuSight schema, "
        "or DeepBench's (convolutions in all three directions, GEMMs; rows in its schema).",
    )  # fmt: skip
    @click.option(
        "--per-op", type=click.IntRange(min=1), default=None,
        help="With --shapes: at most N shapes per op, spread over sizes.",
    )  # fmt: skip
    @click.option(
        "--dtype", default="float32", show_default=True,
        help="float32, or float16 / bfloat16 on cuda; with DeepBench shapes also tf32 "
        "(float32 with TF32 allowed; float32 then means TF32 off).",
    )  # fmt: skip
    @click.option(
        "--repeats", type=click.IntRange(min=3), default=25, show_default=True,
        help="Timed calls per shape, the median kept; with DeepBench shapes the replays of "
        "each loop (default there: 5).",
    )  # fmt: skip
    @click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True)
    @click.option(
        "--threads", type=click.IntRange(min=1), default=None,
        help="CPU threads for torch while timing (default: torch's).",
    )  # fmt: skip
    @json_option
    @handle_errors
    def collect_cmd(
        device: str, output: Path, quick: bool, shapes_file: Path | None, per_op: int | None,
        dtype: str, repeats: int, warmup: int, threads: int | None, as_json: bool,
    ) -> None:  # fmt: skip
        """Time a grid of ops with torch (median of repeats, cache flushed) and write rows.

        With --shapes, the shapes of an existing timing table (say neusight_ops.csv.gz) are
        timed instead, so that `opsched cost evaluate` on the output measures the model on
        this device for shapes other GPUs were measured on. A DeepBench table
        (deepbench_conv.csv, deepbench_gemm.csv) gives rows in its own schema: convolutions
        forward, backward data and backward filter, GEMMs, each the median replay of a CUDA
        graph of back-to-back calls (opsched.cost.collect_deepbench).
        """
        from opsched._files import check_writable
        from opsched.cost.collect import collect, require_torch

        _check_suffix(output, (".csv", ".csv.gz"), "-o")
        # a timing run takes minutes to hours: a missing or read-only folder is found now,
        # not when the rows are written at the end (it had timed every shape, then failed)
        check_writable(output)
        if per_op is not None and shapes_file is None:
            raise InputError("--per-op needs --shapes")
        if quick and shapes_file is not None:
            raise InputError("--quick and --shapes exclude each other")
        specs = None
        if shapes_file is not None:
            from opsched.cost.data import detect_schema, read_table
            from opsched.cost.shapes import specs_from_rows

            table = read_table(shapes_file)
            try:
                schema = detect_schema(table.columns, str(shapes_file))
            except InputError:  # a bare shape list: specs_from_rows says what it lacks
                schema = ""
            if schema.startswith("deepbench"):
                # --repeats counts the replays whose median is each time (default: the
                # collector's own 5); --threads holds as for the grid (both were ignored)
                given = click.get_current_context().get_parameter_source("repeats")
                replays = repeats if given is not ParameterSource.DEFAULT else None
                frame = _collect_deepbench(
                    table, schema, device, dtype, per_op, warmup, shapes_file, as_json,
                    replays, threads,
                )  # fmt: skip
                _write_collected(frame, output, device, as_json)
                return
            specs, skipped = specs_from_rows(table, per_op, source=str(shapes_file))
            if not specs:
                raise InputError(f"{shapes_file}: no shapes of ops the collector times")
            if not as_json:
                click.echo(
                    f"{len(specs)} shapes from {shapes_file} ({skipped} rows skipped)", err=True
                )
        require_torch()

        def show(i: int, n: int, spec: dict[str, Any]) -> None:
            if not as_json:
                click.echo(f"\r[{i + 1}/{n}] {spec['op']:<8}", nl=False, err=True)

        frame = collect(
            device, quick=quick, specs=specs, dtype=dtype, repeats=repeats, warmup=warmup,
            threads=threads, progress=show,
        )  # fmt: skip
        _write_collected(frame, output, device, as_json)

    def _write_collected(frame: Any, output: Path, device: str, as_json: bool) -> None:
        if not as_json:
            click.echo("", err=True)
        _write_rows(frame, output)
        name = frame["gpu"].iloc[0] if len(frame) else None
        if as_json:
            _emit_json({"output": str(output), "rows": len(frame), "device": device, "gpu": name})
            return
        click.echo(f"wrote {output}: {len(frame)} rows on {name}")

    def _collect_deepbench(
        table: Any, schema: str, device: str, dtype: str, per_op: int | None, warmup: int,
        source: Path, as_json: bool, replays: int | None = None, threads: int | None = None,
    ) -> Any:  # fmt: skip
        """Time a DeepBench-schema table's shapes (at most ``per_op``, a fixed sample)."""
        import pandas as pd

        from opsched.cost.collect_deepbench import collect_deepbench, deepbench_shapes

        shapes = deepbench_shapes(table, schema)
        if not shapes:
            raise InputError("no shapes in the table", str(source))
        if per_op is not None and len(shapes) > per_op:
            shapes = pd.DataFrame(shapes).sample(n=per_op, random_state=0).to_dict("records")

        def show(i: int, n: int, spec: dict[str, Any]) -> None:
            if not as_json:
                click.echo(f"\r[{i + 1}/{n}] {schema}", nl=False, err=True)

        more = {} if replays is None else {"replays": replays}
        return collect_deepbench(pd.DataFrame(shapes), schema, device, dtype, warmup=warmup,
                                 threads=threads, progress=show, **more)  # fmt: skip

    if not isinstance(main.commands.get("cost"), click.Group):
        try:
            importlib.import_module("opsched.cost.commands").register(main)
        except ModuleNotFoundError as e:
            if e.name != "opsched.cost.commands":
                raise
    group = main.commands.get("cost")
    if not isinstance(group, click.Group):
        group = click.Group("cost", help="Cost model: measured timings and predictions.")
        main.add_command(group)
    group.add_command(collect_cmd)

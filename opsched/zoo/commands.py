"""``opsched zoo``: list the model zoo and export its networks as ``opsched-graph/1`` JSON.

Examples
--------
>>> from click.testing import CliRunner
>>> from opsched.cli import main
>>> r = CliRunner().invoke(main, ["zoo", "list"])
>>> r.exit_code, "resnet50" in r.output
(0, True)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from opsched._files import is_stream

__all__ = ["register"]


def _apply_cost(graph: Any, gpu: str, dtype: str) -> Any:
    """Durations from the cost model (``opsched.cost.apply``), imported only when asked."""
    import importlib

    from opsched.errors import ProblemError

    try:
        apply = getattr(importlib.import_module("opsched.cost"), "apply", None)
    except ImportError:
        apply = None
    if apply is None:
        raise ProblemError(
            f"--gpu {gpu}: the cost model (opsched.cost.apply) is not available in this build"
        )
    return apply(graph, gpu, dtype)


def register(main: click.Group) -> None:
    """Add the ``zoo`` command group to the ``opsched`` command line."""
    from opsched._clikit import _emit_json, handle_errors, json_option

    @main.group()
    def zoo() -> None:
        """The model zoo: published networks as op graphs (list, export)."""

    @zoo.command("list")
    @json_option
    @handle_errors
    def zoo_list(as_json: bool) -> None:
        """The networks with their op count, parameters and GFLOPs at batch 1."""
        from opsched.zoo.models import MODELS, build

        rows = []
        for name, description in MODELS.items():
            g = build(name)
            rows.append(
                {
                    "name": name,
                    "ops": g.num_ops,
                    "edges": g.num_edges,
                    "params": g.attrs["params"],
                    "gflops": round(g.attrs["flops"] / 1e9, 3),
                    "description": description,
                }
            )
        if as_json:
            _emit_json(rows)
            return
        click.echo(f"{'name':<17} {'ops':>5} {'params':>11} {'GFLOPs':>8}  description")
        for r in rows:
            click.echo(
                f"{r['name']:<17} {r['ops']:>5} {r['params']:>11,} {r['gflops']:>8.3f}  "
                f"{r['description']}"
            )

    @zoo.command("export")
    @click.argument("name")
    @click.option(
        "--batch",
        "-b",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="Batch size (images, tiles or sequences).",
    )
    @click.option(
        "--gpu",
        default=None,
        help="Durations from the cost model for this GPU (else FLOP-proportional "
        "placeholders, 1 tick per MFLOP).",
    )
    @click.option(
        "--dtype",
        default="float32",
        show_default=True,
        help="Element type of the tensors (and of the cost model's kernels).",
    )
    @click.option(
        "--seed",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        help="Seed of RandWire's random graphs.",
    )
    @click.option(
        "--fuse/--no-fuse",
        "do_fuse",
        default=False,
        show_default=True,
        help="Fuse Conv+BN+ReLU, GEMM+bias+activation and elementwise chains first.",
    )
    @click.option(
        "--piece",
        "pieces",
        multiple=True,
        help="Keep only the ops under this name prefix (a cell, block or stage, e.g. "
        "cell_3, Mixed_5b, stage4); repeat for several. Tensors read from outside become "
        "zero-time inputs; weights are not counted.",
    )
    @click.option(
        "--output",
        "-o",
        type=click.Path(dir_okay=False, path_type=Path),
        required=True,
        help="Graph file to write (.json).",
    )
    @json_option
    @handle_errors
    def zoo_export(
        name: str,
        batch: int,
        gpu: str | None,
        dtype: str,
        seed: int,
        do_fuse: bool,
        pieces: tuple[str, ...],
        output: Path,
        as_json: bool,
    ) -> None:
        """Write zoo network NAME (or pieces of it) as an opsched-graph/1 JSON file."""
        from opsched.errors import OpschedError
        from opsched.ir.jsonio import write_graph_json
        from opsched.zoo.models import build

        if output.suffix.lower() != ".json" and not is_stream(output):
            raise OpschedError(
                f"can only write opsched-graph/1 JSON (.json), not "
                f"{output.suffix or 'no extension'!r}",
                str(output),
            )
        given = click.get_current_context().get_parameter_source("seed")
        if given is click.core.ParameterSource.COMMANDLINE and name != "randwire":
            raise OpschedError(f"--seed: {name} is not random (only randwire takes a seed)")
        g = build(name, batch=batch, dtype=dtype, seed=seed)
        params, flops = g.attrs["params"], g.attrs["flops"]
        if do_fuse:
            from opsched.transforms.fusion import fuse

            g, _ = fuse(g)
        if gpu is not None:
            g = _apply_cost(g, gpu, dtype)
        if pieces:
            from opsched.transforms import extract

            g = extract(g, pieces)
        write_graph_json(g, output)
        if as_json:
            _emit_json(
                {
                    "output": str(output),
                    "name": g.name,
                    "ops": g.num_ops,
                    "edges": g.num_edges,
                    "params": None if pieces else params,  # of the whole network
                    "flops": None if pieces else flops,
                    "work": g.work,
                    "gpu": gpu,
                }
            )
            return
        click.echo(f"wrote {output}: {g.summary()}")

"""``opsched fuse GRAPH -o OUT``: the fusion pass on the command line."""

from __future__ import annotations

from pathlib import Path

import click

from opsched._clikit import _emit_json, handle_errors, json_option
from opsched._files import is_stream
from opsched.errors import GraphError, OpschedError

__all__ = ["register"]


def register(main: click.Group) -> None:
    """Add ``fuse`` to the ``opsched`` command group."""

    @main.command("fuse")
    @click.argument("graph", type=click.Path(path_type=Path))
    @click.option("--output", "-o", type=click.Path(path_type=Path), required=True)
    @click.option(
        "--max-ops", type=click.IntRange(min=1), default=8, show_default=True,
        help="Most ops fused into one.",
    )  # fmt: skip
    @click.option(
        "--max-bytes", type=click.IntRange(min=0), default=None,
        help="Most memory traffic of one fused op (bytes); no limit if omitted.",
    )  # fmt: skip
    @click.option(
        "--no-new-inputs", is_flag=True,
        help="Do not absorb an epilogue that brings an input made by another op (residual add).",
    )  # fmt: skip
    @json_option
    @handle_errors
    def fuse_cmd(
        graph: Path,
        output: Path,
        max_ops: int,
        max_bytes: int | None,
        no_new_inputs: bool,
        as_json: bool,
    ) -> None:
        """Fuse Conv+BN+ReLU, GEMM+bias+activation and elementwise chains of GRAPH."""
        from opsched.importers import read_graph
        from opsched.ir.jsonio import write_graph_json
        from opsched.transforms.fusion import fuse

        if output.suffix.lower() != ".json" and not is_stream(output):
            raise OpschedError("the fused graph is written as opsched-graph/1 JSON (.json)",
                               str(output))  # fmt: skip
        g = read_graph(graph)
        try:
            fused, report = fuse(g, max_ops=max_ops, max_bytes=max_bytes,
                                 new_inputs=not no_new_inputs)  # fmt: skip
        except GraphError as e:  # an op's attrs are wrong: say which file it is in
            raise e.located(str(graph)) from None
        write_graph_json(fused, output)
        if as_json:
            _emit_json({"output": str(output), "graph": g.name} | report.to_dict())
            return
        click.echo(f"wrote {output}")
        click.echo(report.summary())

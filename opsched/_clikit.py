"""Helpers shared by every ``opsched`` command module: errors, JSON output, common options.

Command modules import from here, never from :mod:`opsched.cli` (which imports them).
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from opsched._files import guarding_outputs
from opsched.errors import OpschedError, ProblemError

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INVALID",
    "EXIT_NO_SCHEDULE",
    "FiniteFloat",
    "cap_option",
    "check_graph_memory",
    "emit_json",
    "fail",
    "handle_errors",
    "json_option",
    "load_problem",
    "machine_from_options",
    "progress_lines",
    "res_option",
    "units_option",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Exit status of a schedule that fails validation, and of a solve that found no schedule
#: (a heuristic's dead end under a memory cap, an exact solver out of time): the command ran,
#: its answer is "none".
EXIT_INVALID = 1
EXIT_NO_SCHEDULE = 1
EXIT_BAD_INPUT = 2


class FiniteFloat(click.FloatRange):
    """A float option that must be a finite number, within the optional range.

    click's ``FloatRange`` lets ``nan`` and ``inf`` through (``nan < min`` is false), and a
    ``nan`` time limit or makespan limit ended in an internal error or a solve that never
    stopped.
    """

    name = "float"

    def _describe_range(self) -> str:
        if self.min is None and self.max is None:
            return ""  # no "x<=None" in the help of an unbounded option
        return str(super()._describe_range())

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return rv


def progress_lines() -> Callable[[str], None]:
    """A function that prints a line on stderr, stamped with the seconds since it was made
    (the progress of long commands; stdout keeps their result)."""
    t0 = time.perf_counter()
    return lambda line: click.echo(f"[{time.perf_counter() - t0:6.1f} s] {line}", err=True)


def _jsonable(x: Any) -> Any:
    """Convert numpy scalars and integral floats so JSON output reads naturally."""
    import numpy as np

    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, float) and x.is_integer() and abs(x) < 2**53:
        return int(x)
    return x


def _emit_json(doc: Any) -> None:
    click.echo(json.dumps(_jsonable(doc), indent=1, allow_nan=False))


#: The most ops a command generates or unrolls (``generate --ops``, ``pipeline``): past any
#: graph this machine's memory holds; larger sizes ran for minutes without a word.
MAX_GENERATED_OPS = 50_000_000

#: The most memory ``generate`` may need for its graph, as estimated up front from
#: :data:`GRAPH_OP_BYTES` and :data:`GRAPH_EDGE_BYTES` (a 24 GiB machine, with room for the
#: rest): a larger graph is refused naming the option, where it had run for minutes and then
#: said no more than "out of memory".
GENERATE_MEMORY_BYTES = 16 * 2**30
#: Bytes of memory per op (``network``'s ops carry shapes: 4 KB) and per edge of a generated
#: graph, measured as the peak size of ``opsched generate`` at 100,000 - 1,000,000 ops.
GRAPH_OP_BYTES, NETWORK_OP_BYTES, GRAPH_EDGE_BYTES = 2_000, 4_000, 150

#: The most runs of ``simulate --runs``, and the most durations it draws (runs x ops): the
#: draws are one float matrix, 24 B per duration at the peak of drawing (6 GB at the bound).
MAX_SIMULATED_RUNS = 1_000_000
MAX_SIMULATED_DURATIONS = 250_000_000


def check_graph_memory(
    ops: float, edges: float, what: str, per_op: int | None = None, where: str | None = None
) -> None:
    """Refuse a graph of ``ops`` ops and ``edges`` edges about to be built whose estimated
    memory (``per_op`` bytes an op, :data:`GRAPH_OP_BYTES` by default, and
    :data:`GRAPH_EDGE_BYTES` an edge) is past :data:`GENERATE_MEMORY_BYTES`; ``what`` names
    the options that make it so."""
    per_op = GRAPH_OP_BYTES if per_op is None else per_op
    need = ops * per_op + edges * GRAPH_EDGE_BYTES
    if need > GENERATE_MEMORY_BYTES:
        gib = 2**30
        raise ProblemError(
            f"{what} needs about {need / gib:,.0f} GiB of memory, past the "
            f"{GENERATE_MEMORY_BYTES // gib} GiB allowed ({per_op:,} B per op, "
            f"{GRAPH_EDGE_BYTES} B per edge)",
            where,
        )


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    # one line, whatever names it quotes: a line break in a file or op name is shown escaped
    one_line = str(message).replace("\r", "\\r").replace("\n", "\\n")
    click.echo(f"opsched: error: {one_line}", err=True)
    sys.exit(code)


def handle_errors(fn: F) -> F:
    """Turn opsched errors into one line on stderr and exit status 2 (never a traceback)."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with guarding_outputs():  # no output may replace an input or another output
                return fn(*args, **kwargs)
        except OpschedError as e:
            _fail(str(e))
        except BrokenPipeError:  # the reader went away (`| head`): as a SIGPIPE'd tool does
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error
            sys.exit(141)
        except KeyboardInterrupt:
            sys.exit(130)
        except RecursionError:
            _fail("input is nested too deeply")
        except MemoryError:
            _fail("out of memory")
        except Exception as e:  # an opsched bug: still one line, with a hint
            if "OPSCHED_DEBUG" in __import__("os").environ:
                raise
            _fail(f"internal error ({type(e).__name__}: {e}); set OPSCHED_DEBUG=1 for details", 3)

    return wrapper  # type: ignore[return-value]


def _parse_resources(text: str | None) -> dict[str, int]:
    out: dict[str, int] = {}
    if not text:
        return out
    for part in text.split(","):
        name, eq, value = part.partition("=")
        if not eq or not name.strip():
            raise ProblemError(f"--resources: expected NAME=CAPACITY, got {part!r}")
        try:
            cap = int(value)
        except ValueError:
            raise ProblemError(
                f"--resources: capacity of {name.strip()!r} must be an integer, got {value!r}"
            ) from None
        name = name.strip()
        if not 0 <= cap <= 2**62:
            raise ProblemError(f"--resources: capacity of {name!r} must be in [0, 2^62], "
                               f"got {value.strip()}")  # fmt: skip
        if name == "units":
            raise ProblemError("--resources: the 'units' capacity is set with --units")
        if name in out:
            raise ProblemError(f"--resources: {name!r} is given twice")
        out[name] = cap
    return out


def check_resource_names(graph: Any, resources: dict[str, int], where: str) -> None:
    """Refuse a ``--resources`` name that neither an op of ``graph`` (read from ``where``)
    demands nor the graph declares: a misspelt name would otherwise cap nothing."""
    known = [r for r in graph.resource_names() if r != "units"]
    for name in resources:
        if name not in known:
            have = f"its resources: {', '.join(known)}" if known else "it names none"
            raise ProblemError(f"--resources: {where} has no resource {name!r} ({have})")


def _machine(units: int | None, memory_cap: str | None, resources: str | None) -> Any:
    from opsched.problem import Machine
    from opsched.units import parse_bytes

    cap = None
    if memory_cap is not None:
        try:
            cap = parse_bytes(memory_cap)
        except ProblemError as e:
            raise ProblemError(f"--memory-cap: {e.message}") from None
    return Machine(units=units, resources=_parse_resources(resources), memory_cap=cap)


units_option = click.option(
    "--units",
    "-k",
    type=click.IntRange(min=1),
    default=None,
    help="Number of identical compute units (streams); unlimited if omitted. A count above "
    "the ops' total unit demand is that total.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
cap_option = click.option("--memory-cap", default=None, help="Memory cap, e.g. 3GiB, 512MB, 4096.")
res_option = click.option("--resources", default=None, help="Capacities, e.g. R1=10,R2=4.")


def _load_problem(graph: Path, units: int | None, memory_cap: str | None,
                  resources: str | None) -> Any:  # fmt: skip
    from opsched.importers import read_graph
    from opsched.problem import Problem

    machine = _machine(units, memory_cap, resources)
    g = read_graph(graph)
    check_resource_names(g, machine.resources, str(graph))
    try:
        problem = Problem(g, machine)
    except ProblemError as e:  # an op demanding a resource no capacity is given for
        raise e.located(str(graph)) from None
    if units is not None and not problem.graph.demand_array("units").any():
        # a PSPLIB instance runs on its resources alone; a JSON graph whose ops all give
        # demands without "units" (or hold nothing) likewise
        psplib = str(graph).lower().endswith((".sm", ".rcp"))
        why = "a PSPLIB instance runs on its resources alone" if psplib else (
            'each op\'s "demands" leave out "units", or it holds nothing')  # fmt: skip
        raise ProblemError(
            f"--units {units}: no op demands a compute unit ({why}), so the option would "
            "change nothing",
            str(graph),
        )
    g = problem.graph
    if memory_cap is not None and not (
        g.persistent_bytes or g.output_sizes.any() or g.workspace_sizes.any()
    ):
        raise ProblemError(
            f"--memory-cap {memory_cap}: the graph has no memory sizes (every output, "
            "workspace and persistent size is 0; STG and PSPLIB files have none), so the "
            "option would change nothing",
            str(graph),
        )
    return clamp_units(problem)


def clamp_units(problem: Any) -> Any:
    """``problem`` with ``units`` lowered to the ops' total unit demand where it is above it:
    the same machine (no schedule can use more units at once), and what the solvers size
    their per-unit state by (``--units 1000000000`` on 12 ops ran out of memory)."""
    k, need = problem.machine.units, problem.unit_pool
    return problem.with_machine(units=need) if k is not None and k > need else problem


# public names for command modules
emit_json = _emit_json
fail = _fail
machine_from_options = _machine
load_problem = _load_problem

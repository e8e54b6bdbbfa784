"""Compute the demo page's data with opsched's own APIs and write one self-contained HTML file.

The page (``page.html`` with ``page.css`` and ``page.js`` inlined, no external resource) has
three tabs: the scheduling loop step by step on the seed graph, the three strategies side by
side, and the critical-path optimisation of the program A..E. All numbers are computed here
and embedded as JSON; the script only draws them.
"""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path
from typing import Any

from opsched._files import write_text_atomic
from opsched.demo import critical_path_demo, critical_path_program, seed_problem
from opsched.demo_page.strategies import compare_strategies, inception_block
from opsched.demo_page.trace import layered_layout, trace_greedy
from opsched.errors import ProblemError
from opsched.ir import OpGraph
from opsched.transforms import dependency_edges, program_order_chain

__all__ = ["page_data", "render_page", "write_page"]

_MAX_STRATEGY_OPS = 60


def _dag(graph: OpGraph, edge_kinds: dict[tuple[str, str], str] | None = None) -> dict[str, Any]:
    pos = layered_layout(graph)
    return {
        "nodes": [{"name": v, "x": pos[v][0], "y": pos[v][1]} for v in graph.names],
        "edges": [
            {"src": d, "dst": op.name, "kind": (edge_kinds or {}).get((d, op.name), "")}
            for op in graph.ops
            for d in op.deps
        ],
    }


def _critical_path_tab() -> dict[str, Any]:
    r = critical_path_demo()
    program = critical_path_program()
    chain = program_order_chain(program)
    derived, named = dependency_edges(program)
    kinds = {(e.src, e.dst): f"{e.kind} {e.buffer}" for e in named}

    def sched(key: str) -> list[dict[str, Any]]:
        return [
            {"name": o.name, "start": o.start, "end": o.end, "unit": o.unit} for o in r[key].ops
        ]

    return {
        "program": [
            {"name": op.name, "reads": list(op.reads), "writes": list(op.writes)}
            for op in program.ops
        ],
        "before": {
            "length": r["before"],
            "path": r["before_path"],
            "dag": _dag(chain),
            "schedule": sched("schedule_before"),
            "makespan": r["schedule_before"].makespan,
        },
        "after": {
            "length": r["after"],
            "path": r["after_path"],
            "dag": _dag(derived, kinds),
            "schedule": sched("schedule_after"),
            "makespan": r["schedule_after"].makespan,
        },
        "edges": [str(e) for e in named],
        "speedup_percent": r["speedup_percent"],
    }


def page_data(
    *,
    seed_units: int = 2,
    graph: OpGraph | None = None,
    units: int = 4,
    micro_batches: int = 4,
    time_limit: float = 10.0,
) -> dict[str, Any]:
    """Everything the page shows, as JSON-ready data.

    Parameters
    ----------
    seed_units
        Compute units of the step-by-step seed loop (tab 1).
    graph
        Graph of the strategy comparison (tab 2); the Inception-style block by default. At
        most 60 ops (the memory-aware panel is solved exactly) and no memory cap applies.
    units, micro_batches, time_limit
        Units of the parallel and pipeline panels, micro-batches of the pipeline, CP-SAT
        seconds of the memory-aware panel.

    Raises
    ------
    ProblemError
        If an option is out of range or the graph is too large for the page.

    Examples
    --------
    >>> d = page_data(micro_batches=2, time_limit=5)
    >>> seed, critical = d["seed"], d["critical"]
    >>> seed["makespan"], seed["analysis"]["critical_path"], critical["after"]["length"]
    (6.0, 6.0, 3.0)
    """
    for name, value in (
        ("seed units", seed_units),
        ("units", units),
        ("micro-batches", micro_batches),
    ):
        if value < 1:
            raise ProblemError(f"{name} must be >= 1, got {value}")
    if not (time_limit > 0 and math.isfinite(time_limit)):
        raise ProblemError(f"time limit must be a positive number, got {time_limit}")
    g = graph if graph is not None else inception_block()
    if g.num_ops == 0:
        raise ProblemError("the strategy graph has no ops", f"graph {g.name!r}")
    if g.num_ops > _MAX_STRATEGY_OPS:
        raise ProblemError(
            f"{g.num_ops} ops: the strategy panel takes at most {_MAX_STRATEGY_OPS} "
            "(its memory-aware schedule is solved exactly)",
            f"graph {g.name!r}",
        )
    for op in g.ops:
        extra = [r for r, a in op.demands.items() if r != "units" and a > 0]
        if extra or op.units > 1:
            raise ProblemError(
                f"the strategy panel needs ops on at most one unit and no other resources; "
                f"demands {dict(op.demands)}",
                f"op {op.name!r}",
            )
    seed = trace_greedy(seed_problem(units=seed_units))
    seed["dag"] = _dag(seed_problem().graph)
    strategies = compare_strategies(
        g, units=units, micro_batches=micro_batches, time_limit=time_limit
    )
    strategies["dag"] = _dag(g)
    return {"seed": seed, "strategies": strategies, "critical": _critical_path_tab()}


def _asset(name: str) -> str:
    return resources.files("opsched.demo_page").joinpath(name).read_text(encoding="utf-8")


def render_page(data: dict[str, Any]) -> str:
    """The HTML text of the page for ``data`` (from :func:`page_data`).

    The JSON is embedded in a ``<script type="application/json">`` element with every ``<``
    escaped, so no value can close the element early.

    >>> html = render_page({"seed": {}, "strategies": {}, "critical": {}})
    >>> html.startswith("<!DOCTYPE html>"), "http" in html.split("<script")[0].lower()
    (True, False)
    """
    payload = json.dumps(data, allow_nan=False, separators=(",", ":"))
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    html = _asset("page.html")
    parts = {"/*@CSS@*/": _asset("page.css"), "/*@JS@*/": _asset("page.js"), "/*@DATA@*/": payload}
    for key, text in parts.items():
        html = html.replace(key, text, 1)
    return html


def write_page(path: str | Path, **options: Any) -> dict[str, Any]:
    """Compute the data, render the page and write it to ``path`` atomically.

    ``options`` are those of :func:`page_data`; returns the data written.

    >>> import tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "demo.html")
    >>> d = write_page(out, micro_batches=2, time_limit=5)
    >>> os.path.getsize(out) > 10000, d["critical"]["speedup_percent"]
    (True, 40.0)
    """
    data = page_data(**options)
    write_text_atomic(render_page(data), path)
    return data

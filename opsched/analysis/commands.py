"""``opsched analyze GRAPH``: what a graph allows before any schedule is made (critical path,
lower bounds, parallelism, Amdahl, least memory) and, under ``--memory-cap``, the orders the
cap forces and the two-unit bounds (:mod:`opsched.analysis`).

Examples
--------
>>> from click.testing import CliRunner
>>> from opsched.cli import main
>>> r = CliRunner().invoke(main, ["analyze", "--help"])
>>> r.exit_code, "critical path" in r.output
(0, True)
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from opsched._clikit import (
    _emit_json,
    _parse_resources,
    cap_option,
    handle_errors,
    json_option,
    machine_from_options,
    res_option,
    units_option,
)

if TYPE_CHECKING:
    from opsched.ir.graph import OpGraph

__all__ = ["ANALYZE_LEAST_PEAK_MAX_OPS", "ANALYZE_SERIAL_STATES", "analyze", "register"]


@click.command("analyze")
@click.argument("graph", type=click.Path(path_type=Path))
@units_option
@res_option
@cap_option
@json_option
@handle_errors
def analyze(
    graph: Path, units: int | None, resources: str | None, memory_cap: str | None, as_json: bool
) -> None:
    """Ops, edges, work, critical path, lower bounds, parallelism, Amdahl, least memory.

    The least memory is given twice: the bound every schedule needs, and the peak of the best
    one-unit order found (the least peak of any schedule, on any number of units, when the
    search proves it).

    With ``--memory-cap``, also the op orders that cap forces (one must end before the other
    starts in every schedule within it), the critical path with them, and whether a one-unit
    order fits (then a schedule exists); a cap no schedule can meet is an error (exit 2).
    With ``--units 2`` as well, the makespan bound of the pairs of ops the cap lets run at
    once (:mod:`opsched.analysis.overlap`), and where it is higher, that bound split on the
    tensors whose lifetimes the cap keeps apart (:mod:`opsched.analysis.tensor_cases`).
    """
    from opsched.analysis import analyze as run
    from opsched.importers import read_graph
    from opsched.units import format_bytes

    cap = machine_from_options(None, memory_cap, None).memory_cap  # the option's errors first
    g = read_graph(graph)
    caps = {**g.resources, **_parse_resources(resources)}
    a = run(g, units, caps)
    a["least_peak"] = _least_peak_summary(g)
    if cap is not None:
        a["cap_orders"] = _cap_orders_summary(g, cap, graph, a["least_peak"], units)
    if as_json:
        _emit_json(a)
        return
    lb = a["lower_bound"]
    am = a["amdahl"]
    k = units if units else "unlimited"
    click.echo(f"graph {a['name']}: {a['ops']} ops, {a['edges']} edges, work {a['work']:g}")
    cp_ops = a["critical_path_ops"]
    shown = " -> ".join(cp_ops[:12]) + (" -> ..." if len(cp_ops) > 12 else "")
    click.echo(f"critical path {a['critical_path']:g}: {shown}")
    terms = f"critical path {lb['critical_path']:g}"
    if units:  # the work and serial bounds are terms of a unit count (0 without one)
        terms += f", work / units {lb['work']:g}, serial part {lb['serial']:g}"
    click.echo(f"lower bound on {k} units: {lb['value']:g} (binding: {lb['binding']}; {terms})")
    for r, v in lb["energy"].items():
        click.echo(f"  energy bound of {r}: {v:g}")
    for r, v in lb["ramp"].items():
        click.echo(f"  ramp bound of {r}: {v:g} (idle forced at the start, the end, and "
                   f"while each op's ancestors drain)")  # fmt: skip
    click.echo(f"parallelism: max {a['max_parallelism']}, average {a['average_parallelism']:.3f}")
    click.echo(
        f"Amdahl: serial fraction {am['serial_fraction']:.3f}, speedup bound "
        f"{am['speedup_bound_amdahl']:.3f} (with the DAG: {am['speedup_bound']:.3f})"
    )
    mm = a["min_memory"]
    click.echo(
        f"memory every schedule needs, at least: {format_bytes(mm['bytes'])} ({mm['bytes']} B), "
        f"{mm['needed_by']}"
    )
    lp = a["least_peak"]
    if lp is not None:
        size = f"{format_bytes(lp['bytes'])} ({lp['bytes']} B)"
        how = f"one op at a time in the best order found ({lp['method']})"
        click.echo(
            f"least peak of any schedule: {size}, proven: {how}"
            if lp["proven"]
            else f"least peak of any schedule: at most {size}, {how}; not proven"
        )
    if cap is not None:
        co = a["cap_orders"]
        pairs = [f"{i} -> {j}" for i, j in co["orders"]]
        shown = ", ".join(pairs[:12]) + (f", ... ({len(pairs)} in all)" if len(pairs) > 12 else "")
        stop = "" if co["complete"] else f" (search stopped after {co['flows']} flows)"
        click.echo(
            f"orders a memory cap of {format_bytes(cap)} forces: {len(pairs)}{stop}"
            + (f": {shown}" if pairs else "")
        )
        click.echo(f"critical path with them: {co['critical_path']:g}")
        one = co["one_unit"]
        if one["fits"]:
            click.echo(
                f"a schedule fits: one op at a time, an order peaks at {format_bytes(one['peak'])}"
                f" ({one['peak']} B)"
            )
        else:
            click.echo(f"whether any schedule fits: unknown (one-unit search stopped after "
                       f"{one['states']:,} states)")  # fmt: skip
        ov = co.get("overlap")
        if ov is not None:
            click.echo(
                f"makespan on 2 units within the cap: at least {ov['bound']:g} (work "
                f"{ov['work']:g}, at most {ov['paired']:g} of it two ops at once; "
                f"{len(ov['apart'])} pairs can never run together)"
            )
        split = co.get("cases")
        if ov is not None and split is not None and split["bound"] > ov["bound"]:
            apart = ", ".join(f"{a} / {b}" for a, b in split["exclusive"])
            how = (
                f"split on the tensors the cap keeps apart ({apart})"
                if apart
                else "with how much work the cap lets overlap each op (no tensors to split on)"
            )
            click.echo(f"{how}: at least {split['bound']:g}")  # fmt: skip


#: States the one-unit searches of ``analyze`` may keep (a second or two).
ANALYZE_SERIAL_STATES = 100_000

#: ``analyze`` searches the least peak on graphs up to this size (the beam alone takes
#: about 0.7 s at 1,000 ops).
ANALYZE_LEAST_PEAK_MAX_OPS = 1_000


def _least_peak_summary(g: OpGraph) -> dict[str, object] | None:
    """The best one-unit order's peak, which is the least peak of any schedule when proven
    (:mod:`opsched.solver.serial`); None on graphs above the size limit."""
    from opsched.heuristics.memory import min_memory_order_result

    if g.num_ops > ANALYZE_LEAST_PEAK_MAX_OPS:
        return None
    r = min_memory_order_result(g, max_states=ANALYZE_SERIAL_STATES)
    return {"bytes": r.peak, "proven": r.optimal, "method": r.method, "states": r.states}


def _cap_orders_summary(
    g: OpGraph, cap: int, graph: Path, least: dict[str, Any] | None, units: int | None
) -> dict[str, object]:
    """The orders ``cap`` forces on ``g`` (names), or the one-line error if it is impossible.

    Whether a schedule fits comes from ``least`` (:func:`_least_peak_summary`) where that
    settles it (an order within the cap, or a proven least peak above it), else from the
    one-unit decision search.
    """
    from opsched.analysis.cap_orders import cap_orders, ordered_critical_path
    from opsched.errors import ProblemError
    from opsched.problem import Machine, Problem
    from opsched.solver.serial import SerialCheck, serial_cap_check

    # the machine as given (-k, else unlimited units): Machine()'s one unit refused 2-unit ops
    reason = Problem(g, Machine(units=units, memory_cap=cap)).infeasibility_reason(cut=True)
    if reason is None:
        r = cap_orders(g, cap - g.persistent_bytes)
        reason = r.describe_conflict(g)
    if reason is None:
        if least is not None and (least["proven"] or least["bytes"] <= cap):
            fits = least["bytes"] <= cap
            one = SerialCheck(fits, None, least["bytes"] if fits else None, least["states"])
        else:
            one = serial_cap_check(g, cap, max_states=ANALYZE_SERIAL_STATES)
        reason = one.describe(cap) if one.fits is False else None
    if reason is not None:
        raise ProblemError(f"no schedule exists: {reason}", str(graph))
    names = [g.ops[k].name for k in range(g.num_ops)]
    out: dict[str, object] = {
        "memory_cap": cap,
        "orders": [[names[i], names[j]] for i, j in r.edges],
        "started": r.started,
        "complete": r.complete,
        "flows": r.flows,
        "critical_path": ordered_critical_path(g, r.edges),
        "one_unit": {"fits": one.fits, "peak": one.peak, "states": one.states},
    }
    if units == 2:
        from opsched.analysis.tensor_cases import case_overlap_bound, case_proof

        split = case_overlap_bound(g, cap - g.persistent_bytes, r.edges)
        if math.isinf(split.value):
            raise ProblemError(f"no schedule exists: {case_proof(g, split.pairs)}", str(graph))
        ov = split.overlap
        out["overlap"] = {
            "bound": ov.value, "work": ov.work, "paired": ov.paired, "complete": ov.complete,
            "apart": [[names[i], names[j]] for i, j in ov.apart_pairs],
        }  # fmt: skip
        out["cases"] = {
            "bound": split.value, "cases": len(split.cases), "complete": split.complete,
            "exclusive": [[names[a], names[b]] for a, b in split.pairs],
        }  # fmt: skip
    return out


def register(main: click.Group) -> None:
    """Add ``analyze`` to the ``opsched`` group."""
    main.add_command(analyze)

"""Running one job: the function every executor calls, in a worker process or on Dask.

:func:`run_job` rebuilds the problem, runs the scheduler through :mod:`opsched.registry`,
checks the schedule with the independent validator and recomputes its makespan and peak
from the op times. It never raises for a job's own failure: a scheduler error or an invalid
schedule comes back as a result with status ``ERROR`` and the error text.
"""

from __future__ import annotations

import math
import socket
import time
import traceback
from fractions import Fraction
from typing import Any

__all__ = ["RESULT_FIELDS", "cap_of", "error_result", "run_job"]

#: Keys of the dict :func:`run_job` returns (the store's result columns).
RESULT_FIELDS = (
    "status",
    "solver_status",
    "valid",
    "makespan",
    "peak_memory",
    "lower_bound",
    "gap",
    "memory_cap",
    "unconstrained_peak",
    "wall_time_s",
    "host",
    "error",
    "schedule",
)


#: How the error text of a job whose worker process died begins: such a job has no result
#: of its own (the out-of-memory killer, a lost Dask worker, an interpreter crash), so the
#: next run of the experiment runs it again (:meth:`ResultStore.finished_ids`).
CRASHED = "crashed: "


def cap_of(fraction: float, peak: int | float) -> int:
    """The memory cap ``fraction`` of ``peak`` makes: the exact product, rounded down to a
    whole byte, with the fraction read as written (in binary, 0.29 * 100 is 28.999..., which
    ``int`` had made 28).

    >>> cap_of(0.29, 100), cap_of(0.6, 1001), int(0.29 * 100)
    (29, 600, 28)
    """
    return math.floor(Fraction(repr(float(fraction))) * Fraction(peak))


def error_result(status: str, error: str, **extra: Any) -> dict[str, Any]:
    """A result row for a job that produced nothing usable."""
    row: dict[str, Any] = dict.fromkeys(RESULT_FIELDS)
    row.update(status=status, error=error, valid=False, host=socket.gethostname())
    row.update(extra)
    return row


def run_job(payload: dict[str, Any]) -> dict[str, Any]:
    """Run one job (``{"job": Job.to_dict(), "graph": graph dict}``) and return its result.

    Examples
    --------
    >>> from opsched.demo import seed_graph
    >>> job = {"scheduler": "greedy", "units": 2, "cap_fraction": 1.0, "cap_bytes": None,
    ...        "resources": {}, "time_limit": 5, "objective": "makespan", "num_workers": 1}
    >>> r = run_job({"job": job, "graph": seed_graph().to_dict()})
    >>> r["status"], r["valid"], r["makespan"], r["memory_cap"] == r["unconstrained_peak"]
    ('FEASIBLE', True, 6.0, True)
    """
    t_begin = time.perf_counter()
    try:
        return _run(payload)
    except Exception as e:
        from opsched.errors import OpschedError

        text = str(e) if isinstance(e, OpschedError) else _short_traceback(e)
        return error_result("ERROR", text, wall_time_s=time.perf_counter() - t_begin)


def _short_traceback(e: BaseException) -> str:
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    return f"{type(e).__name__}: {e}\n" + "".join(tb[-6:])


def _run(payload: dict[str, Any]) -> dict[str, Any]:
    from opsched import registry
    from opsched.heuristics import greedy
    from opsched.ir.jsonio import graph_from_dict
    from opsched.problem import Machine, Problem
    from opsched.validate import validate

    job = payload["job"]
    graph = graph_from_dict(payload["graph"])
    base = Machine(units=job["units"], resources=job.get("resources") or {})
    unconstrained = greedy(Problem(graph, base), "b-level").peak_memory
    cap: int | None = job.get("cap_bytes")
    if job.get("cap_fraction") is not None:
        if unconstrained is None:
            return error_result(
                "ERROR",
                "no schedule without a memory cap, so no peak to take a fraction of",
                wall_time_s=0.0,
            )
        cap = cap_of(job["cap_fraction"], unconstrained)
    problem = Problem(
        graph,
        Machine(units=job["units"], resources=base.resources, memory_cap=cap),
        job.get("objective", "makespan"),
    )
    t0 = time.perf_counter()
    sched = registry.run(
        job["scheduler"],
        problem,
        time_limit=float(job["time_limit"]),
        num_workers=int(job.get("num_workers", 1)),
    )
    wall = time.perf_counter() - t0
    row: dict[str, Any] = dict.fromkeys(RESULT_FIELDS)
    row.update(
        status=sched.status.value,
        solver_status=sched.status.value,
        memory_cap=cap,
        unconstrained_peak=unconstrained,
        wall_time_s=wall,
        host=socket.gethostname(),
        schedule=sched.to_json(),
        valid=False,
    )
    if not sched.has_schedule:
        row["valid"] = None  # nothing to check
        row["lower_bound"] = sched.lower_bound
        reason = sched.info.get("reason")  # a dead end, a proof of infeasibility: in the table
        row["error"] = str(reason) if reason else None
        return row
    report = validate(problem, sched)
    if not report.valid:
        first = report.violations[0]
        row.update(
            status="ERROR",
            error=f"invalid schedule ({len(report.violations)} violation(s)); first: {first}",
        )
        return row
    ms = report.makespan
    bound = sched.lower_bound
    if bound is None and problem.objective.value == "makespan":
        from opsched.analysis.bounds import lower_bounds

        bound = lower_bounds(graph, problem.machine.units, problem.capacities).value
    gap = None
    if ms is not None and bound is not None and problem.objective.value == "makespan":
        gap = max(0.0, (ms - bound) / ms) if ms > 0 else 0.0
    row.update(
        valid=True,
        makespan=ms,
        peak_memory=report.peak_memory,
        lower_bound=bound,
        gap=gap,
    )
    return row

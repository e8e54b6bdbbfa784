"""The modulo formulation of the CP-SAT pipeline: the least period, then the least latency.

A periodic schedule: micro-batch ``m`` runs op ``v`` at ``m * II + t[v]``. The search over
``II`` (gallop, bisect, prove) is described in :mod:`opsched.pipeline.cpsat` and
``docs/pipeline.md``; :func:`opsched.pipeline.cpsat.pipeline_cpsat` calls :func:`modulo`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from opsched.pipeline._cpsat_common import (
    PipelineRun,
    fallback,
    pipeline_result,
    solve_model,
    stage_literals,
)
from opsched.pipeline.model import PipelineResult
from opsched.pipeline.partition import balanced_partition
from opsched.schedule import Status

__all__ = ["MAX_PROOF_PERIODS", "SEARCH_SHARE", "modulo"]


#: Most periods below the best found that the modulo formulation tries one by one to prove
#: the best least (a period of many ticks, from durations with six decimals, has far more).
MAX_PROOF_PERIODS = 1000

#: Share of the time left that one period's feasibility solve may take.
SEARCH_SHARE = 0.5


def modulo(run: PipelineRun) -> PipelineResult:
    from ortools.sat.python import cp_model

    problem, caps, m_count, assignment, heur = (
        run.problem, run.caps, run.m_count, run.assignment, run.heur
    )  # fmt: skip
    g, n, stages, sc, d, dem, head = (
        problem.graph, problem.graph.num_ops, run.stages, run.sc, run.d, run.dem, run.head
    )  # fmt: skip
    work = np.array([dv * u for dv, u in zip(d, dem, strict=True)], dtype=np.int64)
    base = assignment if assignment is not None else balanced_partition(g, stages, caps)
    if not work.any():
        return _no_work(run, [int(s) for s in base])
    per = np.bincount(np.asarray(base, dtype=np.int64), weights=work, minlength=stages)
    ii_hi = max(1, int(per.max()))  # each stage serial, back to back: always feasible
    if assignment is None:
        lo_cands = [math.ceil(int(work.sum()) / sum(caps))]
        lo_cands += [math.ceil(dv / max(caps)) for dv, u in zip(d, dem, strict=True) if u]
    else:
        lo_cands = [math.ceil(per[s] / caps[s]) for s in range(stages)]
        lo_cands += [math.ceil(d[v] / caps[int(assignment[v])]) for v in range(n) if dem[v]]
    ii_lo = max(1, *lo_cands)
    tried: dict[int, str] = {}  # period -> "infeasible" / "feasible" / "unknown"
    found: dict[int, tuple[Any, ...]] = {}  # feasible period -> (solver, x, t, lat, status)

    def attempt(ii: int, minimise: bool = False) -> str:
        """Solve at period ``ii``: "feasible", "infeasible", or "unknown" (time ran out).
        The search only needs feasibility; the latency is minimised at the period chosen."""
        left = run.time_left()
        if left <= 0:
            return "unknown"
        if not minimise:  # a hard period leaves time to minimise the latency at the best
            left *= SEARCH_SHARE
        lmax = sum(d) + n * ii  # a latency bound any feasible residues can reach
        model = cp_model.CpModel()
        x = stage_literals(model, problem, stages, assignment)
        t = [model.new_int_var(head[v], lmax, f"t{v}") for v in range(n)]
        r = [model.new_int_var(0, ii - 1, f"r{v}") for v in range(n)]
        q = [model.new_int_var(0, lmax // ii, f"q{v}") for v in range(n)]
        lat = model.new_int_var(0, lmax, "latency")
        copies = max(d) // ii + 2 if n else 1
        per_stage: list[list[Any]] = [[] for _ in range(stages)]
        per_dem: list[list[int]] = [[] for _ in range(stages)]
        for v in range(n):
            model.add(t[v] == ii * q[v] + r[v])
            model.add(lat >= t[v] + d[v])
            for u in g.pred_idx[g.pred_ptr[v] : g.pred_ptr[v + 1]].tolist():
                model.add(t[v] >= t[u] + d[u])
            if d[v] > 0 and dem[v] > 0:
                for s in range(stages):
                    for k in range(copies):
                        per_stage[s].append(
                            model.new_optional_fixed_size_interval_var(
                                r[v] + k * ii, d[v], x[v][s], f"c{v}_{s}_{k}"
                            )
                        )
                        per_dem[s].append(dem[v])
        for s in range(stages):
            if per_stage[s]:
                model.add_cumulative(per_stage[s], per_dem[s], caps[s])
        if minimise:
            model.minimize(lat)
        solver, status = solve_model(model, left, run.workers)
        if status == cp_model.INFEASIBLE:
            tried[ii] = "infeasible"
            if run.say is not None:
                run.say(f"period {sc.to_time(ii):g}: infeasible")
        elif status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            tried[ii] = "feasible"
            found[ii] = (solver, x, t, lat, status if minimise else None)
            if run.say is not None:  # the latency only once minimised
                said = f", latency {sc.to_time(solver.value(lat)):g}" if minimise else ""
                run.say(f"period {sc.to_time(ii):g}: feasible{said}")
        else:
            tried[ii] = "unknown"
        return tried[ii]

    # The least feasible period, in three passes (each stops when the time is up):
    # 1. gallop up from the lower bound (steps 1, 2, 4, ...) to a feasible period, so a
    #    long range of ticks (durations with six decimals) is not walked one tick a solve;
    # 2. bisect between the last infeasible period and the feasible one;
    # 3. prove: every period below the best not yet tried, upwards; the first feasible one
    #    is the least (all below it are infeasible), and if none is, the best is.
    best: int | None = None
    low, step, ii = ii_lo, 1, ii_lo
    while ii <= ii_hi:
        verdict = attempt(ii)
        if verdict == "feasible":
            best = ii
            break
        if verdict == "unknown":
            break
        low = ii + 1
        ii = ii_hi if ii + step > ii_hi and ii < ii_hi else ii + step
        step *= 2
    while best is not None and low < best:
        mid = (low + best) // 2
        verdict = attempt(mid)
        if verdict == "unknown":
            break
        if verdict == "feasible":
            best = mid
        else:
            low = mid + 1
    below = 0 if best is None else sum(1 for p in range(ii_lo, best) if p not in tried)
    # a proof that would take more solves than any time limit allows is not started
    proven = best is not None and below <= MAX_PROOF_PERIODS
    for ii in range(ii_lo, best if best is not None and proven else ii_lo):
        if tried.get(ii) == "infeasible":
            continue
        verdict = tried.get(ii) or attempt(ii)
        if verdict == "feasible":
            best = ii
            break
        if verdict == "unknown":
            proven = False
            break
    if best is None:
        top = max(tried, default=ii_lo)
        why = f"no period up to {sc.to_time(top):g} proven feasible in time (tried {len(tried)})"
        return fallback(heur, "cpsat-modulo", why, run.t0)
    if found[best][4] is None:  # its latency, least when there is time for the proof
        kept = found.pop(best)
        if attempt(best, minimise=True) != "feasible":
            found[best] = kept
            tried[best] = "feasible"
    solver, x, t, lat, status = found[best]
    unproven = 0 if proven else sum(1 for p in range(ii_lo, best) if tried.get(p) != "infeasible")
    assign = [next(s for s in range(stages) if solver.value(x[v][s])) for v in range(n)]
    tv = [solver.value(t[v]) for v in range(n)]
    starts = [sc.to_time(m * best + tv[v]) for m in range(m_count) for v in range(n)]
    return _result(run, assign, starts, best, solver.value(lat), proven and sc.time_exact,
                   status == cp_model.OPTIMAL and sc.time_exact, len(tried), unproven)  # fmt: skip


def _no_work(run: PipelineRun, assign: list[int]) -> PipelineResult:
    """The modulo answer when no op holds a unit for any time: every micro-batch can run at
    once, each op at its earliest start (period 0, latency the critical path, both least).
    The search below starts at a period of one tick, and had claimed that least."""
    n, head, d, sc = run.problem.graph.num_ops, run.head, run.d, run.sc
    starts = [sc.to_time(head[v]) for _ in range(run.m_count) for v in range(n)]
    latency = max((h + dv for h, dv in zip(head, d, strict=True)), default=0)
    return _result(run, assign, starts, 0, latency, True, sc.time_exact, 0, 0)


def _result(
    run: PipelineRun, assign: list[int], starts: list[float], ii: int, latency: int,
    ii_least: bool, latency_least: bool, tried: int, unproven: int,
) -> PipelineResult:  # fmt: skip
    """The modulo schedule of period ``ii`` and ``latency`` (ticks), with what is proven."""
    sc = run.sc
    info = {
        "formulation": "modulo",
        "ii": sc.to_time(ii),
        "latency": sc.to_time(latency),
        "ii_proven_least": ii_least,
        "latency_proven_least": latency_least,
        "periods_tried": tried,
        "periods_left_unproven": unproven,
        "scaling": sc.to_dict(),
        "capacities": run.caps,
    }
    return pipeline_result(run.problem, assign, run.m_count, run.caps, starts, Status.FEASIBLE,
                           None, "cpsat-modulo", info, run.t0)  # fmt: skip

"""The validator against a second checker written from docs/formats.md alone.

Random 2-8-op graphs (integer, fractional and zero durations; ops of no unit, one, two, a
named resource; outputs, workspaces, persistent bytes) with schedules from the heuristics,
the brute force or a random grid, then nudged: a start moved by 1e-12 .. 1, an op put exactly
at another's start or end, a consumer started just before its producer ends, units swapped
or out of range, the whole schedule shifted past a power of two. Caps sit at the true peak,
a byte under, a byte over or nowhere. Both checkers must give the same verdict and peak.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from opsched.heuristics import greedy, serial
from opsched.ir import Op, OpGraph
from opsched.liveness import peak_memory
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule, ScheduledOp, Status
from opsched.solver.brute import solve_brute_force
from opsched.validate import validate

Row = tuple[str, float, float, int | None]


def second_check(p: Problem, rows: list[Row], tol: float = 1e-9) -> tuple[bool, int]:
    """The verdict and peak by the written rules (the tolerance rule of docs/formats.md)."""
    g = p.graph
    ops = {op.name: op for op in g.ops}
    at = {r[0]: r for r in rows}
    work = float(sum(op.duration for op in g.ops))
    times = [t for r in rows for t in r[1:3]] + [op.duration for op in g.ops]
    exact = all(float(t).is_integer() for t in times)

    def eps(n: str) -> float:
        if exact:
            return 0.0
        largest = max(abs(at[n][1]), abs(at[n][2]))
        return max(tol * work, 1024 * float(np.spacing(largest)))

    start = {n: at[n][1] for n in ops}
    end = {n: at[n][1] + ops[n].duration for n in ops}
    ok = all(start[n] >= -eps(n) for n in ops)
    ok &= all(abs(at[n][2] - at[n][1] - ops[n].duration) <= eps(n) for n in ops)
    ok &= all(start[v] >= end[u] - max(eps(u), eps(v)) for v in ops for u in ops[v].deps)
    for res, cap in p.capacities.items():
        if cap is None:
            continue
        busy = [n for n in ops if ops[n].demands.get(res, 0) > 0 and end[n] - start[n] > eps(n)]
        for t in (start[n] for n in busy):
            held = [n for n in busy if start[n] <= t < end[n] - eps(n)]
            ok &= sum(ops[n].demands[res] for n in held) <= cap
    one_unit = [n for n in ops if ops[n].demands.get("units", 0) == 1]
    given = [n for n in ops if at[n][3] is not None]
    for n in given:
        u = at[n][3]
        assert u is not None
        ok &= ops[n].demands.get("units", 0) == 1 and 0 <= u < (p.machine.units or math.inf)
    ok &= not given or all(at[n][3] is not None for n in one_unit)
    placed = [n for n in one_unit if at[n][3] is not None and end[n] - start[n] > eps(n)]
    for i, a in enumerate(placed):
        for b in placed[i + 1 :]:
            if at[a][3] == at[b][3]:
                ok &= not (start[a] < end[b] - eps(b) and start[b] < end[a] - eps(a))
    # memory: a tensor from its producer's start to its last reader's end (an output that no
    # op reads: to the makespan), a workspace while its op runs, persistent bytes always
    makespan = max(end.values())
    readers: dict[str, list[str]] = {n: [] for n in ops}
    for v in ops:
        for u in ops[v].deps:
            readers[u].append(v)
    free = {
        n: max(end[r] for r in readers[n]) if readers[n] else makespan if ops[n].output else end[n]
        for n in ops
    }
    peak = g.persistent_bytes
    for t in set(start.values()) | set(end.values()) | set(free.values()):
        held = g.persistent_bytes
        held += sum(ops[n].output_bytes for n in ops if start[n] <= t < free[n])
        held += sum(ops[n].workspace_bytes for n in ops if start[n] <= t < end[n])
        peak = max(peak, held)
    ok &= p.memory_cap is None or peak <= p.memory_cap
    return bool(ok), peak


DURATIONS = [0, 0, 1, 1, 2, 3, 0.5, 0.25, 0.1, 0.3, 1 / 3, 0.7]


def random_graph(rng: random.Random, fractional: bool) -> OpGraph:
    ops = []
    for i in range(rng.randint(2, 8)):
        deps = tuple(f"o{j}" for j in range(i) if rng.random() < 0.3)
        d = rng.choice(DURATIONS if fractional else DURATIONS[:6])
        demands = rng.choice([{}, {"units": 2}, {"units": 1, "dma": 1}, {"dma": 1}, {"units": 1}])
        ops.append(Op(f"o{i}", d, deps, output_bytes=rng.choice([0, 1, 4, 16, 100]),
                      workspace_bytes=rng.choice([0, 0, 2, 8]), demands=demands,
                      output=rng.random() < 0.3))  # fmt: skip
    return OpGraph(tuple(ops), persistent_bytes=rng.choice([0, 5]), resources={"dma": 2})


def nudge(rng: random.Random, g: OpGraph, rows: list[Row]) -> list[Row]:
    out = [list(r) for r in rows]
    i = rng.randrange(len(out))
    d = g[str(out[i][0])].duration
    kind = rng.randrange(8)
    if kind == 0:
        out[i][1] += rng.choice([1e-12, -1e-12, 1e-9, -1e-9, 1e-6, -1e-6, 1, -1, 0.5, -0.5])
        out[i][2] = out[i][1] + d
    elif kind == 1:
        j = rng.randrange(len(out))
        out[i][3], out[j][3] = out[j][3], out[i][3]
    elif kind == 2:  # exactly at another op's start or end, sometimes on its unit
        j = rng.randrange(len(out))
        out[i][1] = out[j][rng.choice([1, 2])]
        out[i][2] = out[i][1] + d
        if rng.random() < 0.5:
            out[i][3] = out[j][3]
    elif kind == 3 and g[str(out[i][0])].deps:  # just before a producer ends
        dep = rng.choice(g[str(out[i][0])].deps)
        producer = next(r for r in out if r[0] == dep)
        out[i][1] = producer[2] - rng.choice([0, 1e-12, 1e-7, 1])
        out[i][2] = out[i][1] + d
    elif kind == 4 and out[i][3] is not None:
        out[i][3] = rng.choice([0, 1, 2, -1, 3])
    elif kind == 5:
        out[i][2] += rng.choice([1e-12, 1e-6, 1])
    elif kind == 6:  # everything moved, past powers of two among others
        c = rng.choice([0.1, 1e-9, 7, 1e6 + 0.5, 8191.5, 2**40 + 0.25])
        out = [[r[0], r[1] + c, r[2] + c, r[3]] for r in out]
    elif kind == 7:
        out[i][3] = None
    return [(str(r[0]), float(r[1]), float(r[2]), r[3]) for r in out]  # type: ignore[misc]


def one_case(rng: random.Random) -> tuple[bool, bool, int, int | None] | None:
    g = random_graph(rng, fractional=rng.random() < 0.6)
    units = rng.choice([2, 2, 3, None])
    p0 = Problem(g, Machine(units=units))
    if any(op.demands.get("units", 0) > (units or 2) for op in g.ops):
        return None
    found = rng.choice([greedy, serial, solve_brute_force])(p0)
    rows: list[Row] = [(o.name, o.start, o.end, o.unit) for o in found.ops]
    if rng.random() < 0.4:  # a random grid schedule instead
        grid = rng.choice([1, 0.5, 0.1, 1 / 3])
        keep_units = rng.random() < 0.5
        rows = []
        for op in g.ops:
            s = rng.randint(0, 6) * grid
            u = (
                rng.randrange(units or 3)
                if keep_units and op.demands.get("units", 0) == 1
                else None
            )
            rows.append((op.name, s, s + op.duration, u))
    _, peak0 = second_check(p0, rows)
    cap = rng.choice([None, peak0, max(0, peak0 - 1), peak0 + 1])
    p = Problem(g, Machine(units=units, resources={"dma": rng.choice([0, 1, 2, 3])},
                           memory_cap=cap))  # fmt: skip
    for _ in range(rng.randint(0, 2)):
        rows = nudge(rng, g, rows)
    said_peak = said_makespan = None
    if rng.random() < 0.5:  # a reported peak and makespan, sometimes a byte off
        by_name = {r[0]: r for r in rows}
        s = np.array([by_name[n][1] for n in g.names])
        said_makespan = float((s + g.durations).max())
        said_peak = int(peak_memory(g, s, said_makespan)) + rng.choice([0, 0, 0, 0, 1, -1])
    sched = Schedule(graph=g.name, solver="x", status=Status.FEASIBLE,
                     ops=[ScheduledOp(*r) for r in rows], makespan=said_makespan,
                     peak_memory=said_peak)  # fmt: skip
    verdict = validate(p, sched)
    mine, peak = second_check(p, rows)
    mine &= said_peak is None or said_peak == peak
    return verdict.valid, mine, peak, verdict.peak_memory


@pytest.mark.parametrize("seed", range(4))
def test_the_validator_agrees_with_a_second_checker(seed: int) -> None:
    rng = random.Random(seed)
    valid = 0
    for case in range(150):
        got = one_case(rng)
        if got is None:
            continue
        theirs, mine, peak, their_peak = got
        assert theirs == mine, (seed, case)
        assert their_peak is None or their_peak == peak, (seed, case)
        valid += mine
    assert 20 <= valid <= 130  # both verdicts are well represented

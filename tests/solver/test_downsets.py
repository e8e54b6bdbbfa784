"""The down-set search (opsched.solver.downsets) against the brute force, and in the solver.

The brute force enumerates semi-active schedules with its own memory rule
(:func:`opsched.liveness.peak_memory` on each full schedule); the search reasons with its
own bookkeeping per decision point, so agreeing on hundreds of random tiny problems (zero
durations, graph outputs, persistent bytes, a named resource, 1-4 units, caps from the
least peak up) checks that bookkeeping. Every schedule it returns is re-checked by the
validator.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule, Status
from opsched.solver import solve_brute_force, solve_cpsat
from opsched.solver.cpsat import Params
from opsched.solver.cpsat.model import assign_units
from opsched.solver.downsets import downset_search, downset_search_applies
from opsched.validate import validate


def _random_problem(rng: random.Random) -> Problem:
    n = rng.randint(1, 7)
    k = rng.randint(1, 4)
    density = rng.choice([0.2, 0.35, 0.5])
    ops = []
    for i in range(n):
        demands = {"units": 1}
        if rng.random() < 0.3:
            demands["dma"] = rng.randint(0, 2)
        ops.append(
            Op(
                f"o{i}",
                rng.choice([0, 1, 1, 2, 3, 4]),
                deps=tuple(f"o{j}" for j in range(i) if rng.random() < density),
                output_bytes=rng.choice([0, 1, 2, 4, 6]),
                workspace_bytes=rng.choice([0, 0, 1, 3]),
                output=rng.random() < 0.25,
                demands=demands,
            )
        )
    g = OpGraph(tuple(ops), persistent_bytes=rng.choice([0, 0, 3]), resources={"dma": 2})
    return Problem(g, Machine(units=k))


def _schedule(p: Problem, starts: list[int]) -> Schedule:
    g = p.graph
    ends = [s + d for s, d in zip(starts, g.durations.tolist(), strict=True)]
    units = assign_units([float(s) for s in starts], ends, g.demand_array("units").tolist())
    return Schedule.build(p, [float(s) for s in starts], units, solver="downsets")


@pytest.mark.parametrize("chunk", range(4))
def test_equals_brute_force(chunk: int) -> None:
    rng = random.Random(7_700 + chunk)
    seen: Counter[str] = Counter()
    for _ in range(60):
        base = _random_problem(rng)
        low = solve_brute_force(base, "peak_memory").peak_memory
        free = solve_brute_force(base, "makespan")
        high = free.peak_memory
        assert low is not None and high is not None and free.makespan is not None
        for cap in sorted({low - 1, low, (low + high) // 2, high} - {-1}):
            p = base.with_machine(memory_cap=cap)
            b = solve_brute_force(p, "makespan")
            r = downset_search(p)
            assert r.proven, r
            where = (p.graph.to_dict(), p.machine.units, cap)
            if b.status is Status.INFEASIBLE:
                seen["infeasible"] += 1
                assert r.makespan is None and r.starts is None, where
                continue
            seen["feasible"] += 1
            seen["binding"] += bool(b.makespan is not None and b.makespan > free.makespan)
            assert r.makespan == b.makespan, (r, b.makespan, where)
            assert r.starts is not None
            s = _schedule(p, r.starts)
            report = validate(p, s)
            assert report.valid, (report.summary(), where)
            assert s.makespan == b.makespan
    # the sample holds caps that lengthen the schedule, and caps no schedule meets
    assert seen["feasible"] >= 80 and seen["infeasible"] >= 10 and seen["binding"] >= 10, seen


def test_compiled_equals_interpreted(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernels compiled (numba) and run as Python give the same optimum and schedule."""
    rng = random.Random(99)
    for _ in range(15):
        p = _random_problem(rng)
        low = solve_brute_force(p, "peak_memory").peak_memory
        assert low is not None
        p = p.with_machine(memory_cap=low + 1)
        monkeypatch.setenv("OPSCHED_JIT", "0")
        a = downset_search(p)
        monkeypatch.setenv("OPSCHED_JIT", "1")
        b = downset_search(p)
        assert (a.makespan, a.starts, a.labels) == (b.makespan, b.starts, b.labels)


def _pairs() -> Problem:
    """Two 4-byte producers, each read by one consumer: under a 4-byte cap one producer's
    tensor fits at a time, so the pairs run one after another (6) instead of side by side
    (3) on 2 units, and the second producer waits for the first consumer to end."""
    g = OpGraph(
        (
            Op("a", 2, output_bytes=4),
            Op("b", 2, output_bytes=4),
            Op("c", 1, deps=("a",)),
            Op("d", 1, deps=("b",)),
        )
    )
    return Problem(g, Machine(units=2, memory_cap=4))


def test_hand_worked() -> None:
    p = _pairs()
    r = downset_search(p)
    assert (r.makespan, r.proven) == (6, True)
    assert r.starts is not None and validate(p, _schedule(p, r.starts)).valid
    assert downset_search(p.with_machine(memory_cap=8)).makespan == 3
    # nothing below the optimum: proven, no schedule
    r = downset_search(p, upper_bound=6)
    assert (r.makespan, r.proven) == (None, True)
    assert downset_search(p, upper_bound=7).makespan == 6


def test_budgets_and_beam() -> None:
    p = _pairs()
    r = downset_search(p, max_labels=3)
    assert not r.proven and r.reason == "label budget" and r.makespan is None
    r = downset_search(p, max_downsets=2)
    assert not r.proven and r.reason == "down-set budget"
    r = downset_search(p, beam=1)
    assert not r.proven and r.reason == "beam"
    assert r.makespan is not None and r.makespan >= 6 and r.starts is not None
    assert validate(p, _schedule(p, r.starts)).valid


def test_a_deadline_stops_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """The budgets are counts; the deadline is the clock's stop, in both kernels, compiled
    or interpreted. In the solver it is the search's share of the limit, and none in
    deterministic mode (a stop by the clock would differ from run to run)."""
    import time

    import opsched.solver._downset_labels as labels_mod
    import opsched.solver._downset_table as table_mod
    import opsched.solver.cpsat.stages as solve_mod

    p = _pairs()
    for jit in ("0", "1"):
        monkeypatch.setenv("OPSCHED_JIT", jit)
        r = downset_search(p, deadline=time.perf_counter() - 1)
        assert (r.proven, r.reason, r.makespan) == (False, "time limit", None)
        r = downset_search(p, deadline=time.perf_counter() + 60)
        assert (r.proven, r.makespan) == (True, 6)
    # past the table, the label search stops by the clock too (interpreted: the kernels'
    # clock is looked up in their module)
    monkeypatch.setenv("OPSCHED_JIT", "0")
    monkeypatch.setattr(table_mod, "clock", lambda: 0.0)
    monkeypatch.setattr(labels_mod, "clock", lambda: math.inf)
    r = downset_search(p, deadline=1.0)
    assert (r.proven, r.reason) == (False, "time limit") and r.downsets[1] > 0
    monkeypatch.undo()
    seen: list[float | None] = []
    real = solve_mod.downset_search

    def spy(*args, **kw):  # type: ignore[no-untyped-def]
        seen.append(kw.get("deadline"))
        return real(*args, **kw)

    monkeypatch.setattr(solve_mod, "downset_search", spy)
    monkeypatch.setattr(solve_mod, "must_compile", lambda num_ops: False)
    trap = _greedy_trap()  # a cap both greedy schedules break: the solver runs the search
    t0 = time.perf_counter()
    for deterministic in (False, True):
        params = Params(num_workers=1, probe=False, deterministic=deterministic)
        assert solve_cpsat(trap, time_limit=10, params=params).makespan == 6
    assert len(seen) == 2 and seen[1] is None
    assert seen[0] is not None and t0 < seen[0] <= t0 + 10


def test_applies() -> None:
    p = _pairs()
    assert downset_search_applies(p) is None
    assert downset_search_applies(p.with_machine(memory_cap=None)) == "no memory cap"
    assert downset_search_applies(p.with_machine(units=5)) == "more than 4 units"
    assert downset_search_applies(p.with_machine(units=None)) == "more than 4 units"
    g = p.graph.replace_ops([*p.graph.ops[:3], Op("d", 1.5, deps=("b",))])
    assert downset_search_applies(Problem(g, p.machine)) == "durations are not integers"
    g = p.graph.replace_ops([*p.graph.ops[:3], Op("d", 1, deps=("b",), demands={"units": 2})])
    why = downset_search_applies(Problem(g, p.machine))
    assert why == "an op of positive duration does not take exactly one unit"
    with pytest.raises(Exception, match="does not apply"):
        downset_search(p.with_machine(units=5))


def _greedy_trap() -> Problem:
    """At its least peak (10 B) on 2 units, both greedy schedules dead-end: after ``o1``
    they start ``o2`` (its chain to ``o5`` is the longest), and then neither ``o4`` (6 B
    more) nor ``o5`` (4 B more while ``o2``'s 6 B and ``o1``'s 2 B live) fits. The optimum
    runs ``o4`` and ``o3`` first: o0, o1 in [0, 2), o4 in [2, 4) beside o3 in [2, 3), o2 in
    [4, 5), o5 in [5, 6): makespan 6 (one unit: 9)."""
    g = OpGraph(
        (
            Op("o0", 2, output_bytes=2),
            Op("o1", 2, output_bytes=2),
            Op("o2", 1, deps=("o1",), output_bytes=6),
            Op("o3", 1, deps=("o1",), output_bytes=1),
            Op("o4", 2, deps=("o1",), output_bytes=6),
            Op("o5", 1, deps=("o2",), output_bytes=4),
        )
    )
    return Problem(g, Machine(units=2, memory_cap=10))


def test_solver_takes_its_optimum() -> None:
    """Under a cap both greedy schedules break, solve_cpsat runs the search (here without
    CP-SAT's short try first, which proves so small a problem itself): CP-SAT then proves
    its optimum at once (the floor is the hint's makespan); without it CP-SAT proves the
    same optimum by search."""
    p = _greedy_trap()
    assert solve_brute_force(p, "makespan").makespan == 6
    first = Params(probe=False)
    r = solve_cpsat(p, time_limit=10, params=first)
    assert r.status is Status.OPTIMAL and r.makespan == 6 and r.lower_bound == 6
    assert r.info["downsets"]["proven"] and r.info["downsets"]["makespan"] == 6
    assert validate(p, r).valid
    lines: list[str] = []
    solve_cpsat(p, time_limit=10, params=first, progress=lines.append)
    assert lines[0].startswith("down-set search: makespan 6 optimal (")
    alone = solve_cpsat(p, time_limit=10, params=Params(downsets=False))
    assert alone.status is Status.OPTIMAL and alone.makespan == 6
    assert "downsets" not in alone.info
    # with the short try, CP-SAT proves it before the search
    assert "downsets" not in solve_cpsat(p, time_limit=10).info
    # a cap the greedy schedules meet: CP-SAT alone
    loose = solve_cpsat(p.with_machine(memory_cap=20), time_limit=10, params=first)
    assert "downsets" not in loose.info


def test_solver_least_peak_then_makespan() -> None:
    """memory_then_makespan's second stage is a makespan at the least peak: the search
    takes it too, and the result equals CP-SAT's alone."""
    rng = random.Random(5)
    tried = 0
    for _ in range(200):
        p = _random_problem(rng)
        if p.machine.units == 1 or downset_search_applies(p.with_machine(memory_cap=0)):
            continue
        got = solve_cpsat(p, "memory_then_makespan", time_limit=10,
                          params=Params(num_workers=1, probe=False))  # fmt: skip
        ref = solve_cpsat(p, "memory_then_makespan", time_limit=10,
                          params=Params(num_workers=1, downsets=False))  # fmt: skip
        assert got.status is ref.status is Status.OPTIMAL
        assert (got.makespan, got.peak_memory) == (ref.makespan, ref.peak_memory)
        tried += "downsets" in got.info
    assert tried >= 5


def test_randwire_stage3_tightest_cap() -> None:
    """RandWire's stage3 (90 ops, fused) at its least peak on 2 units: CP-SAT alone ends at
    275 with bound 246-249 after 60 s; the search proves 275 in about a second."""
    from opsched.transforms import extract
    from opsched.transforms.fusion import fuse
    from opsched.zoo.models import build

    g = extract(fuse(build("randwire"))[0], ["stage3"])
    p = Problem(g, Machine(units=2, memory_cap=3_179_904))
    r = downset_search(p)
    assert (r.makespan, r.proven) == (275, True)
    assert r.starts is not None and validate(p, _schedule(p, r.starts)).valid
    assert r.downsets == (35_674, 162_342)
    assert math.isclose(_schedule(p, r.starts).makespan or 0, 275)
    # in the solver: CP-SAT's short try (2 s) proves nothing, the search does (20 s leaves
    # room for a loaded machine: the search takes about a second alone, and at 10 s a run
    # beside the other test worker and a fuzzer ran out of its 4 s share)
    s = solve_cpsat(p, time_limit=20)
    assert (s.status, s.makespan, s.lower_bound) == (Status.OPTIMAL, 275, 275)
    assert s.info["downsets"]["proven"] and s.info["downsets"]["probe"]["cpsat_status"] in (
        "FEASIBLE",
        "UNKNOWN",
    )
    assert validate(p, s).valid


def test_kernels_not_compiled_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    """While the kernels are not compiled, a share of the time limit shorter than a compile
    skips the search (and CP-SAT's short try) and says why; a long enough one compiles
    them first and searches with what is left."""
    import opsched.solver.cpsat.stages as solve_mod
    from opsched.solver.downsets import compile_kernels
    from opsched.transforms import extract
    from opsched.transforms.fusion import fuse
    from opsched.zoo.models import build

    # compiled for real first: the "compile" below is faked, and a search that compiled
    # inside the 4 s share (the first one of a fresh checkout's test worker) ran out of it
    compile_kernels()
    g = extract(fuse(build("randwire"))[0], ["stage3"])
    p = Problem(g, Machine(units=2, memory_cap=3_179_904))
    monkeypatch.setattr(solve_mod, "must_compile", lambda num_ops: True)
    calls: list[int] = []
    monkeypatch.setattr(solve_mod, "compile_kernels", lambda: calls.append(1) or 0.5)
    s = solve_cpsat(p, time_limit=4)  # share 1.6 s < COMPILE_S
    assert "compile_kernels()" in s.info["downsets"]["skipped"] and not calls
    assert "probe" not in s.info["downsets"] and validate(p, s).valid
    assert s.status is Status.FEASIBLE and s.wall_time_s < 5.5
    monkeypatch.setattr(solve_mod, "COMPILE_S", 3.0)
    s = solve_cpsat(p, time_limit=20)  # share 8 s: "compile" (0.5 s), then search
    assert calls == [1] and s.info["downsets"]["compile_s"] == 0.5
    assert (s.status, s.makespan) == (Status.OPTIMAL, 275)


def test_as_a_solver_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``solve_downsets`` (registry name ``downsets``): the optimum in real time units, the
    scaling as CP-SAT's, a beam schedule where the budget runs out, one-line refusals."""
    import json

    from click.testing import CliRunner

    from opsched.cli import main
    from opsched.errors import ProblemError
    from opsched.ir import write_graph_json
    from opsched.registry import SOLVERS
    from opsched.solver import downset_solver as ds

    p = _greedy_trap()
    s = ds.solve_downsets(p)
    assert (s.status, s.makespan, s.lower_bound) == (Status.OPTIMAL, 6.0, 6.0)
    assert validate(p, s).valid and SOLVERS["downsets"].exact
    half = Problem(p.graph.replace_ops([replace(op, duration=op.duration / 2)
                                        for op in p.graph.ops]), p.machine)  # fmt: skip
    h = ds.solve_downsets(half)
    assert h.status is Status.OPTIMAL and h.makespan == 3.0 and validate(half, h).valid
    assert h.info["scaling"]["time_scale"] == 10
    none = ds.solve_downsets(p.with_machine(memory_cap=5))  # below the least peak
    assert none.status is Status.INFEASIBLE and not none.ops
    with pytest.raises(ProblemError, match="needs a memory cap"):
        ds.solve_downsets(p.with_machine(memory_cap=None))
    with pytest.raises(ProblemError, match="minimises the makespan"):
        ds.solve_downsets(p, "peak_memory")
    monkeypatch.setattr(ds, "downset_budget", lambda seconds: (10_000, 20))
    b = ds.solve_downsets(p)
    assert b.info["downsets"]["reason"] == "label budget" and validate(p, b).valid
    # the beam's schedule, with the two-unit overlap bound (6, the optimum) beside it
    assert b.makespan is not None and b.makespan >= 6 and b.lower_bound == 6
    assert b.status is (Status.OPTIMAL if b.makespan == 6 else Status.FEASIBLE)
    monkeypatch.undo()
    path = tmp_path / "trap.json"
    write_graph_json(p.graph, path)
    args = ["solve", str(path), "--solver", "downsets", "-k", "2", "--memory-cap", "10"]
    r = CliRunner().invoke(main, [*args, "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["status"] == "OPTIMAL" and json.loads(r.output)["makespan"] == 6
    r = CliRunner().invoke(main, ["solve", str(path), "--solver", "downsets", "-k", "2"])
    assert r.exit_code == 2 and "needs a memory cap" in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_table_hash_spreads_down_sets() -> None:
    """The table's rows sit next to their hash slot: families of similar sets must not pile
    up into runs that linear probing walks. (The first hash, a polynomial modulo a prime,
    did on this graph: probing went quadratic and a 10 s solve never returned.)"""
    import numpy as np

    from opsched.solver import _downset_table as dt
    from opsched.solver.cpsat.model import tick_problem
    from opsched.solver.downsets import _arrays
    from opsched.solver.scaling import choose_scaling
    from opsched.zoo import layered

    p = Problem(layered(50, seed=4), Machine(units=2, memory_cap=193_986_560))
    tick = tick_problem(p, choose_scaling(p.graph, p.memory_cap))
    a = _arrays(tick, 1)
    free = int(tick.memory_cap or 0) - tick.graph.persistent_bytes
    keys, table, rows, *_ = dt.downset_table(
        tick.graph.num_ops, 1, a["pm"], a["rm"], a["pred_ptr"], a["pred_idx"], a["dur"],
        a["out"], a["need"], a["kept"], a["held"], free, 300_000, math.inf,
    )  # fmt: skip
    assert rows == 300_000  # the budget ran out: the table is as full as it gets
    mask = len(table) - 1
    slot = np.full(rows, -1, dtype=np.int64)
    used = np.nonzero(table >= 0)[0]
    slot[table[used]] = used
    home = np.array([dt._row_hash(keys[r], 1, mask) for r in range(0, rows, 7)])
    moved = (slot[::7] - home) & mask
    assert moved.mean() < 1.0 and moved.max() < 64, (moved.mean(), moved.max())


def test_a_compile_that_eats_the_limit_is_named_in_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fresh installation compiles the kernels first (about 13 s, 30 s on a loaded
    machine): with the default 10 s limit ``--solver downsets`` then had no budget left and
    said only "the search's budget ran out", as if the cap were hard."""
    from opsched.solver import downset_solver as ds

    monkeypatch.setattr(ds, "must_compile", lambda n: True)
    monkeypatch.setattr(ds, "compile_kernels", lambda: 12.5)
    monkeypatch.setattr(ds, "downset_budget", lambda seconds: (1, 1))
    s = ds.solve_downsets(_greedy_trap(), time_limit=10)
    assert s.status is Status.UNKNOWN and s.info["compile_s"] == 12.5
    assert "compiling the search's kernels took 12.5 s of the 10 s limit" in s.info["reason"]
    assert "cached" in s.info["reason"]


def test_solve_downsets_claims_no_bound_from_rounded_sizes() -> None:
    # sizes past 2^40 quanta are rounded up and the cap down: the rounded problem cannot run
    # a and b together (its optimum 2), the problem can (1, as the brute force finds); the
    # search's optimum 2 had been reported as the lower bound, gap 0
    from opsched.solver.downset_solver import solve_downsets

    x = 2**50 + 1
    g = OpGraph((Op("a", 1, output_bytes=x), Op("b", 1, output_bytes=x + 2)))
    p = Problem(g, Machine(units=2, memory_cap=2 * x + 2))
    best = solve_brute_force(p, "makespan")
    assert best.makespan == 1.0
    r = solve_downsets(p, time_limit=5)
    assert r.info["scaling"]["memory_exact"] is False and validate(p, r).valid
    assert r.status is Status.FEASIBLE
    assert r.lower_bound is not None and r.lower_bound <= best.makespan


def test_rounded_sizes_do_not_say_no_schedule_fits_the_cap() -> None:
    """Sizes of ~2^42 bytes that differ in their last bytes are rounded up to quanta (and the
    cap down), so the search can find nothing within a cap a schedule meets exactly: the
    result is UNKNOWN, and its reason must say the rounding, not "no schedule fits the memory
    cap (the down-set search is exhaustive)", which told a user that none exists while this
    chain's one order fits (the cross-check through the CLI found it)."""
    big = 6597069766659
    g = OpGraph(
        (
            Op("v0", 1, output_bytes=4, output=True),
            Op("v1", 1, deps=("v0",), output_bytes=big),
            Op("v2", 1, deps=("v1",), output_bytes=big + 5, output=True),
        ),
        persistent_bytes=4,
    )
    cap = 4 + big + big + 5  # persistent, then v1's output beside v2's
    p = Problem(g, Machine(units=1, memory_cap=cap))
    assert solve_brute_force(p).peak_memory == cap  # a schedule meets the cap exactly
    from opsched.solver.downset_solver import solve_downsets

    s = solve_downsets(p, time_limit=10)
    assert s.status is Status.UNKNOWN
    assert not s.info["scaling"]["memory_exact"]
    reason = s.info["reason"]
    assert "rounded" in reason and "quanta" in reason, reason


@pytest.mark.timing
def test_the_beam_after_the_exact_search_keeps_the_time_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both searches stop at the deadline: the beam run after an exact search that used the
    whole limit gets BEAM_MIN_S more at most (it had no deadline, only the budgets)."""
    import time

    from opsched.heuristics import greedy
    from opsched.solver import downset_solver as ds
    from opsched.zoo.generators import layered

    g = layered(100, seed=1)
    base = Problem(g, Machine(units=2))
    peak = greedy(base, "b-level").peak_memory
    assert peak is not None
    p = base.with_machine(memory_cap=int(0.7 * peak))
    # the budgets of a 30 s search, under a 1 s limit: only the deadline stops either run
    budget = ds.downset_budget(30.0)
    monkeypatch.setattr(ds, "downset_budget", lambda seconds: budget)
    t0 = time.perf_counter()
    s = ds.solve_downsets(p, time_limit=1.0)
    took = time.perf_counter() - t0
    assert s.info["downsets"]["reason"] == "time limit"
    assert s.info["beam"]["reason"] == "time limit", s.info["beam"]
    assert s.status is Status.UNKNOWN and s.info["reason"].startswith("the 1 s time limit ran out")
    assert took <= 1.0 + ds.BEAM_MIN_S + 0.5, took

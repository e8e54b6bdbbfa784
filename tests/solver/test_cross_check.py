"""CP-SAT against the brute force on hundreds of random tiny problems.

Each problem: 1-7 ops with durations 0..4 (zero included), output and workspace sizes, some
graph outputs, persistent bytes, a named resource ``dma`` with demands, 1-3 units (ops may
hold 0, 1 or 2 of them), and memory caps: none, :func:`opsched.analysis.min_memory_bound`
without its minimum cut (the simple bound) exactly, a few bytes above it, one byte below
it (infeasible for both solvers, found without search) and, where they differ, one halfway
between the bound and the peak of the uncapped makespan optimum (a cap that binds). For
every objective CP-SAT must be proven optimal with the brute force's optimum, and every
schedule must pass the independent validator.

The lexicographic optima come from the brute force's documented tie-breaking (makespan then
peak, or peak then makespan; ``test_brute.py`` checks it against a naive enumeration), and
``memory_then_makespan`` is also rebuilt from two calls: least peak P*, then least makespan
under the cap P*.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from opsched.analysis import min_memory_bound
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule, Status
from opsched.solver import solve_brute_force, solve_cpsat
from opsched.solver.cpsat import Params
from opsched.validate import validate

OBJECTIVES = ("makespan", "peak_memory", "makespan_then_memory", "memory_then_makespan")
CHUNKS = 12
#: How CP-SAT's result starts a reason for a cap the bounds accept: the one-unit check
#: (opsched.solver.serial), two ops in neither order (opsched.analysis.cap_orders), or its
#: search.
PROOFS = ("no one-unit order stays within ", "ops ", "op ", "CP-SAT proved that no schedule fits")
GRAPHS_PER_CHUNK = 25  # 300 random graphs, 4-5 caps and 4 objectives each


def random_graph(rng: random.Random) -> tuple[OpGraph, int]:
    n = rng.randint(1, 7)
    k = rng.randint(1, 3)
    dma = rng.randint(1, 3)
    # sparse graphs of 6-7 ops have too many semi-active schedules for a fast brute force
    density = rng.choice([0.15, 0.3, 0.5] if n <= 5 else [0.35, 0.5])
    ops = []
    for i in range(n):
        deps = tuple(f"o{j}" for j in range(i) if rng.random() < density)
        demands = {"units": rng.choice([1, 1, 1, 0, min(2, k)])}
        if rng.random() < 0.5:
            demands["dma"] = rng.randint(0, dma)
        ops.append(
            Op(
                f"o{i}",
                rng.randint(0, 4),
                deps=deps,
                output_bytes=rng.choice([0, 1, 2, 4, 6, 10]),
                workspace_bytes=rng.choice([0, 0, 1, 3]),
                output=rng.random() < 0.3,
                demands=demands,
            )
        )
    return OpGraph(tuple(ops), persistent_bytes=rng.choice([0, 0, 5]), resources={"dma": dma}), k


def _check_schedule(p: Problem, s: Schedule) -> None:
    r = validate(p, s)
    assert r.valid, r.summary()
    assert s.peak_memory == r.peak_memory
    if p.memory_cap is not None:
        assert s.peak_memory is not None and s.peak_memory <= p.memory_cap
    k = p.machine.units
    for o in s.ops:
        if p.graph[o.name].demands.get("units", 0) == 1:
            assert o.unit is not None and 0 <= o.unit < k


def _cross_check(g: OpGraph, k: int, cap: int | None, seen: Counter[str]) -> None:
    p = Problem(g, Machine(units=k, memory_cap=cap))
    b_ms = solve_brute_force(p, "makespan")  # least makespan, ties by least peak
    b_pk = solve_brute_force(p, "peak_memory")  # least peak, ties by least makespan
    where = f"{g.to_dict()} k={k} cap={cap}"
    if b_ms.status is Status.INFEASIBLE:
        assert b_pk.status is Status.INFEASIBLE, where
        simple = p.infeasibility_reason() is not None
        cut = p.infeasibility_reason(cut=True) is not None  # CP-SAT's precheck
        seen[
            "infeasible by the simple bound"
            if simple
            else "infeasible by the cut bound"
            if cut
            else "infeasible by search"
        ] += 1
        for obj in OBJECTIVES:
            c = solve_cpsat(p, obj, time_limit=10, num_workers=1)
            assert c.status is Status.INFEASIBLE, (obj, where)
            assert not c.ops
            if cut:
                assert "is below the" in c.info["reason"], where
            else:
                assert c.info["reason"].startswith(PROOFS), (c.info["reason"], where)
        return
    assert b_ms.status is b_pk.status is Status.OPTIMAL
    _check_schedule(p, b_ms)
    _check_schedule(p, b_pk)
    lex_time = (b_ms.makespan, b_ms.peak_memory)
    lex_mem = (b_pk.makespan, b_pk.peak_memory)
    # memory_then_makespan from two calls: under the cap P*, the least makespan
    again = solve_brute_force(p.with_machine(memory_cap=b_pk.peak_memory), "makespan")
    assert (again.makespan, again.peak_memory) == lex_mem, where
    seen["trade-off"] += lex_time != lex_mem
    seen["feasible"] += 1

    for obj in OBJECTIVES:
        # without CP-SAT's short try, so that the down-set search runs where it would
        c = solve_cpsat(p, obj, time_limit=10, params=Params(num_workers=1, probe=False))
        assert c.status is Status.OPTIMAL, (obj, where, c.info)
        _check_schedule(p, c)
        got = (c.makespan, c.peak_memory)
        if obj == "makespan":
            assert c.makespan == lex_time[0], (obj, got, lex_time, where)
        elif obj == "peak_memory":
            assert c.peak_memory == lex_mem[1], (obj, got, lex_mem, where)
        elif obj == "makespan_then_memory":
            assert got == lex_time, (obj, got, lex_time, where)
        else:
            assert got == lex_mem, (obj, got, lex_mem, where)
        if obj in ("makespan", "makespan_then_memory"):
            assert c.lower_bound == c.makespan, (obj, where)
        else:
            assert c.info["peak_lower_bound"] == lex_mem[1], (obj, where)
            assert c.lower_bound is not None and c.lower_bound <= lex_time[0]
        if "downsets" in c.info:  # the down-set search proved it: CP-SAT's own search too
            seen["down-set search"] += 1
            alone = solve_cpsat(p, obj, time_limit=10, params=Params(num_workers=1,
                                                                     downsets=False))  # fmt: skip
            assert alone.status is Status.OPTIMAL and "downsets" not in alone.info, where
            assert (alone.makespan, alone.peak_memory) == got, (obj, where)


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_cpsat_equals_brute_force(chunk: int) -> None:
    rng = random.Random(20_240_000 + chunk)
    seen: Counter[str] = Counter()
    for _ in range(GRAPHS_PER_CHUNK):
        g, k = random_graph(rng)
        seen["zero-duration op"] += any(op.duration == 0 for op in g.ops)
        # caps from the simple bound, so that the caps between it and the minimum-cut bound
        # (refuted by CP-SAT's precheck, by search in the brute force) are checked too
        need, _ = min_memory_bound(g, cut=False)
        free = solve_brute_force(Problem(g, Machine(units=k)), "makespan")
        caps: list[int | None] = [None, need, need + rng.randint(1, 6)]
        if need > 0:
            caps.append(need - 1)  # below the simple bound: infeasible without search
        for cap in caps:
            _cross_check(g, k, cap, seen)
        if free.peak_memory is not None and free.peak_memory > need:
            # a cap strictly between the bound and the unconstrained peak binds
            _cross_check(g, k, (need + free.peak_memory) // 2, seen)
            seen["binding cap tried"] += 1
    # the sample exercises what it should: zero durations, trade-offs between time and
    # memory, both kinds of infeasibility
    assert seen["zero-duration op"] >= 5, seen
    assert seen["trade-off"] >= 3, seen
    assert seen["infeasible by the simple bound"] >= 15, seen
    assert seen["binding cap tried"] >= 3, seen
    assert seen["feasible"] >= 60, seen


def test_caps_below_the_cut_bound_refuted_by_both() -> None:
    """Caps between the simple bound and the minimum-cut one: CP-SAT refutes them before
    searching, the brute force (which does not use the cut) by enumerating every schedule."""
    rng = random.Random(4_242)
    found = 0
    for _ in range(2000):
        g, k = random_graph(rng)
        simple, cut = min_memory_bound(g, cut=False)[0], min_memory_bound(g)[0]
        if cut == simple:
            continue
        found += 1
        p = Problem(g, Machine(units=k, memory_cap=cut - 1))
        assert p.infeasibility_reason() is None
        assert solve_brute_force(p, "makespan").status is Status.INFEASIBLE, g.to_dict()
        c = solve_cpsat(p, "makespan", time_limit=10, num_workers=1)
        assert c.status is Status.INFEASIBLE and "is below the" in c.info["reason"]
        assert "stages" not in c.info  # refuted before any CP-SAT stage ran
        if found == 25:
            break
    assert found == 25


def test_infeasible_by_search_agrees() -> None:
    """Caps at min_memory_bound (with its minimum cut) that no schedule meets: both solvers
    must say INFEASIBLE. By default CP-SAT proves it before any search by the orders the cap
    forces (:mod:`opsched.analysis.cap_orders`: two ops forced both ways, or an op they leave
    no room for); without them by the one-unit check (:mod:`opsched.solver.serial`,
    exhaustive on graphs this small); without both by its search."""
    rng = random.Random(31_337)
    found = 0
    how: Counter[str] = Counter()
    for _ in range(400):
        g, k = random_graph(rng)
        need, _ = min_memory_bound(g)
        p = Problem(g, Machine(units=k, memory_cap=need))
        assert p.infeasibility_reason(cut=True) is None
        if solve_brute_force(p, "makespan").status is not Status.INFEASIBLE:
            continue
        found += 1
        for obj in ("makespan", "memory_then_makespan"):
            for orders, serial in ((True, True), (False, True), (False, False)):
                params = Params(num_workers=1, serial_check=serial, cap_orders=orders)
                c = solve_cpsat(p, obj, time_limit=10, params=params)
                assert c.status is Status.INFEASIBLE, g.to_dict()
                reason = c.info["reason"]
                if orders and "within the memory cap" in reason:
                    assert c.info["stages"] == []  # refuted before any CP-SAT stage ran
                    how["orders"] += 1
                elif serial:
                    assert reason.startswith("no one-unit order stays within "), reason
                    assert c.info["stages"] == []
                    how["one unit"] += 1
                else:
                    assert reason.startswith("CP-SAT proved that no schedule fits in "), reason
                    how["search"] += 1
        if found == 12:
            break
    assert found == 12
    # measured: the orders refute all 12 (both objectives); 4 of 12 before the started test
    assert how["orders"] >= 20 and how["one unit"] >= 20 and how["search"] >= 20, how

"""CP-SAT against brute force, HEFT / CPOP against CP-SAT, and hand-worked cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from opsched.hetero import (
    HeteroMachine,
    HeteroProblem,
    cpop,
    heft,
    solve_hetero_cpsat,
    validate_hetero,
)
from opsched.hetero.cpsat import tick_scale
from opsched.ir import Op, OpGraph

# (seed, counts, zero-duration probability): 2 device types, <= 6 ops
CASES = (
    [(s, (1, 1), 0.0) for s in range(14)]
    + [(s, (2, 1), 0.0) for s in range(100, 108)]
    + [(s, (1, 2), 0.3) for s in range(200, 206)]
)


@pytest.mark.parametrize(("seed", "counts", "zero"), CASES)
def test_cpsat_matches_brute_force_and_heuristics_are_never_better(
    seed, counts, zero, brute, random_problem
):
    n = None if counts == (1, 1) else 5
    p = random_problem(seed, n=n, counts=counts, zero_prob=zero)
    opt = brute(p)
    for form in ("instances", "cumulative"):
        r = solve_hetero_cpsat(p, time_limit=10, formulation=form)
        assert r.status.value == "OPTIMAL", (form, r.info)
        assert validate_hetero(p, r).valid
        assert r.makespan == pytest.approx(opt), form
        assert r.lower_bound == pytest.approx(opt)
    for fn in (heft, cpop):
        h = fn(p)
        assert validate_hetero(p, h).valid
        assert h.makespan >= opt - 1e-9
        assert h.lower_bound is not None and h.lower_bound <= opt + 1e-9


def test_op_only_one_type_can_run():
    # b runs only on the cpu: every solver must put it there, with the transfer from a (gpu).
    # a: gpu 1 / cpu 5; b: cpu 2. On the gpu, a ends at 1, the transfer 10 B / 10 + 1 = 2,
    # b runs 3..5: makespan 5. All on the cpu: 5 + 2 = 7. Optimum 5.
    g = OpGraph((Op("a", output_bytes=10, attrs={"durations": {"gpu": 1, "cpu": 5}}),
                 Op("b", deps=("a",), attrs={"durations": {"cpu": 2}})))  # fmt: skip
    p = HeteroProblem(g, HeteroMachine.parse("gpu:2,cpu:1", bandwidth=10, latency=1))
    for fn in (heft, solve_hetero_cpsat):
        s = fn(p)
        assert s.placement()["b"] == ("cpu", 0)
        assert s.placement()["a"][0] == "gpu"
        assert s.makespan == 5.0
        assert validate_hetero(p, s).valid
    # CPOP keeps the critical path a -> b on one processor; only the cpu runs both: 5 + 2
    s = cpop(p)
    assert s.info["cp_processor"] == "cpu:0" and s.makespan == 7.0
    assert s.placement() == {"a": ("cpu", 0), "b": ("cpu", 0)}


def test_transfer_makes_staying_on_one_device_better():
    # chain a -> b -> c of 100 MB tensors. gpu: 2 each (6 in all), cpu: 1 each. A transfer
    # costs 100 / 10 + 1 = 11, so moving to the faster cpu never pays: all on the gpu, 6
    # (all on the cpu would be 3, but a runs only on the gpu: a on gpu + transfer + b, c on
    # the cpu = 2 + 11 + 2 = 15).
    ops = [Op("a", output_bytes=100, attrs={"durations": {"gpu": 2}})]
    ops += [Op(x, output_bytes=100, deps=(d,), attrs={"durations": {"gpu": 2, "cpu": 1}})
            for x, d in (("b", "a"), ("c", "b"))]  # fmt: skip
    p = HeteroProblem(OpGraph(tuple(ops)), HeteroMachine.parse("gpu:1,cpu:4", 10, 1))
    r = solve_hetero_cpsat(p, time_limit=5)
    assert r.status.value == "OPTIMAL" and r.makespan == 6.0
    assert {o.device for o in r.ops} == {"gpu"}
    assert heft(p).makespan == 6.0
    # with a free link the cpu wins: 2 + 1 + 1 = 4
    fast = HeteroProblem(OpGraph(tuple(ops)), HeteroMachine.parse("gpu:1,cpu:4"))
    r = solve_hetero_cpsat(fast, time_limit=5)
    assert r.makespan == 4.0 and r.placement()["c"][0] == "cpu"


def test_instances_of_one_type_exchange_data_for_free():
    # fork a -> b, c on gpu:2 with a huge tensor: b and c in parallel on both gpu instances,
    # no transfer: 1 + 3 = 4.
    g = OpGraph((Op("a", 1, output_bytes=10**9), Op("b", 3, deps=("a",)),
                 Op("c", 3, deps=("a",))))  # fmt: skip
    p = HeteroProblem(g, HeteroMachine.parse("gpu:2", bandwidth=1, latency=5))
    for fn in (heft, cpop, solve_hetero_cpsat):
        s = fn(p)
        assert s.makespan == 4.0
        assert {s.placement()["b"][1], s.placement()["c"][1]} == {0, 1}


def test_heft_uses_insertion_into_an_idle_gap():
    # one gpu. a(1) -> b(1) with a 3-tick transfer if b went elsewhere... keep it on one type:
    # x (len 5) must wait for a long chain? Hand case: a -> c (c waits for a and z); an
    # independent short op fits into the gap. gpu:1 only.
    # a: 1, z: 1 (no deps), c: 1 dep a, on cpu only with latency 3 -> c at 4..5 on the cpu;
    # the gpu is idle 1..; e (rank lowest) fits before / after without delaying anything.
    g = OpGraph((Op("a", attrs={"durations": {"gpu": 1}}),
                 Op("c", deps=("a",), attrs={"durations": {"cpu": 1}}),
                 Op("d", deps=("c",), attrs={"durations": {"gpu": 1}}),
                 Op("e", attrs={"durations": {"gpu": 2}})))  # fmt: skip
    p = HeteroProblem(g, HeteroMachine.parse("gpu:1,cpu:1", latency=3))
    s = heft(p)
    # ranks: a = 1 + 1.5 + (1 + 1.5 + 1) = 6 (mean latency over 2 ordered pairs = 3)
    # order a, c, e, d: a 0..1, c 4..5, e: gpu free from 1 -> 1..3; d: ready 5 + 3 = 8
    st = {o.name: o.start for o in s.ops}
    assert st == {"a": 0.0, "c": 4.0, "e": 1.0, "d": 8.0}
    assert solve_hetero_cpsat(p, time_limit=5).makespan == 9.0


def test_cpop_critical_path_on_one_processor():
    # chain a -> b -> c is critical; gpu runs it fastest in total (3 vs 9): all on gpu:0.
    g = OpGraph((Op("a", 1, attrs={"durations": {"gpu": 1, "cpu": 3}}),
                 Op("b", 1, deps=("a",), attrs={"durations": {"gpu": 1, "cpu": 3}}),
                 Op("c", 1, deps=("b",), attrs={"durations": {"gpu": 1, "cpu": 3}}),
                 Op("x", 1, attrs={"durations": {"gpu": 1, "cpu": 1}})))  # fmt: skip
    p = HeteroProblem(g, HeteroMachine.parse("gpu:1,cpu:2", latency=1))
    s = cpop(p)
    assert s.info["cp_processor"] == "gpu:0" and s.info["critical_ops"] == 3
    assert all(s.placement()[x] == ("gpu", 0) for x in "abc")
    assert s.makespan == 3.0 and validate_hetero(p, s).valid


def test_rounded_durations_are_valid_but_not_claimed_optimal():
    # fork a -> b, c (thirds and ninths: no exact tick). Best: a, b on the gpu (1), c on the
    # cpu after the 1/9 transfer: 1/3 + 1/9 + 2/3 = 10/9; the simple bound is only 1.
    g = OpGraph((Op("a", 1 / 3), Op("b", 2 / 3, deps=("a",)), Op("c", 2 / 3, deps=("a",))))
    p = HeteroProblem(g, HeteroMachine.parse("gpu:1,cpu:1", latency=1 / 9))
    scale, exact = tick_scale(p.durations.ravel())
    assert not exact and scale > 0
    r = solve_hetero_cpsat(p, time_limit=5)
    assert r.status.value == "FEASIBLE" and "rounded" in r.info["note"]
    assert validate_hetero(p, r).valid
    assert r.makespan == pytest.approx(10 / 9, abs=1e-5)
    # a chain that meets the critical-path bound is optimal whatever the rounding
    chain = OpGraph((Op("a", 1 / 3), Op("b", 2 / 3, deps=("a",))))
    r = solve_hetero_cpsat(HeteroProblem(chain, p.machine), time_limit=5)
    assert r.status.value == "OPTIMAL" and r.makespan == pytest.approx(1.0)


def test_durations_far_below_one_are_not_rounded_to_zero_ticks():
    # within 1e-9 of 0, yet not zero: 1e-10 had become 0 ticks, and both ops ran on the one
    # gpu at t = 0 (CP-SAT then raised on its own schedule)
    _, exact = tick_scale(np.array([1e-10, 1.0]))
    assert not exact  # so each is rounded up to a tick (at least one), not to 0
    g = OpGraph((Op("a", 1e-10), Op("b", 1e-10)))
    p = HeteroProblem(g, HeteroMachine.parse("gpu:1"))
    r = solve_hetero_cpsat(p, time_limit=5)
    assert validate_hetero(p, r).valid and r.makespan == pytest.approx(2e-10, rel=1e-9)


def test_time_limit_and_workers_are_reported_honestly():
    from opsched.zoo import layered  # a larger random graph: not solved in 0.05 s

    g = layered(40, seed=3)
    p = HeteroProblem(g, HeteroMachine.parse("gpu:3,cpu:4", bandwidth=1e9, latency=0.5))
    r = solve_hetero_cpsat(p, time_limit=0.05, num_workers=1)
    assert validate_hetero(p, r).valid
    assert r.status.value in ("FEASIBLE", "OPTIMAL")
    if r.status.value == "FEASIBLE":
        assert r.lower_bound is not None and r.lower_bound <= r.makespan
    assert math.isfinite(r.makespan) and r.makespan <= r.info["heft_makespan"] + 1e-6


def test_heft_keeps_the_start_it_found() -> None:
    # it stored finish - duration: (0.5 + 0.2) - 0.2 = 0.49999999999999994, before the
    # zero-duration dependency ending at 0.5, so the instance order put b before z and
    # CP-SAT's hint read a cycle (`opsched solve --devices gpu:1` exited 2)
    from opsched.hetero.simulate import placement_orders

    g = OpGraph((Op("a", 0.5), Op("z", 0, deps=("a",)), Op("b", 0.2, deps=("z",))))
    p = HeteroProblem(g, HeteroMachine.parse("gpu:1"))
    for s in (heft(p), cpop(p)):
        start = {o.name: o.start for o in s.ops}
        assert start["b"] == start["z"] == 0.5
        assert placement_orders(p, s)[1][0] == [0, 1, 2]
    assert solve_hetero_cpsat(p).makespan == pytest.approx(0.7)

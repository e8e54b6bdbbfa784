"""The one-unit check of a memory cap (opsched.solver.serial) and its use in solve_cpsat.

The claim behind it: the least peak of a one-unit order equals the least peak of any
schedule on any number of units. Checked against the brute force on random tiny graphs
(zero durations, graph outputs, persistent bytes, 1-3 units): at the brute force's least
peak the check finds an order, one byte below it the check proves that none exists.
"""

from __future__ import annotations

import random

import pytest

from opsched.analysis import min_memory_bound
from opsched.heuristics import greedy
from opsched.heuristics.memory import min_memory_order_result, order_peak
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Status
from opsched.solver import solve_brute_force, solve_cpsat
from opsched.solver.cpsat import Params
from opsched.solver.serial import least_peak_start, serial_cap_check, serial_state_budget
from opsched.validate import validate
from opsched.zoo import layered


def _random_graph(rng: random.Random) -> OpGraph:
    n = rng.randint(1, 7)
    density = rng.choice([0.2, 0.35, 0.5] if n <= 5 else [0.35, 0.5])
    ops = [
        Op(
            f"o{i}",
            rng.randint(0, 3),
            deps=tuple(f"o{j}" for j in range(i) if rng.random() < density),
            output_bytes=rng.choice([0, 1, 2, 4, 6, 10]),
            workspace_bytes=rng.choice([0, 0, 1, 3]),
            output=rng.random() < 0.3,
        )
        for i in range(n)
    ]
    return OpGraph(tuple(ops), persistent_bytes=rng.choice([0, 0, 5]))


@pytest.mark.parametrize("chunk", range(4))
def test_least_one_unit_peak_is_the_least_peak_on_k_units(chunk: int) -> None:
    rng = random.Random(7_000 + chunk)
    parallel_gain = 0  # graphs where a 2+-unit schedule *could* overlap ops
    for _ in range(40):
        g = _random_graph(rng)
        k = rng.randint(1, 3)
        best = solve_brute_force(Problem(g, Machine(units=k)), "peak_memory")
        assert best.status is Status.OPTIMAL and best.peak_memory is not None
        least = int(best.peak_memory)
        fits = serial_cap_check(g, least)
        assert fits.fits is True, g.to_dict()
        assert fits.order is not None and fits.peak is not None
        assert order_peak(g, fits.order) == fits.peak <= least
        if least == 0:
            continue
        below = serial_cap_check(g, least - 1)
        assert below.fits is False, (g.to_dict(), k, least)
        assert below.order is None
        # the brute force on k units agrees that nothing fits one byte lower
        p = Problem(g, Machine(units=k, memory_cap=least - 1))
        assert solve_brute_force(p, "makespan").status is Status.INFEASIBLE
        parallel_gain += k > 1 and g.num_ops > 2
    assert parallel_gain >= 10


def test_the_budget_gives_up_without_an_answer() -> None:
    # 50-op layered graph at its cut bound: the exhaustive search needs >100,000 states
    g = layered(50, seed=0)
    cap, _ = min_memory_bound(g)
    r = serial_cap_check(g, cap, max_states=2_000)
    assert r.fits is None and r.order is None
    assert r.states >= 2_000
    assert serial_state_budget(0.0) == 2_000
    assert serial_state_budget(2.0) == 100_000


def test_refutes_before_search_what_the_bounds_accept() -> None:
    """layered(50, seed=2) at 60 % of its greedy peak: above the minimum-cut bound (79.7 MB)
    and, without the cap orders' started test, no two ops forced both ways, but no one-unit
    order fits (the least is 116.4 MB), so no schedule does. CP-SAT alone left it open after
    10 s. The orders with the started test refute it too (an op they leave no room for)."""
    g = layered(50, seed=2)
    cap = 111_987_916
    assert min_memory_bound(g)[0] < cap
    p = Problem(g, Machine(units=2, memory_cap=cap))
    r = solve_cpsat(p, time_limit=10, params=Params(cap_orders=False))
    assert r.status is Status.INFEASIBLE and not r.ops
    assert r.info["reason"].startswith("no one-unit order stays within 106.8MiB (111987916 B)")
    assert r.info["stages"] == []  # no CP-SAT stage ran
    assert r.info["serial_check"]["fits"] is False
    off = solve_cpsat(p, time_limit=1, params=Params(serial_check=False, cap_orders=False))
    assert "serial_check" not in off.info
    assert off.status is not Status.INFEASIBLE or off.info["stages"]  # not before a search
    by_orders = solve_cpsat(p, time_limit=10)
    assert by_orders.status is Status.INFEASIBLE and by_orders.info["stages"] == []
    assert "once the orders the cap forces are in" in by_orders.info["reason"]


def test_fitting_order_starts_the_search_when_greedy_breaks_the_cap() -> None:
    g = layered(30, seed=1)
    p = Problem(g, Machine(units=2, memory_cap=80_000_000))
    assert not any(greedy(p, prio).has_schedule for prio in ("b-level", "fifo"))
    r = solve_cpsat(p, time_limit=5)
    assert r.info["serial_check"]["fits"] is True
    assert r.has_schedule and validate(p, r).valid
    assert r.peak_memory is not None and r.peak_memory <= 80_000_000


def test_not_run_when_a_greedy_schedule_fits() -> None:
    g = layered(20, seed=0)
    p = Problem(g, Machine(units=2, memory_cap=10**12))
    r = solve_cpsat(p, time_limit=5)
    assert r.status is Status.OPTIMAL
    assert "serial_check" not in r.info


def test_least_peak_solve_starts_from_the_one_unit_optimum() -> None:
    """layered(50, seed=1) on 2 units: the one-unit search proves the least peak (111 MiB),
    so CP-SAT's peak variable starts there and the hint reaches it: the first stage is proven
    at once (without it, 10 s left the makespan stage without a schedule)."""
    g = layered(50, seed=1)
    p = Problem(g, Machine(units=2))
    least = min_memory_order_result(g)
    assert least.optimal and least.peak == 116_391_936
    r = solve_cpsat(p, "memory_then_makespan", time_limit=20)
    assert r.info["least_peak"]["proven"] is True
    assert r.info["stages"][0]["cpsat_status"] == "OPTIMAL"
    assert r.peak_memory == least.peak == r.info["peak_lower_bound"]
    assert validate(p, r).valid
    # the floor never cuts off a schedule: the peak alone, under a makespan limit too
    lim = solve_cpsat(p, "peak_memory", time_limit=10, makespan_limit=r.makespan)
    assert lim.has_schedule and lim.peak_memory is not None
    assert lim.peak_memory >= least.peak
    assert lim.makespan is not None and lim.makespan <= r.makespan


def test_least_peak_start_with_other_resources_runs_the_order_back_to_back() -> None:
    # a and b both need the one dma channel; their 8-byte outputs are read by c and d
    g = OpGraph(
        (
            Op("a", 2, output_bytes=8, demands={"units": 1, "dma": 1}),
            Op("b", 3, output_bytes=8, demands={"units": 1, "dma": 1}),
            Op("c", 1, deps=("a",)),
            Op("d", 1, deps=("b",)),
        ),
        resources={"dma": 1},
    )
    p = Problem(g, Machine(units=2))
    s = least_peak_start(p)
    assert (s.peak, s.proven) == (8, True)
    assert s.hint is not None  # back to back, one producer/consumer pair after the other
    assert s.hint == [0, 3, 2, 6] or s.hint == [4, 0, 6, 3]
    r = solve_cpsat(p, "memory_then_makespan", time_limit=5)
    assert (r.status, r.peak_memory) == (Status.OPTIMAL, 8)
    assert validate(p, r).valid
    # a cap below the least peak: the hint is dropped, the check refutes the cap
    assert least_peak_start(p.with_machine(memory_cap=7)).hint is None


def test_a_cap_below_the_memory_bound_is_refuted_without_search() -> None:
    g = OpGraph((Op("a", 1, output_bytes=8), Op("b", 1, deps=("a",), output_bytes=4)))
    r = serial_cap_check(g, 11)  # b runs beside a's output: 12 B at least
    assert (r.fits, r.states) == (False, 0)
    assert r.describe(11).startswith(
        "no one-unit order stays within 11B (11 B) (the memory lower bound is above it)"
    )
    assert serial_cap_check(g, 12).fits is True


def test_the_state_budget_holds_within_one_layer() -> None:
    # 30 independent producer / consumer pairs: layer 2 alone has 435 sets; the budget was
    # checked only after a whole layer (one layer of a 10,000-op graph reached 670,000
    # states against a budget of 100,000)
    from opsched.heuristics.memory.common import MemoryModel
    from opsched.heuristics.memory.layered import layered_search

    prod = tuple(Op(f"p{i}", 1, output_bytes=8) for i in range(30))
    cons = tuple(Op(f"c{i}", 1, deps=(f"p{i}",)) for i in range(30))
    r = layered_search(MemoryModel.of(OpGraph(prod + cons)), width=None, incumbent=10**9,
                       max_states=50)  # fmt: skip
    assert r.aborted and r.order is None and r.states == 51


def test_a_large_graph_without_a_schedule_under_a_cap_is_not_searched(tmp_path) -> None:
    # the CLI explains a heuristic's dead end with the one-unit search only up to
    # EXPLAIN_MAX_OPS ops; past it, it says it did not check
    import json

    from click.testing import CliRunner

    from opsched.cli import main
    from opsched.solve_commands import EXPLAIN_MAX_OPS

    g = layered(EXPLAIN_MAX_OPS + 500, seed=1)
    path = tmp_path / "g.json"
    path.write_text(json.dumps(g.to_dict()))
    peak = greedy(Problem(g, Machine(units=8))).peak_memory
    r = CliRunner().invoke(main, ["solve", str(path), "--solver", "list", "-k", "8",
                                  "--memory-cap", str(int(peak * 0.6)), "--json"])  # fmt: skip
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    assert "was not checked (more than 2,000 ops)" in doc["info"]["reason"]

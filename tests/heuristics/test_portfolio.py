"""Tests of :func:`opsched.heuristics.portfolio.portfolio`."""

from __future__ import annotations

import pytest

from opsched.datasets import dataset_path
from opsched.heuristics.portfolio import DEFAULT_CANDIDATES, Candidate, portfolio
from opsched.importers import read_stg
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule, Status
from opsched.validate import validate
from opsched.zoo.generators import gnp, layered


def _problems() -> list[Problem]:
    out = []
    for i, g in enumerate(
        [
            layered(30, seed=1),
            gnp(30, 0.1, seed=2),
            read_stg(dataset_path("stg/50/rand0028.stg")),
            read_stg(dataset_path("stg/50/rand0114.stg")),
        ]
    ):
        out.append(Problem(g, Machine(units=2 + 2 * (i % 2))))
    return out


PROBLEMS = _problems()


def _ms(s: Schedule) -> float:
    """The makespan of a result that has a schedule."""
    assert s.makespan is not None
    return s.makespan


@pytest.mark.parametrize("pi", range(len(PROBLEMS)))
def test_never_worse_than_any_candidate_and_picks_the_first_best(pi: int) -> None:
    p = PROBLEMS[pi]
    s = portfolio(p)
    assert s.solver == "portfolio" and s.status == Status.FEASIBLE
    rep = validate(p, s)
    assert rep.valid, rep.summary()
    runs = [c.run(p) for c in DEFAULT_CANDIDATES]
    for r in runs:
        assert _ms(s) <= _ms(r) + 1e-9
    # the winner: smallest makespan, then smallest peak, then earliest in the list
    best = min(range(len(runs)), key=lambda i: (runs[i].makespan, runs[i].peak_memory or 0, i))
    assert s.info["winner"] == runs[best].solver
    assert [o.start for o in s.ops] == [o.start for o in runs[best].ops]
    scores = s.info["candidates"]
    assert s.info["winner"] in scores and scores[s.info["winner"]] == s.makespan
    assert set(scores) == {r.solver for r in runs}
    assert min(v for v in scores.values() if v is not None) == s.makespan


def test_improves_on_plain_list_scheduling_somewhere() -> None:
    from opsched.heuristics.listsched import list_schedule

    gains = [_ms(list_schedule(p)) - _ms(portfolio(p)) for p in PROBLEMS]
    assert all(x >= 0 for x in gains) and max(gains) > 0


def test_custom_candidates() -> None:
    p = PROBLEMS[0]
    cands = [Candidate("lpt", "insertion", justify=False), Candidate("fifo")]
    s = portfolio(p, cands)
    assert set(s.info["candidates"]) <= {"list-lpt-insertion", "greedy", "greedy+fbi"}
    assert s.makespan == min(_ms(c.run(p)) for c in cands)


def test_noise_is_reproducible_by_seed() -> None:
    p = PROBLEMS[1]
    a = portfolio(p, noise=0.1, runs=8, seed=3)
    b = portfolio(p, noise=0.1, runs=8, seed=3)
    assert a.info["expected_makespan"] == b.info["expected_makespan"]
    assert a.info["winner"] == b.info["winner"]
    assert a.info["candidates"] == b.info["candidates"]
    assert [(o.start, o.unit) for o in a.ops] == [(o.start, o.unit) for o in b.ops]
    assert (a.info["noise"], a.info["runs"], a.info["seed"]) == (0.1, 8, 3)
    # the winner has the smallest expected makespan among the candidates
    scores = [v for v in a.info["candidates"].values() if v is not None]
    assert a.info["expected_makespan"] == min(scores)
    assert a.info["candidates"][a.info["winner"]] == a.info["expected_makespan"]
    assert validate(p, a).valid


def test_vanishing_noise_replays_the_deterministic_makespan() -> None:
    # Every candidate is non-delay or insertion-placed, so each op starts when its
    # predecessors and its unit's previous op are done: replaying the per-unit orders with
    # the estimated durations gives back the makespan itself.
    for p in PROBLEMS[:2]:
        det = portfolio(p)
        noisy = portfolio(p, noise=1e-12, runs=2, seed=0)
        assert noisy.info["expected_makespan"] == pytest.approx(det.makespan, rel=1e-9)
        assert noisy.makespan == det.makespan


def test_noise_with_ops_that_hold_no_unit() -> None:
    # b holds no unit, z takes no time: both replay on pseudo-units of their own (b's had
    # been numbered past the machine's 2 units, which the replay refused)
    g = OpGraph((Op("a", 2), Op("b", 1, demands={}), Op("z", 0),
                 Op("c", 1, deps=("a", "b", "z"))))  # fmt: skip
    p = Problem(g, Machine(units=2))
    s = portfolio(p, noise=1e-12, runs=2, seed=0)
    assert validate(p, s).valid and s.makespan == 3.0
    assert s.info["expected_makespan"] == pytest.approx(3.0, rel=1e-9)


def _fallback_graph() -> OpGraph:
    return OpGraph(
        (
            Op("a", 1, output_bytes=10),
            Op("b", 1, output_bytes=10),
            Op("c", 1, deps=("a",)),
            Op("d", 1, deps=("b",)),
        )
    )


def test_tight_cap_gives_a_valid_capped_schedule() -> None:
    p = Problem(_fallback_graph(), Machine(units=2, memory_cap=10))
    s = portfolio(p)
    assert s.status == Status.FEASIBLE and validate(p, s).valid
    assert s.peak_memory is not None and s.peak_memory <= 10 and s.makespan == 4
    assert "list-memory" in s.info["candidates"]  # memory candidates joined in


def test_random_caps_never_exceeded() -> None:
    capped = 0
    for seed in range(3):
        g = layered(24, seed=seed)
        free = portfolio(Problem(g, Machine(units=2)))
        assert free.peak_memory is not None
        for frac in (0.95, 0.85):
            cap = int(free.peak_memory * frac)
            p = Problem(g, Machine(units=2, memory_cap=cap))
            s = portfolio(p)
            if s.status == Status.UNKNOWN:
                assert s.info["reasons"] and "no candidate" in s.info["reason"]
                continue
            assert validate(p, s).valid and (s.peak_memory or 0) <= cap
            capped += 1
    assert capped >= 2  # the check ran on schedules that the cap constrained


def test_dead_end_under_cap_is_unknown_with_reasons() -> None:
    g = OpGraph(
        (
            Op("a", 1, output_bytes=10),
            Op("b", 1, output_bytes=10),
            Op("e", 1, deps=("a",), output_bytes=1),
            Op("c", 1, deps=("b", "e"), output_bytes=1),
            Op("d", 1, deps=("a", "c"), output_bytes=1),
        )
    )
    p = Problem(g, Machine(units=2, memory_cap=15))  # every order holds 20 B while c runs
    s = portfolio(p)
    assert s.status == Status.UNKNOWN and not s.has_schedule and s.solver == "portfolio"
    assert s.info["reason"].startswith("no candidate found a schedule")
    assert all("memory" in r for r in s.info["reasons"].values())
    assert all(v is None for v in s.info["candidates"].values())
    assert "winner" not in s.info


def test_empty_graph() -> None:
    p = Problem(OpGraph(()), Machine(units=2))
    s = portfolio(p)
    assert s.status == Status.FEASIBLE and s.makespan == 0.0


def test_huge_unit_counts_run_as_fast_as_the_op_count() -> None:
    # 10^7 units had taken the portfolio over 30 s on two ops, 2^31 ran out of memory and
    # 10^30 overflowed (the list kernels and forward-backward passes sized by the machine)
    from opsched.heuristics.lns import lns

    g = OpGraph((Op("a", 1), Op("b", 2)))
    for units in (10**7, 2**31, 10**30):
        p = Problem(g, Machine(units=units))
        for s in (portfolio(p), lns(p, time_limit=1)):
            assert s.status is Status.FEASIBLE and s.makespan == 2.0
            assert s.machine["units"] == units and validate(p, s).valid


def test_time_limit_stops_starting_candidates() -> None:
    p = _problems()[0]
    s = portfolio(p, time_limit=1e-9)  # met at once: the first schedule is still found
    assert s.has_schedule and validate(p, s).valid
    assert s.info["time_limit"] == f"reached after 1 of {len(DEFAULT_CANDIDATES)} candidates"
    full = portfolio(p)
    assert portfolio(p, time_limit=60.0).makespan == full.makespan  # ample: all of them run
    assert "time_limit" not in full.info


def test_noise_replays_an_op_of_two_units_where_its_schedule_had_it() -> None:
    # w needs both units and no op precedes it: replayed on its dependencies alone it had
    # started at 0 beside a and b, a makespan of about 1 that no 2-unit machine gives (the
    # optimum is 2), and that entered the expected makespan. It now waits for the ops that
    # had ended by its start (opsched.validate.simulate.UnitOrders.after).
    g = OpGraph((Op("a", 1), Op("b", 1), Op("w", 1, demands={"units": 2})))
    p = Problem(g, Machine(units=2))
    s = portfolio(p, noise=1e-12, runs=3, seed=0)
    assert validate(p, s).valid and s.makespan == 2.0
    assert s.info["left_out"] == {} and s.info["expected_makespan"] == pytest.approx(2.0)


def test_noise_leaves_out_replays_no_machine_can_run() -> None:
    # 3 units: A on 0, B on 1, X (2 units) after B, W (no unit) and C on 2 after W. Where A
    # runs long and W short, C starts beside A and X: 4 units busy on 3. Such runs are left
    # out of the mean and counted; candidates with fewer of them rank first.
    from opsched.schedule import Schedule

    g = OpGraph((Op("A", 1.5), Op("B", 1), Op("X", 1, demands={"units": 2}),
                 Op("W", 1.5, demands={"units": 0}), Op("C", 1.5, deps=("W",))))  # fmt: skip
    p = Problem(g, Machine(units=3))
    hand = Schedule.build(p, [0, 0, 1, 0, 1.5], [0, 1, None, None, 2], solver="hand")
    assert validate(p, hand).valid

    class Fixed:  # a portfolio member that returns the schedule above
        def run(self, problem: Problem, seed: int = 0, deadline: float | None = None):
            return hand

    s = portfolio(p, [Fixed()], noise=0.5, runs=20, seed=0)  # type: ignore[list-item]
    assert 0 < s.info["left_out"]["hand"] < 20
    assert s.info["expected_makespan"] == pytest.approx(s.info["candidates"]["hand"])


@pytest.mark.parametrize("seed", range(12))
def test_array_path_gives_the_schedule_path_result(seed: int, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Without noise or a cap the list candidates run on arrays and only the winner becomes a
    Schedule. Against every candidate run as a Schedule (the path with noise and caps): the
    same scores, winner, starts, units and peak. Small integer durations make makespan ties
    common, so the peak tie-break and the earliest-candidate rule are exercised."""
    import opsched.heuristics.portfolio as pf

    n = 8 + 3 * seed
    g = gnp(n, 0.15, seed=seed) if seed % 2 else layered(n, seed=seed)
    ops = [
        Op(o.name, float(1 + (i * 7 + seed) % 3), deps=o.deps, output_bytes=(i * 13) % 5 + 1)
        for i, o in enumerate(g.ops)
    ]
    p = Problem(OpGraph(ops), Machine(units=2 + seed % 3))
    fast = portfolio(p, seed=seed)
    monkeypatch.setattr(pf, "_on_arrays", lambda problem: False)
    slow = portfolio(p, seed=seed)
    assert fast.info["candidates"] == slow.info["candidates"]
    assert fast.info["winner"] == slow.info["winner"]
    assert fast.starts() == slow.starts()
    assert [o.unit for o in fast.ops] == [o.unit for o in slow.ops]
    assert (fast.makespan, fast.peak_memory, fast.lower_bound) == (
        slow.makespan, slow.peak_memory, slow.lower_bound,
    )  # fmt: skip
    assert {k: v for k, v in fast.info.items()} == {k: v for k, v in slow.info.items()}
    assert validate(p, fast).valid

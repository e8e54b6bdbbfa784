"""Dynamic scheduling: noise models, replay vs online, reproducibility, clairvoyant gaps, shapes."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from click.testing import CliRunner

from opsched.analysis import lower_bounds
from opsched.cli import main
from opsched.dynamic import (
    Empirical,
    Lognormal,
    Online,
    RelativeError,
    clairvoyant_gaps,
    expected_makespan,
    online,
    replay,
    robust_portfolio,
    sample_durations,
    shape_graphs,
    shape_study,
)
from opsched.errors import ProblemError
from opsched.heuristics.listsched import list_schedule
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule
from opsched.solver import solve_brute_force
from opsched.validate import validate
from opsched.zoo import layered


def fork() -> Problem:
    # a(2) -> c(1); b(1) independent; 2 units
    g = OpGraph((Op("a", 2), Op("b", 1), Op("c", 1, deps=("a",))))
    return Problem(g, Machine(units=2))


def test_lognormal_is_mean_preserving_and_reproducible() -> None:
    g = layered(20, seed=0)
    d1 = sample_durations(g, Lognormal(0.3), 4000, seed=7)
    d2 = sample_durations(g, Lognormal(0.3), 4000, seed=7)
    assert np.array_equal(d1, d2)
    assert not np.array_equal(d1, sample_durations(g, Lognormal(0.3), 4000, seed=8))
    ratio = d1.mean(axis=0) / g.durations
    assert np.allclose(ratio, 1.0, atol=0.03)
    # sigma of log(actual / estimate) is the spread
    assert np.allclose(np.log(d1 / g.durations).std(axis=0), 0.3, atol=0.02)


def test_per_op_and_per_kind_spread() -> None:
    g = OpGraph((Op("a", 1, kind="matmul"), Op("b", 1, kind="conv2d"), Op("c", 1)))
    n = Lognormal(0.0, per_op={"c": 0.5}, per_kind={"matmul": 0.2})
    assert n.sigmas(g).tolist() == [0.2, 0.0, 0.5]
    d = sample_durations(g, n, 10, seed=0)
    assert (d[:, 1] == 1).all() and (d[:, 0] != 1).all()


def test_relative_error_bounds_and_empirical() -> None:
    g = layered(10, seed=1)
    d = sample_durations(g, RelativeError(0.2), 500, seed=0)
    r = d / g.durations
    assert r.min() >= 0.8 and r.max() <= 1.2 and r.min() < 0.85 and r.max() > 1.15
    e = sample_durations(g, Empirical([0.5, 2.0]), 200, seed=0) / g.durations
    assert set(np.round(e, 9).ravel().tolist()) == {0.5, 2.0}
    with pytest.raises(ProblemError):
        RelativeError(1.5)


def test_replay_hand_worked() -> None:
    p = fork()
    s = Schedule.build(p, [0, 0, 2], [0, 1, 0], solver="hand")
    # a grows to 4: c waits for a on unit 0 -> 5; b shrinks, nothing else moves
    r = replay(p, s, [4, 0.5, 1])
    assert r.starts() == {"a": 0.0, "b": 0.0, "c": 4.0} and r.makespan == 5.0
    assert validate(Problem(r_graph(p, [4, 0.5, 1]), p.machine), r).valid


def r_graph(p: Problem, d: list[float]) -> OpGraph:
    from dataclasses import replace

    return p.graph.replace_ops(
        [replace(o, duration=x) for o, x in zip(p.graph.ops, d, strict=True)]
    )


def test_static_order_vs_online_hand_worked() -> None:
    # Two units; estimates a(1) -> b(1) and d(1) on unit 0, c(3) on unit 1: makespan 3.
    g = OpGraph((Op("a", 1), Op("b", 1, deps=("a",)), Op("c", 3), Op("d", 1)))
    p = Problem(g, Machine(units=2))
    static = Schedule.build(p, [0, 1, 0, 2], [0, 0, 1, 0], solver="hand")  # d after b on unit 0
    assert validate(p, static).valid and static.makespan == 3.0
    actual = [1, 1, 1, 3]  # c is short, d is long
    # static keeps d behind b on unit 0: d runs [2, 5)
    assert replay(p, static, actual).makespan == 5.0
    # online (b-level of estimates: c 3, a 2, b 1, d 1) puts d on unit 1 when c ends at 1: [1, 4)
    on = online(p, actual)
    assert on.makespan == 4.0 and on.starts()["d"] == 1.0
    assert validate(Problem(r_graph(p, actual), p.machine), on).valid


@pytest.mark.parametrize("seed", range(5))
def test_zero_noise_equals_static_makespan(seed: int) -> None:
    g = layered(30, seed=seed)
    p = Problem(g, Machine(units=3))
    s = list_schedule(p)
    for noise in (Lognormal(0.0), RelativeError(0.0)):
        st = expected_makespan(p, s, noise, runs=3, seed=seed)
        assert st.mean == st.p95 == st.worst == s.makespan == st.estimate
    on = expected_makespan(p, Online(), Lognormal(0.0), runs=2)
    assert on.mean == s.makespan  # the online rule with exact estimates is the list schedule


def test_replayed_and_online_runs_are_valid_schedules() -> None:
    g = layered(25, seed=4)
    p = Problem(g, Machine(units=3))
    s = list_schedule(p)
    for d in sample_durations(g, Lognormal(0.4), 10, seed=3):
        q = Problem(r_graph(p, d.tolist()), p.machine)
        for run in (replay(p, s, d), online(p, d)):
            assert validate(q, run).valid
        lb = lower_bounds(q.graph, 3).value
        assert min(replay(p, s, d).makespan, online(p, d).makespan) >= lb - 1e-9


def test_noise_runs_reproducible_by_seed() -> None:
    p = Problem(layered(20, seed=2), Machine(units=2))
    a = expected_makespan(p, "greedy-blevel", Lognormal(0.2), runs=30, seed=11)
    b = expected_makespan(p, "greedy-blevel", Lognormal(0.2), runs=30, seed=11)
    c = expected_makespan(p, "greedy-blevel", Lognormal(0.2), runs=30, seed=12)
    assert np.array_equal(a.makespans, b.makespans) and not np.array_equal(a.makespans, c.makespans)
    assert a.to_dict()["p95"] == b.to_dict()["p95"] >= a.p50


def test_portfolio_ranks_by_mean() -> None:
    p = Problem(layered(20, seed=5), Machine(units=3))
    ranked = robust_portfolio(
        p,
        {"serial": "serial", "list": list_schedule(p), "online": Online()},
        Lognormal(0.2),
        runs=20,
    )
    means = [r.mean for r in ranked]
    assert means == sorted(means) and ranked[-1].policy == "serial"


def test_clairvoyant_gap_against_brute_force() -> None:
    p = fork()
    out = clairvoyant_gaps(p, [list_schedule(p), Online()], Lognormal(0.5), runs=6, seed=1)
    draws = sample_durations(p.graph, Lognormal(0.5), 6, seed=1, decimals=3)
    brute = [solve_brute_force(Problem(r_graph(p, d.tolist()), p.machine)).makespan for d in draws]
    assert out["proven"] == 6 and np.allclose(out["optimum"], brute)
    for pol in out["policies"].values():
        assert pol["mean_gap"] >= -1e-9 and np.all(
            np.array(pol["makespans"]) >= np.array(brute) - 1e-9
        )


def test_clairvoyant_gaps_keeps_a_policy_mean_when_cp_sat_finds_nothing(monkeypatch) -> None:
    # the policy's mean had been NaN whenever no run had an optimum, its own makespans finite
    import opsched.solver as solver
    from opsched.schedule import Schedule

    p = fork()
    none = Schedule.empty(p, solver="cpsat", status="UNKNOWN")
    monkeypatch.setattr(solver, "solve_cpsat", lambda *a, **k: none)
    out = clairvoyant_gaps(p, [list_schedule(p)], Lognormal(0.5), runs=4, seed=1)
    pol = next(iter(out["policies"].values()))
    assert out["proven"] == 0 and np.isnan(out["optimum"]).all() and np.isnan(pol["mean_gap"])
    assert pol["mean"] == pytest.approx(np.mean(pol["makespans"])) and pol["mean"] > 0


def test_shape_study_gpt2_seq_lengths() -> None:
    gs = shape_graphs("gpt2_block", seq_lens=(64, 256, 1024))
    st = shape_study(gs, units=2)
    assert st.labels == ["seq=64", "seq=256", "seq=1024"]
    assert np.allclose(st.slowdown.diagonal(), 1.0)
    assert (st.schedule_s > 0).all() and st.cross.shape == (3, 3)
    assert st.fresh[0] < st.fresh[1] < st.fresh[2]
    assert len(st.to_frame()) == 9


def test_shape_study_costed_on_a_gpu() -> None:
    gs = shape_graphs("squeezenet1_1", batches=(1, 16), gpu="A100-SXM4-80GB")
    st = shape_study(gs, units=3)
    assert st.fresh[1] > st.fresh[0] and (st.cost_s > 0).all()


def test_cli_simulate_online_and_reproducible(tmp_path) -> None:
    out = tmp_path / "s.json"
    CliRunner().invoke(
        main,
        [
            "solve",
            "datasets/stg/50/rand0000.stg",
            "-k",
            "4",
            "--solver",
            "greedy-blevel",
            "-o",
            str(out),
        ],
    )
    args = [
        "simulate",
        "datasets/stg/50/rand0000.stg",
        str(out),
        "--noise",
        "0.2",
        "--runs",
        "20",
        "--seed",
        "3",
        "--online",
        "--json",
    ]
    r1, r2 = CliRunner().invoke(main, args), CliRunner().invoke(main, args)
    assert r1.exit_code == 0, r1.output
    d, d2 = json.loads(r1.output), json.loads(r2.output)
    for doc in (d, d2):  # everything but the timings is reproducible
        for key in ("static", "online"):
            doc[key].pop("wall_time_s")
    assert d == d2 and d["static"]["estimate"] == 66
    assert set(d) >= {"static", "online"} and d["online"]["runs"] == 20


def test_cli_simulate_wrong_graph_exits_2(tmp_path) -> None:
    out = tmp_path / "s.json"
    CliRunner().invoke(
        main,
        ["solve", "datasets/stg/50/rand0000.stg", "-k", "2", "--solver", "greedy", "-o", str(out)],
    )
    r = CliRunner().invoke(main, ["simulate", "datasets/stg/50/rand0001.stg", str(out)])
    assert r.exit_code == 2 and "not valid" in r.output


def test_a_zero_duration_op_on_a_unit_does_not_wait_for_it() -> None:
    # z takes no time, so it holds no unit (the validator's rule); queued on unit 0 behind a,
    # the replay held it (and its reader b) until a ended: mean 3 at zero noise, estimate 2
    g = OpGraph((Op("a", 2), Op("z", 0), Op("b", 1, deps=("z",))))
    p = Problem(g, Machine(units=2))
    s = Schedule.build(p, {"a": 0, "z": 1, "b": 1}, units=[0, 0, 1], solver="hand")
    assert validate(p, s).valid and s.makespan == 2
    st = expected_makespan(p, s, Lognormal(0.0), runs=3)
    assert st.estimate == st.mean == st.p95 == 2


def test_replay_with_more_unitless_ops_than_units() -> None:
    # copies that hold no stream (demand 0 units) have no unit index: their pseudo-units lay
    # past the machine's 2 units, which execute_orders refuses
    ops = [Op("k", 2)] + [Op(f"c{i}", 1, demands={"units": 0}, deps=("k",)) for i in range(3)]
    p = Problem(OpGraph(tuple(ops)), Machine(units=2))
    s = Schedule.build(p, {"k": 0, "c0": 2, "c1": 2, "c2": 2}, [0, None, None, None], solver="h")
    assert validate(p, s).valid
    r = replay(p, s)
    assert r.makespan == 3 and validate(p, r).valid


def test_streams_only_keeps_an_op_that_holds_no_unit_off_the_streams() -> None:
    from opsched.dynamic.shapes import streams_only
    from opsched.heuristics import greedy
    from opsched.ir import Op, OpGraph
    from opsched.problem import Machine, Problem

    g = OpGraph((Op("x", 0, demands={}), Op("y", 2, deps=("x",), demands={"units": 1, "sm": 4}),
                 Op("copy", 3, demands={"dma": 1})), resources={"sm": 8, "dma": 1})  # fmt: skip
    s = streams_only(g)
    assert [dict(op.demands) for op in s.ops] == [{"units": 0}, {"units": 1}, {"units": 0}]
    assert s.resources == {}
    # on one stream the copy overlaps y (it held the stream and ran after it: 5, not 3)
    assert greedy(Problem(s, Machine(units=1))).makespan == 3.0


def test_rounding_never_turns_a_timed_op_into_a_free_one() -> None:
    from opsched.ir import Op, OpGraph

    g = OpGraph((Op("tiny", 0.0004, workspace_bytes=100), Op("none", 0), Op("big", 2.0)))
    d = sample_durations(g, Lognormal(0.1), 50, seed=0, decimals=3)
    assert (d[:, 0] == 0.001).all() and (d[:, 1] == 0).all()
    assert (d[:, 2] > 1).all() and np.array_equal(d[:, 2], np.round(d[:, 2], 3))


def test_clairvoyant_gaps_refuses_two_policies_of_one_name() -> None:
    # results are keyed by the schedule's solver: the second had overwritten the first
    from opsched.heuristics import greedy
    from opsched.problem import Machine, Problem
    from opsched.zoo import layered

    p = Problem(layered(8, seed=0), Machine(units=2))
    a, b = greedy(p), greedy(p, "b-level")
    b.solver = a.solver
    with pytest.raises(ProblemError, match="two policies are both named 'greedy'"):
        clairvoyant_gaps(p, [a, b], Lognormal(0.1), runs=2)


def _old_replay_makespan(problem: Problem, orders, d: np.ndarray) -> float:
    """The replay as it was before the array path: a graph with the actual durations, the
    orders executed on it one op at a time in Python, a schedule built."""
    g = problem.graph.replace_ops(
        [replace_op(op, duration=float(x)) for op, x in zip(problem.graph.ops, d, strict=True)]
    )
    pos = {name: i for i, name in enumerate(g.names)}
    preds = [[pos[x] for x in op.deps] for op in g.ops]
    for seq in orders.orders.values():
        for a, b in itertools.pairwise(seq):
            preds[pos[b]].append(pos[a])
    start = [None] * g.num_ops
    left = list(range(g.num_ops))
    while left:  # fixed point of the longest path, in any order
        rest = []
        for i in left:
            if all(start[p] is not None for p in preds[i]):
                start[i] = max((start[p] + float(d[p]) for p in preds[i]), default=0.0)
            else:
                rest.append(i)
        assert len(rest) < len(left)
        left = rest
    return max(s + float(x) for s, x in zip(start, d, strict=True))


@pytest.mark.parametrize("seed", range(12))
def test_replay_on_arrays_gives_the_graph_replays_makespan(seed: int) -> None:
    # the array replay (UnitOrders.replay_makespan, used by simulate and the portfolio's
    # noise ranking) against the replay that rebuilt the graph, on random graphs with
    # zero-duration and unit-less ops, and with several units' orders
    from opsched.validate.simulate import UnitOrders

    rng = np.random.default_rng(seed)
    g = layered(40 + seed * 7, seed=seed)
    ops = [
        replace_op(op, duration=0.0 if rng.random() < 0.15 else op.duration,
                   demands={} if rng.random() < 0.1 else {"units": 1})
        for op in g.ops
    ]  # fmt: skip
    p = Problem(g.replace_ops(ops), Machine(units=1 + seed % 4))
    s = list_schedule(p, "random" if seed % 2 else "b-level", "insertion", seed=seed)
    orders = UnitOrders(p, s)
    draws = sample_durations(p.graph, Lognormal(0.4), 5, seed=seed)
    for d in [p.graph.durations, *draws]:
        fast = orders.replay_makespan(p, d)
        assert fast is not None
        assert fast == replay(p, orders, d).makespan == _old_replay_makespan(p, orders, d)
    # refused durations and problems the array path leaves to run(): None
    assert orders.replay_makespan(p, -p.graph.durations - 1) is None
    capped = p.with_machine(memory_cap=10**15)
    assert orders.replay_makespan(capped, p.graph.durations) is None


def replace_op(op: Op, **changes: object) -> Op:
    from dataclasses import replace as _replace

    return _replace(op, **changes)


def test_expected_makespan_same_with_and_without_the_array_replay(monkeypatch) -> None:
    from opsched.validate.simulate import UnitOrders

    p = Problem(layered(120, seed=3), Machine(units=3))
    s = list_schedule(p)
    fast = expected_makespan(p, s, Lognormal(0.3), runs=8, seed=2)
    monkeypatch.setattr(UnitOrders, "replay_makespan", lambda self, problem, d: None)
    slow = expected_makespan(p, s, Lognormal(0.3), runs=8, seed=2)
    assert fast.makespans.tolist() == slow.makespans.tolist()


@pytest.mark.parametrize("seed", range(6))
def test_online_runs_on_arrays_give_the_online_schedules_makespans(seed, monkeypatch):  # type: ignore[no-untyped-def]
    """Without a cap, online runs price the drawn durations with the non-delay kernel alone
    (no graph and Schedule per run). Every run's makespan equals online()'s on the same
    draw, and the statistics equal those of the per-run path."""
    import opsched.dynamic.robust as robust

    g = layered(30 + 10 * seed, seed=seed)
    p = Problem(g, Machine(units=2 + seed % 3))
    noise = Lognormal(0.3)
    fast = expected_makespan(p, Online(), noise, runs=15, seed=seed)
    draws = sample_durations(g, noise, 15, seed)
    per_run = [online(p, d).makespan for d in draws]
    assert fast.makespans.tolist() == per_run
    monkeypatch.setattr(robust, "units_only", lambda problem: False)
    slow = expected_makespan(p, Online("t-level"), noise, runs=15, seed=seed)
    monkeypatch.undo()
    again = expected_makespan(p, Online("t-level"), noise, runs=15, seed=seed)
    assert again.makespans.tolist() == slow.makespans.tolist()
    assert again.info == slow.info and again.estimate == slow.estimate

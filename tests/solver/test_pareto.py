"""Tests of :func:`opsched.solver.pareto_front`: hand-worked fronts, and fronts of random
tiny graphs against the non-dominated (makespan, peak) pairs of every integer schedule
(``integer_outcomes`` in ``conftest.py``, independent of every opsched solver)."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace

import pytest

from opsched.analysis import min_memory_bound
from opsched.demo import branches_graph
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Status
from opsched.solver import ParetoFront, pareto_front
from opsched.validate import validate


def _pairs(front: ParetoFront) -> list[tuple[float, int]]:
    return [(p.makespan, p.peak_memory) for p in front.points]


def _check_points(p: Problem, front: ParetoFront, proven: bool = True) -> None:
    pts = front.points
    for a, b in itertools.pairwise(pts):
        assert a.makespan < b.makespan  # strictly longer ...
        assert a.peak_memory > b.peak_memory  # ... for strictly less memory
    for pt in pts:
        assert pt.proven is proven
        s = pt.schedule
        assert s.status is (Status.OPTIMAL if proven else Status.FEASIBLE)
        assert (s.makespan, s.peak_memory) == (pt.makespan, pt.peak_memory)
        r = validate(p, s)
        assert r.valid, r.summary()
        if p.memory_cap is not None:
            assert pt.peak_memory <= p.memory_cap


def test_docstring_example() -> None:
    # two independent 1-long ops writing 8 B each, 2 units: together (1, 16) or one after
    # the other (2, 8)
    g = OpGraph((Op("a", 1, output_bytes=8), Op("b", 1, output_bytes=8)))
    p = Problem(g, Machine(units=2))
    f = pareto_front(p, point_time_limit=5)
    assert _pairs(f) == [(1.0, 16), (2.0, 8)]
    assert f.complete
    _check_points(p, f)


def test_three_independent_ops() -> None:
    # three 8 B ops on 3 units: 1 step (24 B), 2 steps with two together (16 B), 3 (8 B)
    g = OpGraph(tuple(Op(n, 1, output_bytes=8) for n in "abc"), name="three")
    p = Problem(g, Machine(units=3))
    f = pareto_front(p, point_time_limit=5)
    assert _pairs(f) == [(1.0, 24), (2.0, 16), (3.0, 8)]
    assert f.complete and f.graph == "three"
    _check_points(p, f)
    # persistent bytes are added to every peak
    gp = OpGraph(g.ops, name="three", persistent_bytes=5)
    fp = pareto_front(Problem(gp, Machine(units=3)), point_time_limit=5)
    assert _pairs(fp) == [(1.0, 29), (2.0, 21), (3.0, 13)]
    # one unit: only the serial schedule, (3, 8)
    f1 = pareto_front(Problem(g, Machine(units=1)), point_time_limit=5)
    assert _pairs(f1) == [(3.0, 8)] and f1.complete


def _two_branches() -> OpGraph:
    """a1 -> a2 and b1 -> b2 feeding c; a1, b1 write 10 B, a2, b2 1 B; unit durations.

    On 2 units: makespan 3 forces a1, b1 at 0, a2, b2 at 1: 10 + 10 + 1 + 1 = 22 at t=1.
    Makespan 4: a1 and b1 must both start by 1, so their outputs overlap; a1 0, a2 1, b1 1,
    b2 2, c 3 gives 10 + 1 + 10 = 21. Makespan 5: one branch after the other, 1 + 10 + 1 =
    12. Nothing uses less than 12 (the second of a2 / b2 runs beside the first's output).
    """
    return branches_graph()


def test_two_branches_front(exhaustive, non_dominated) -> None:  # type: ignore[no-untyped-def]
    p = Problem(_two_branches(), Machine(units=2))
    f = pareto_front(p, point_time_limit=5)
    assert _pairs(f) == [(3.0, 22), (4.0, 21), (5.0, 12)]
    assert f.complete
    _check_points(p, f)
    assert non_dominated(exhaustive(p)) == [(3, 22), (4, 21), (5, 12)]


def test_memory_cap_bounds_the_front() -> None:
    g = _two_branches()
    p = Problem(g, Machine(units=2, memory_cap=21))
    f = pareto_front(p, point_time_limit=5)
    assert _pairs(f) == [(4.0, 21), (5.0, 12)]
    assert f.complete
    _check_points(p, f)
    # below the least peak, 12: no point at all, and that is the whole (empty) front
    assert min_memory_bound(g)[0] == 11
    empty = pareto_front(p.with_machine(memory_cap=11), point_time_limit=5)
    assert empty.points == [] and empty.complete


def test_views() -> None:
    f = pareto_front(Problem(_two_branches(), Machine(units=2)), point_time_limit=5)
    doc = f.to_dict()
    assert doc["graph"] == "two-branches" and doc["complete"] is True
    assert doc["points"] == [
        {"makespan": 3.0, "peak_memory": 22, "proven": True},
        {"makespan": 4.0, "peak_memory": 21, "proven": True},
        {"makespan": 5.0, "peak_memory": 12, "proven": True},
    ]
    frame = f.to_frame()
    assert list(frame.columns) == ["makespan", "peak_memory", "proven"]
    assert frame["peak_memory"].tolist() == [22, 21, 12]
    assert f.summary().startswith("Pareto front of two-branches (complete, ")
    assert f.summary().endswith(": (3, 22), (4, 21), (5, 12)")
    assert f.wall_time_s > 0


def test_max_points() -> None:
    f = pareto_front(Problem(_two_branches(), Machine(units=2)), max_points=2)
    assert _pairs(f) == [(3.0, 22), (4.0, 21)]


def test_huge_sizes_front_is_not_claimed_complete() -> None:
    # inexact memory quanta: every point is valid but none is claimed proven
    b = 2**50
    g = OpGraph(
        (
            Op("a", 1, output_bytes=b + 1),
            Op("b", 1, output_bytes=b + 3),
            Op("c", 1, deps=("a", "b"), workspace_bytes=b),
            Op("d", 2, output_bytes=b + 5),
        )
    )
    p = Problem(g, Machine(units=2))
    f = pareto_front(p, point_time_limit=5)
    assert not f.complete
    assert f.points
    _check_points(p, f, proven=False)
    # d beside a and b (3 * 2^50 + 9 B) is the only way to finish by 3
    assert _pairs(f)[0] == (3.0, 3 * b + 9)


def test_empty_graph_front() -> None:
    f = pareto_front(Problem(OpGraph((), name="empty"), Machine(units=1)), point_time_limit=5)
    assert _pairs(f) == [(0.0, 0)]
    assert f.complete


# ----------------------------------------------------------------------------- vs exhaustive


def _random_tiny(rng: random.Random) -> Problem:
    n = rng.randint(2, 5)
    k = rng.choice([1, 2, 3, None])
    ops = []
    for i in range(n):
        deps = tuple(f"o{j}" for j in range(i) if rng.random() < 0.35)
        ops.append(
            Op(
                f"o{i}",
                rng.choice([0, 1, 1, 2, 3]),
                deps=deps,
                output_bytes=rng.choice([0, 2, 4, 8, 12]),
                workspace_bytes=rng.choice([0, 0, 2, 6]),
                output=rng.random() < 0.3,
                demands={"units": rng.choice([1, 1, 1, 0, 2 if k is None else min(2, k)])},
            )
        )
    g = OpGraph(tuple(ops), persistent_bytes=rng.choice([0, 3]))
    need, _ = min_memory_bound(g)
    cap = rng.choice([None, None, None, need + rng.randint(0, 8)])
    return Problem(g, Machine(units=k, memory_cap=cap))


@pytest.mark.parametrize("seed", range(3))
def test_front_equals_exhaustive_front(seed: int, exhaustive, non_dominated) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(4242 + seed)
    multi_point = 0
    for _ in range(100):
        p = _random_tiny(rng)
        expected = non_dominated(exhaustive(p))
        f = pareto_front(p, point_time_limit=10, num_workers=1)
        assert _pairs(f) == expected, p.graph.to_dict()
        assert f.complete
        _check_points(p, f)
        multi_point += len(expected) >= 2
    assert multi_point >= 25  # the sample has real trade-offs (about 35 of 100 fronts)


def test_plot_draws_the_front() -> None:
    import matplotlib

    matplotlib.use("Agg")
    g = OpGraph((Op("a", 1, output_bytes=8), Op("b", 1, output_bytes=8)))
    front = pareto_front(Problem(g, Machine(units=2)), point_time_limit=5)
    ax = front.plot()
    # one step line and one scatter of the two points (1, 16) and (2, 8)
    xs, ys = ax.lines[0].get_data()
    assert list(xs) == [1.0, 2.0] and list(ys) == [16, 8]
    assert ax.get_xlabel() == "makespan"


def test_a_front_cut_at_max_points_is_not_complete_and_says_why() -> None:
    from opsched.errors import ProblemError
    from opsched.zoo.generators import layered

    p = Problem(layered(12, seed=3), Machine(units=3))
    whole = pareto_front(p, point_time_limit=5)
    assert whole.complete and whole.stopped is None and len(whole.points) > 2
    cut = pareto_front(p, point_time_limit=5, max_points=2)
    assert not cut.complete and cut.stopped == "stopped at max_points=2"
    assert [(q.makespan, q.peak_memory) for q in cut.points] == [
        (q.makespan, q.peak_memory) for q in whole.points[:2]
    ]
    for bad in (0, -1, 2.5):
        with pytest.raises(ProblemError, match="max_points"):
            pareto_front(p, max_points=bad)


def test_plot_tells_unproven_points_and_an_incomplete_front_apart() -> None:
    # every point had been drawn the same, under the same title, proven or not
    import matplotlib

    matplotlib.use("Agg")
    from opsched.solver.pareto import ParetoFront

    g = OpGraph((Op("a", 1, output_bytes=8), Op("b", 1, output_bytes=8)))
    done = pareto_front(Problem(g, Machine(units=2)), point_time_limit=5)
    assert done.complete and all(q.proven for q in done.points)
    ax = done.plot()
    assert ax.get_title() == f"{g.name}: makespan vs peak memory"
    assert [c.get_label() for c in ax.collections] == ["proven"]
    first, second = done.points
    cut = ParetoFront(g.name, [first, replace(second, proven=False)], complete=False,
                      stopped="time limit")  # fmt: skip
    ax = cut.plot()
    assert ax.get_title().endswith("(incomplete: time limit)")
    filled, hollow = ax.collections
    assert filled.get_label() == "proven" and filled.get_offsets().tolist() == [[1.0, 16.0]]
    assert hollow.get_label() == "not proven" and hollow.get_offsets().tolist() == [[2.0, 8.0]]
    assert hollow.get_facecolors().size == 0  # not filled


def test_an_unproven_point_that_a_later_point_dominates_is_dropped(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A point not proven optimal may end later than the true least makespan under its cap;
    the next, lower cap can then give a point that ends as soon or sooner. The front keeps
    only points that no other point dominates, sorted by makespan."""
    import opsched.solver.pareto as pareto_mod
    from opsched.schedule import Schedule

    g = OpGraph(
        (Op("a", 1, output_bytes=8), Op("b", 1, output_bytes=8), Op("c", 1, output_bytes=0))
    )
    problem = Problem(g, Machine(units=2))
    real = pareto_mod.solve_cpsat
    calls: list[int] = []

    def first_not_proven(p, objective, **kw):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 1:  # a and b together, c after an idle step: (3, 16), unproven
            return Schedule.build(p, [0.0, 0.0, 2.0], [0, 1, 0], solver="cpsat",
                                  status=Status.FEASIBLE, lower_bound=2.0)  # fmt: skip
        return real(p, objective, **kw)

    monkeypatch.setattr(pareto_mod, "solve_cpsat", first_not_proven)
    front = pareto_front(problem, point_time_limit=5)
    # (2, 8): a with c, then b; it dominates the unproven (3, 16)
    assert [(p.makespan, p.peak_memory) for p in front.points] == [(2.0, 8)]
    assert not front.complete and front.stopped is not None
    for pt in front.points:
        assert validate(problem, pt.schedule).valid


def test_a_rounded_model_without_schedule_is_not_blamed_on_the_time_limit() -> None:
    """Under a cap between the analysis bound and the least peak, with sizes past 2^40 (the
    memory is rounded), CP-SAT's rounded model is infeasible but proves nothing: the front
    stops at once, and ``stopped`` said "nor refuted, in point_time_limit", as if a longer
    limit would help. It gives the solver's reason now."""
    t = 1099511627778
    g = OpGraph(
        (
            Op("v0", 2, output_bytes=14, workspace_bytes=t, output=True),
            Op("v1", 3, output=True),
            Op("v2", 0, deps=("v1",), output_bytes=t + 11, output=True, demands={"units": 2}),
            Op("v3", 0, deps=("v2",), output_bytes=t + 11),
            Op("v4", 2, deps=("v3",), output_bytes=6, output=True),
        ),
        persistent_bytes=3,
    )
    f = pareto_front(Problem(g, Machine(units=3, memory_cap=t + 22)), point_time_limit=10)
    assert not f.complete and not f.points
    assert f.stopped is not None
    assert "point_time_limit" not in f.stopped and "rounded" in f.stopped, f.stopped

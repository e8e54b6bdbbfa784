"""Tests for the ramp bound (opsched.analysis.ramp) and its place in lower_bounds.

The bound must never exceed an optimum: checked against the brute-force solver on random
tiny graphs (units, a named resource, fractional durations) and against the proven STG
optima. It must also be worth having: on hand-worked graphs and on STG 300 pairs it is
above every other bound, and equal to the optimum.
"""

from __future__ import annotations

import random

import pytest

from opsched.analysis import lower_bounds
from opsched.analysis.paths import b_level, earliest_starts
from opsched.analysis.ramp import energy_heads, nested_heads, ramp_bound
from opsched.analysis.topo import topo_indices
from opsched.datasets import dataset_path, stg_optima
from opsched.importers import read_stg
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.solver import solve_brute_force, solve_cpsat
from opsched.validate import validate


def _ramp(g: OpGraph, k: int, integral: bool = True) -> float:
    d = g.durations
    return ramp_bound(earliest_starts(g), b_level(g) - d, d, g.demand_array("units"), k, integral)


def _fork(width: int, d: float = 2.0) -> OpGraph:
    """One op, then ``width`` ops that read it."""
    ops = [Op("root", d)] + [Op(f"leaf{i}", d, deps=("root",)) for i in range(width)]
    return OpGraph(tuple(ops))


def test_fork_hand_worked() -> None:
    # 2 units: the root runs alone (one unit idles 2), then 4 leaves of 2 in two rounds: 6.
    # Work 10 -> 5, critical path 4; the serial bound (the root runs alone) says 6 too.
    g = _fork(4)
    lb = lower_bounds(g, units=2)
    assert (lb.critical_path, lb.work, lb.serial) == (4.0, 5.0, 6.0)
    assert lb.ramp == {"units": 6.0}
    assert solve_brute_force(Problem(g, Machine(units=2))).makespan == 6.0


def test_two_roots_hand_worked() -> None:
    # 3 units: two ops of 2, then five ops of 2 that read both. No op runs alone, so the
    # serial bound is the work bound, ceil(14 / 3) = 5, and the critical path is 4. But the
    # third unit idles for 2 at the start, and 3 x 5 - 14 = 1 < 2: the optimum is 6.
    roots = [Op("a", 2), Op("b", 2)]
    leaves = [Op(f"l{i}", 2, deps=("a", "b")) for i in range(5)]
    g = OpGraph(tuple(roots + leaves))
    lb = lower_bounds(g, units=3)
    assert (lb.critical_path, lb.work, lb.serial) == (4.0, 5.0, 5.0)
    assert lb.ramp == {"units": 6.0}
    assert (lb.value, lb.binding) == (6.0, "ramp:units")
    assert solve_brute_force(Problem(g, Machine(units=3))).makespan == 6.0


def test_join_is_the_mirror_image() -> None:
    # four ops, then one that reads them all: the idle unit is at the end now
    ops = [Op(f"a{i}", 2) for i in range(4)] + [Op("z", 2, deps=tuple(f"a{i}" for i in range(4)))]
    lb = lower_bounds(OpGraph(tuple(ops)), units=2)
    assert lb.ramp == {"units": 6.0}
    assert lb.work == 5.0


def test_both_ends_add_up() -> None:
    # a fork into a join on 3 units: root (3), five middle ops of 3, sink (3). Work 21 -> 7,
    # critical path 9. Each end idles 2 units for 3 = 6; the middle's 15 on 3 units takes 5
    # more, so the optimum is 3 + 6 + 3 = 12. The ramp: 3T - 21 >= 6 + 6 -> T >= 11.
    mid = [Op(f"m{i}", 3, deps=("root",)) for i in range(5)]
    ops = [Op("root", 3), *mid, Op("sink", 3, deps=tuple(o.name for o in mid))]
    g = OpGraph(tuple(ops))
    lb = lower_bounds(g, units=3)
    assert (lb.critical_path, lb.work) == (9.0, 7.0)
    assert lb.ramp == {"units": 11.0}
    assert solve_brute_force(Problem(g, Machine(units=3))).makespan == 12.0


def test_nothing_demanded_and_enough_units() -> None:
    g = _fork(3)
    # more units than ops at any time: the ramp says what the critical path says at most
    assert _ramp(g, 8) <= lower_bounds(g, units=8).critical_path
    # no op holds a unit: nothing to bound
    free = OpGraph(tuple(Op(o.name, o.duration, deps=o.deps, demands={"units": 0})
                         for o in g.ops))  # fmt: skip
    assert _ramp(free, 2) == 0.0
    # zero durations only
    assert _ramp(OpGraph((Op("a", 0), Op("b", 0, deps=("a",)))), 2) == 0.0


def test_fractional_durations() -> None:
    g = _fork(4, d=0.5)  # the fork scaled by 1/4: the optimum is 1.5
    v = _ramp(g, 2, integral=False)
    assert v <= 1.5
    assert v == pytest.approx(1.5, rel=1e-8)
    assert lower_bounds(g, units=2).ramp["units"] == pytest.approx(1.5, rel=1e-8)


def _random_tiny(rng: random.Random, fractional: bool) -> tuple[OpGraph, int, int]:
    n = rng.randint(2, 8)
    k = rng.choice([2, 2, 3])
    bw = rng.randint(2, 4)
    choices = [0.5, 1.0, 1.5, 2.5] if fractional else [1, 1, 2, 3, 4]
    ops = []
    for i in range(n):
        # few edges, mostly from the first ops: forks and joins, where ramps matter
        deps = tuple(f"o{j}" for j in range(i) if rng.random() < (0.5 if j < 2 else 0.15))
        demands = {"units": rng.choice([1, 1, 1, 2]), "bw": rng.randint(0, 2)}
        ops.append(Op(f"o{i}", rng.choice(choices), deps=deps, demands=demands))
    return OpGraph(tuple(ops), resources={"bw": bw}), k, bw


@pytest.mark.parametrize("fractional", [False, True])
def test_never_above_the_brute_force_optimum(fractional: bool) -> None:
    rng = random.Random(4242 + fractional)
    above_others = 0
    for _ in range(150):
        g, k, bw = _random_tiny(rng, fractional)
        p = Problem(g, Machine(units=k, resources={"bw": bw}))
        best = solve_brute_force(p)
        assert validate(p, best).valid
        lb = lower_bounds(g, units=k, capacities={"bw": bw})
        assert set(lb.ramp) == {"units", "bw"}
        for r, v in lb.ramp.items():
            assert v <= best.makespan + 1e-9, (r, v, best.makespan, g.to_dict())
        others = max(lb.critical_path, lb.work, lb.serial, *lb.energy.values())
        above_others += lb.value > others + 1e-9
    # the generator makes graphs where the ramp matters, so this test can fail
    assert above_others >= 10


@pytest.mark.parametrize(
    ("name", "k", "before", "ramp"),
    [
        ("rand0080", 8, 206, 207),
        ("rand0026", 8, 385, 399),
        ("rand0143", 4, 635, 639),
        ("rand0011", 4, 502, 522),
        ("rand0092", 8, 202, 204),
        # these three need the energy heads too
        ("rand0013", 2, 857, 860),
        ("rand0078", 4, 768, 783),
        ("rand0132", 4, 665, 685),
    ],
)
def test_stg300_pairs(name: str, k: int, before: int, ramp: int) -> None:
    # pairs CP-SAT left open before the ramp bound; the ramp equals the best schedule ever
    # found for them, so they are optimal. ``before``: the best of the other bounds
    g = read_stg(dataset_path(f"stg/300/{name}.stg"))
    lb = lower_bounds(g, units=k)
    assert max(lb.critical_path, lb.work, lb.serial) == before
    assert lb.ramp == {"units": ramp}
    assert _ramp(g, k) <= ramp  # with the plain heads: equal but for the last three
    # switched off (to measure what it is worth), the bound falls back to the others
    off = lower_bounds(g, units=k, ramp=False)
    assert off.ramp == {}
    assert off.value == before
    assert stg_optima(k, size=300)[name][1] >= ramp  # never above a schedule found


def test_cpsat_proves_with_it() -> None:
    # rand0143 on 4 processors: open at 638..639 for every CP-SAT run without the ramp bound
    # (up to 600 s); with it the bound is 639 and the first schedule of 639 is proven
    g = read_stg(dataset_path("stg/300/rand0143.stg"))
    p = Problem(g, Machine(units=4))
    r = solve_cpsat(p, time_limit=20, num_workers=2)
    assert validate(p, r).valid
    # the model's own bound, not only the reported one (which adds lower_bounds anyway)
    assert r.info["stages"][0]["objective_bound"] == 639
    assert r.status.value == "OPTIMAL"
    assert (r.lower_bound, r.makespan) == (639, 639)


def test_cpsat_proves_with_nested_tails() -> None:
    # rand0000 on 4 processors: open at 461..463 (ramp bound 461) in every run before the
    # nested heads, up to 60 s. The nested bound is 462, and with the nested tails in the
    # start domains the search proves 463 in a few seconds (without them: open at 60 s)
    g = read_stg(dataset_path("stg/300/rand0000.stg"))
    assert lower_bounds(g, units=4, nested=True).ramp == {"units": 462.0}
    p = Problem(g, Machine(units=4))
    r = solve_cpsat(p, time_limit=60, num_workers=2)
    assert validate(p, r).valid
    assert r.status.value == "OPTIMAL"
    assert r.info["stages"][0]["objective_bound"] == 463
    assert (r.lower_bound, r.makespan) == (463, 463)


def test_stg100_never_above_proven_optima() -> None:
    raised = 0
    for k in (4, 8):
        optima = stg_optima(k, size=100)
        for name, (_, hi) in sorted(optima.items())[:60]:
            g = read_stg(dataset_path(f"stg/100/{name}.stg"))
            lb = lower_bounds(g, units=k)
            assert lb.ramp["units"] <= hi, (name, k)
            raised += lb.ramp["units"] > max(lb.work, lb.critical_path)
    assert raised >= 3


def _energy_heads(g: OpGraph, k: int, bw: int | None = None, integral: bool = True):  # type: ignore[no-untyped-def]
    loads = [(g.demand_array("units"), k)] + ([(g.demand_array("bw"), bw)] if bw else [])
    order = topo_indices(g).tolist()
    return energy_heads(g.durations, g.pred_ptr, g.pred_idx, order, loads, integral)


def test_energy_heads_hand_worked() -> None:
    # the fork's leaves cannot start before the root ends (2); the join's last op not before
    # the work of the four before it over 2 units (4), though its longest path in is 2
    h, t = _energy_heads(_fork(4), 2)
    assert h.tolist() == [0, 2, 2, 2, 2]
    assert t.tolist() == [4, 0, 0, 0, 0]  # the root: the leaves' 8 over 2 units
    ops = [Op(f"a{i}", 2) for i in range(4)] + [Op("z", 2, deps=tuple(f"a{i}" for i in range(4)))]
    h, t = _energy_heads(OpGraph(tuple(ops)), 2)
    assert h.tolist() == [0, 0, 0, 0, 4]
    assert t.tolist() == [2, 2, 2, 2, 0]
    # without loads: the plain heads and tails (longest paths)
    plain = energy_heads(_fork(4).durations, _fork(4).pred_ptr, _fork(4).pred_idx,
                         range(5), [])  # fmt: skip
    assert plain[0].tolist() == [0, 2, 2, 2, 2] and plain[1].tolist() == [2, 0, 0, 0, 0]


def test_energy_heads_hold_in_optimal_schedules() -> None:
    # every op of a brute-force optimal schedule starts no earlier than its head and ends no
    # later than the makespan minus its tail (integer durations: integer starts)
    rng = random.Random(99)
    raised = 0
    for _ in range(150):
        g, k, bw = _random_tiny(rng, fractional=False)
        p = Problem(g, Machine(units=k, resources={"bw": bw}))
        best = solve_brute_force(p)
        h, t = _energy_heads(g, k, bw)
        plain_h = earliest_starts(g)
        start = {o.name: o.start for o in best.ops}
        for v, op in enumerate(g.ops):
            s = start[op.name]
            assert s >= h[v] - 1e-9, (op.name, s, h[v], g.to_dict())
            assert best.makespan - (s + op.duration) >= t[v] - 1e-9, (op.name, g.to_dict())
        raised += bool((h > plain_h).any())
    assert raised >= 10


# ---------------------------------------------------------------- nested heads


def _drain(rng: random.Random) -> tuple[OpGraph, int]:
    """A root, a middle layer that mostly reads it, a join, and free ops that could fill
    the idle units of the whole graph but not of the join's ancestors: where the nested
    heads matter. Half of them mirrored (the fork at the end), for the tails."""
    ops = [Op("r", rng.choice([2, 3, 4, 6]))]
    mids = []
    for i in range(rng.randint(2, 4)):
        ops.append(Op(f"m{i}", rng.choice([1, 2, 3, 4, 6]),
                      deps=("r",) if rng.random() < 0.85 else ()))  # fmt: skip
        mids.append(f"m{i}")
    ops += [Op(f"f{i}", rng.choice([1, 1, 2])) for i in range(rng.randint(0, 2))]
    ops.append(Op("z", rng.choice([1, 2]),
                  deps=tuple(m for m in mids if rng.random() < 0.9) or (mids[0],)))  # fmt: skip
    g = OpGraph(tuple(ops))
    if rng.random() < 0.5:
        readers = {o.name: [c.name for c in g.ops if o.name in c.deps] for o in g.ops}
        g = OpGraph(tuple(Op(o.name, o.duration, deps=tuple(readers[o.name])) for o in g.ops))
    return g, rng.choice([2, 2, 3])


def _seven() -> OpGraph:
    # op 0 (6), then four ops reading it (4, 6, 4, 1), then a join (2); one free op (1)
    ops = [Op("a", 6)] + [Op(f"b{i}", x, deps=("a",)) for i, x in enumerate([4, 6, 4, 1])]
    return OpGraph((*ops, Op("free", 1), Op("z", 2, deps=("b0", "b1", "b2", "b3"))))


def test_nested_hand_worked() -> None:
    # 2 units, work 24: the ramp of the whole graph is 15, as the free op could fill the
    # unit left idle while `a` runs. But the join's ancestors alone idle a unit for 6, so
    # they end at 6 + (21 - 6) / 2 = 13.5 at the earliest, 14 in integers: 14 + 2 = 16
    g = _seven()
    assert lower_bounds(g, units=2).ramp == {"units": 15.0}
    lb = lower_bounds(g, units=2, nested=True)
    assert (lb.ramp, lb.value, lb.binding) == ({"units": 16.0}, 16.0, "ramp:units")
    assert solve_brute_force(Problem(g, Machine(units=2))).makespan == 16.0
    # no ramp, no nesting
    assert lower_bounds(g, units=2, nested=True, ramp=False).ramp == {}


def test_nested_only_up_to_its_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # above NESTED_HEADS_MAX_OPS the energy heads are used as they are
    import opsched.analysis.bounds as bounds

    monkeypatch.setattr(bounds, "NESTED_HEADS_MAX_OPS", 6)
    assert lower_bounds(_seven(), units=2, nested=True).ramp == {"units": 15.0}
    monkeypatch.setattr(bounds, "NESTED_HEADS_MAX_OPS", 7)
    assert lower_bounds(_seven(), units=2, nested=True).ramp == {"units": 16.0}


def test_nested_never_above_the_brute_force_optimum() -> None:
    rng = random.Random(515)
    raised = 0
    for _ in range(150):
        g, k = _drain(rng)
        p = Problem(g, Machine(units=k))
        best = solve_brute_force(p)
        plain, nested = lower_bounds(g, units=k), lower_bounds(g, units=k, nested=True)
        assert nested.value <= best.makespan + 1e-9, (k, g.to_dict())
        assert nested.value >= plain.value
        raised += nested.value > plain.value
    assert raised >= 5  # the generator makes graphs where it matters


@pytest.mark.parametrize("fractional", [False, True])
def test_nested_heads_hold_in_optimal_schedules(fractional: bool) -> None:
    # every op of a brute-force optimal schedule lies between its nested head and tail, on
    # the units and a named resource; the bound on both never exceeds the optimum
    rng = random.Random(8 + fractional)
    raised = 0
    for i in range(200):
        if i % 2:
            g, k, bw = _random_tiny(rng, fractional)
        else:
            g, k = _drain(rng)
            bw = 2
        p = Problem(g, Machine(units=k, resources={"bw": bw}))
        best = solve_brute_force(p)
        d = g.durations
        integral = bool((d == d.round()).all())
        loads = [(g.demand_array("units"), k), (g.demand_array("bw"), bw)]
        order = topo_indices(g).tolist()
        h, t = energy_heads(d, g.pred_ptr, g.pred_idx, order, loads, integral)
        preds = [[g.index(x) for x in op.deps] for op in g.ops]
        h2 = nested_heads(d, preds, order, loads, h, integral)
        t2 = nested_heads(d, g.consumers(), order[::-1], loads, t, integral)
        assert (h2 >= h).all() and (t2 >= t).all()
        start = {o.name: o.start for o in best.ops}
        for v, op in enumerate(g.ops):
            assert start[op.name] >= h2[v] - 1e-9, (op.name, g.to_dict())
            assert best.makespan - (start[op.name] + op.duration) >= t2[v] - 1e-9
        lb = lower_bounds(g, units=k, capacities={"bw": bw}, nested=True)
        assert lb.value <= best.makespan + 1e-9
        raised += bool((h2 > h).any() or (t2 > t).any())
    assert raised >= 10


@pytest.mark.parametrize(
    ("size", "name", "k", "energy", "nested"),
    [
        # STG 300 pairs CP-SAT had left open with the energy heads: the nested bound equals
        # the best schedule ever found, so they are optimal
        (300, "rand0004", 4, 455, 459),
        (300, "rand0018", 4, 955, 956),
        (300, "rand0024", 4, 423, 424),
        (300, "rand0122", 4, 699, 708),
        (300, "rand0133", 4, 630, 632),
        # and at published (STG 50) or proven optima of the smaller sets
        (50, "rand0064", 2, 139, 142),
        (100, "rand0088", 2, 525, 530),
    ],
)
def test_nested_stg_pairs(size: int, name: str, k: int, energy: int, nested: int) -> None:
    g = read_stg(dataset_path(f"stg/{size}/{name}.stg"))
    assert lower_bounds(g, units=k).ramp == {"units": energy}
    assert lower_bounds(g, units=k, nested=True).ramp == {"units": nested}
    assert stg_optima(k, size=size)[name][1] == nested  # the best schedule known

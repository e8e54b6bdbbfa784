"""Pipeline scheduling: hand-worked cases, brute force on tiny instances, validation, CLI."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.errors import ProblemError
from opsched.ir import Op, OpGraph
from opsched.ir.jsonio import write_graph_json
from opsched.pipeline import (
    balanced_partition,
    bottleneck,
    check_stages,
    pipeline_cpsat,
    pipeline_heuristic,
    stage_capacities,
    unroll,
)
from opsched.problem import Machine, Problem
from opsched.validate import execute_orders, validate
from opsched.zoo import layered


def chain() -> OpGraph:
    # a(2) -> b(1) -> c(2)
    return OpGraph((Op("a", 2), Op("b", 1, deps=("a",)), Op("c", 2, deps=("b",))))


def brute_force(graph: OpGraph, stages: int, microbatches: int) -> float:
    """Least makespan over every monotone stage assignment and every per-stage op order.

    One unit per stage: a disjunctive problem, whose optimum is the earliest-start execution
    of some order of the ops on each stage (semi-active schedules), so enumerating orders is
    exact. Independent of the CP-SAT model: plain enumeration + ``execute_orders``.
    """
    best = float("inf")
    n = graph.num_ops
    for assign in itertools.product(range(stages), repeat=n):
        if any(
            assign[graph.index(d)] > assign[v] for v, op in enumerate(graph.ops) for d in op.deps
        ):
            continue
        up = unroll(graph, assign, microbatches, [1] * stages)
        groups = [[o.name for o in up.graph.ops if o.attrs["stage"] == s] for s in range(stages)]
        for orders in itertools.product(*(itertools.permutations(gr) for gr in groups)):
            try:
                s = execute_orders(up, [list(o) for o in orders])
            except Exception:  # deadlocking orders
                continue
            best = min(best, s.makespan or 0.0)
    return best


def test_unroll_names_deps_and_stage_resources() -> None:
    p = unroll(chain(), [0, 1, 1], 2, [1, 2])
    assert p.graph.names == ["a@0", "b@0", "c@0", "a@1", "b@1", "c@1"]
    assert p.graph["c@1"].deps == ("b@1",)
    assert p.machine.units == 3 and p.machine.resources == {"stage0": 1, "stage1": 2}
    assert p.graph["a@1"].demands == {"units": 1, "stage0": 1}


def test_unroll_rejects_backward_stage() -> None:
    with pytest.raises(ProblemError, match="op 'b'"):
        unroll(chain(), [1, 0, 1], 2, [1, 1])


def test_stage_capacities() -> None:
    assert stage_capacities(7, 3) == [3, 2, 2]
    with pytest.raises(ProblemError):
        stage_capacities(1, 2)


def test_balanced_partition_is_exact_on_small_chains() -> None:
    rng = np.random.default_rng(3)
    for _ in range(30):
        n = int(rng.integers(2, 8))
        d = rng.integers(1, 10, n)
        g = OpGraph(
            tuple(Op(f"o{i}", float(d[i]), deps=(f"o{i - 1}",) if i else ()) for i in range(n))
        )
        for s in (2, 3):
            got = bottleneck(g, balanced_partition(g, s), [1] * s)
            # every way to cut a chain into s contiguous (possibly empty) pieces
            best = min(
                max(d[a:b].sum() for a, b in zip((0, *cuts), (*cuts, n), strict=True))
                for cuts in itertools.combinations_with_replacement(range(n + 1), s - 1)
            )
            assert got == best


def test_balanced_partition_keeps_multi_unit_ops_on_stages_that_hold_them() -> None:
    # chains with ops of 1 or 2 units on stages of [2, 1] (or [2, 1, 1]) units: the least
    # bottleneck over every cut whose stages hold each of their ops' demands
    rng = np.random.default_rng(5)
    for _ in range(30):
        n = int(rng.integers(2, 7))
        d = rng.integers(1, 10, n)
        u = rng.integers(1, 3, n)
        g = OpGraph(tuple(Op(f"o{i}", float(d[i]), deps=(f"o{i - 1}",) if i else (),
                             demands={"units": int(u[i])}) for i in range(n)))  # fmt: skip
        for caps in ([2, 1], [2, 1, 1]):
            got = balanced_partition(g, len(caps), caps)
            assert all(u[i] <= caps[s] for i, s in enumerate(got))
            best = np.inf
            for cuts in itertools.combinations_with_replacement(range(n + 1), len(caps) - 1):
                pieces = list(zip((0, *cuts), (*cuts, n), strict=True))
                staged = list(zip(pieces, caps, strict=True))
                if all((u[a:b] <= c).all() for (a, b), c in staged):
                    best = min(best, max((d[a:b] * u[a:b]).sum() / c for (a, b), c in staged))
            assert bottleneck(g, got, caps) == best


def test_heuristic_finds_the_stage_a_two_unit_op_fits(tmp_path) -> None:
    # a (10, one unit) -> c (1, two units) on 3 units in 2 stages ([2, 1]): the least
    # bottleneck alone puts c on the one-unit stage, where it cannot run, and the command
    # had said that no schedule exists. Both on the two-unit stage: a@0, a@1 over [0, 10),
    # then c@0 and c@1 one after the other: 12, which CP-SAT proves least.
    g = OpGraph((Op("a", 10), Op("c", 1, deps=("a",), demands={"units": 2})))
    r = pipeline_heuristic(Problem(g, Machine(units=3)), 2, 2)
    assert r.assignment == [0, 0] and r.schedule.makespan == 12
    assert validate(r.problem, r.schedule).valid and not check_stages(r.problem, r.schedule)
    exact = pipeline_cpsat(Problem(g, Machine(units=3)), 2, 2, time_limit=10)
    assert exact.schedule.status.value == "OPTIMAL" and exact.schedule.makespan == 12
    path = tmp_path / "g.json"
    write_graph_json(g, path)
    out = CliRunner().invoke(main, ["pipeline", str(path), "-s", "2", "-m", "2", "-k", "3"])
    assert out.exit_code == 0 and "makespan 12" in out.output


def test_hand_worked_chain_two_stages() -> None:
    # Stage loads 3 | 2 (or 2 | 3): two micro-batches need at least 2 * 3 + 2 = 8.
    p = Problem(chain(), Machine(units=2))
    r = pipeline_cpsat(p, 2, 2, formulation="unrolled", time_limit=10)
    assert r.schedule.status.value == "OPTIMAL" and r.metrics.makespan == 8.0
    assert brute_force(chain(), 2, 2) == 8.0
    m = pipeline_cpsat(p, 2, 4, formulation="modulo", time_limit=10)
    # period 3 (= ceil(5 / 2)), latency 5: 3 * 3 + 5
    assert m.info["ii"] == 3.0 and m.metrics.latency == 5.0 and m.metrics.makespan == 14.0
    assert m.metrics.interval == 3.0


@pytest.mark.parametrize("units", [{}, {"units": 1}])
def test_modulo_period_is_zero_when_no_op_holds_a_unit_for_any_time(units) -> None:
    # zero-duration ops on units, or ops of 2 and 3 that hold no unit: every micro-batch can
    # run at once, so the least period is 0 and the makespan the critical path; the search
    # had started at one tick, claimed it least and ended micro-batch m at m ticks later
    d = 0 if units else 2
    g = OpGraph((Op("a", d, demands=units), Op("b", 1.5 * d, deps=("a",), demands=units)))
    p = Problem(g, Machine(units=2))
    m = pipeline_cpsat(p, 2, 3, formulation="modulo", time_limit=10)
    assert m.info["ii"] == 0 and m.info["ii_proven_least"]
    assert m.metrics.makespan == m.info["latency"] == 2.5 * d
    assert validate(m.problem, m.schedule).valid and not check_stages(m.problem, m.schedule)
    u = pipeline_cpsat(p, 2, 3, formulation="unrolled", time_limit=10)
    assert u.schedule.status.value == "OPTIMAL" and u.metrics.makespan == 2.5 * d


def test_modulo_with_durations_that_do_not_scale_to_integers() -> None:
    # thirds: a million ticks of work, so the period spans ~10^5 ticks; stepping one tick a
    # solve had used the whole limit and fallen back to the heuristic
    from dataclasses import replace

    g = chain()
    thirds = g.replace_ops([replace(op, duration=op.duration / 3) for op in g.ops])
    r = pipeline_cpsat(Problem(thirds, Machine(units=2)), 2, 4, formulation="modulo",
                       time_limit=10)  # fmt: skip
    assert r.method == "cpsat-modulo" and r.info["periods_tried"] < 60
    assert 1.0 <= r.info["ii"] <= 1.0 + 1e-4  # the integer chain's period 3, over 3
    assert not r.info["ii_proven_least"]  # the ticks are not exact
    assert validate(r.problem, r.schedule).valid


def test_latency_ignores_where_a_zero_duration_input_sits() -> None:
    # The list scheduler puts every micro-batch's placeholder "in" at 0; micro-batch 2's
    # work runs 2..4, so its latency is 2 (it read 4), as the modulo formulation says.
    g = OpGraph((Op("in", 0), Op("a", 1, deps=("in",)), Op("b", 1, deps=("a",))))
    p = Problem(g, Machine(units=2))
    h = pipeline_heuristic(p, stages=2, microbatches=3)
    assert h.schedule.starts()["in@2"] == 0.0 and h.metrics.makespan == 4.0
    assert h.metrics.latency == 2.0 and h.metrics.mean_latency == 2.0
    for f in ("unrolled", "modulo"):
        r = pipeline_cpsat(p, 2, 3, formulation=f, time_limit=10)
        assert (r.metrics.makespan, r.metrics.latency) == (4.0, 2.0), f


@pytest.mark.parametrize("seed", range(6))
def test_cpsat_unrolled_matches_brute_force(seed: int) -> None:
    g = layered(3, layers=2, max_duration=5, seed=seed)
    for stages, mb in ((2, 2), (2, 1), (3, 2)):
        r = pipeline_cpsat(
            Problem(g, Machine(units=stages)), stages, mb, formulation="unrolled", time_limit=20
        )
        assert r.schedule.status.value == "OPTIMAL"
        assert r.metrics.makespan == brute_force(g, stages, mb), (seed, stages, mb)
        assert validate(r.problem, r.schedule).valid
        assert not check_stages(r.problem, r.schedule)


@pytest.mark.parametrize("seed", range(4))
def test_every_method_gives_valid_staged_schedules(seed: int) -> None:
    g = layered(6, seed=seed)
    p = Problem(g, Machine(units=3))
    h = pipeline_heuristic(p, 2, 3)
    # 0.3-1.3 s on an idle 2-core machine; the limit leaves room for a loaded one (5 s had
    # ended FEASIBLE once in CI, under other jobs' load), a proof returns at once
    u = pipeline_cpsat(p, 2, 3, formulation="unrolled", time_limit=30)
    mo = pipeline_cpsat(p, 2, 3, formulation="modulo", time_limit=30)
    for r in (h, u, mo):
        assert validate(r.problem, r.schedule).valid
        assert not check_stages(r.problem, r.schedule)
        if r.schedule.lower_bound is not None:
            assert r.metrics.makespan >= r.schedule.lower_bound - 1e-9
    assert u.schedule.status.value == "OPTIMAL"
    assert u.metrics.makespan <= min(h.metrics.makespan, mo.metrics.makespan) + 1e-9
    # the modulo schedule's completions are exactly one period apart
    assert mo.metrics.max_gap == pytest.approx(mo.info["ii"])


def test_heuristic_under_memory_cap_stays_under_it() -> None:
    g = layered(12, seed=1)
    free = pipeline_heuristic(Problem(g, Machine(units=2)), 2, 3)
    cap = int(free.schedule.peak_memory * 0.8)
    r = pipeline_heuristic(Problem(g, Machine(units=2, memory_cap=cap)), 2, 3)
    if r.schedule.has_schedule:
        assert r.schedule.peak_memory <= cap
        assert validate(r.problem, r.schedule).valid
    else:
        assert "reason" in r.schedule.info


def test_cpsat_rejects_memory_cap() -> None:
    with pytest.raises(ProblemError, match="memory cap"):
        pipeline_cpsat(Problem(chain(), Machine(units=2, memory_cap=10)), 2, 2)


def test_cli_pipeline_writes_a_schedule_the_validator_accepts(tmp_path) -> None:
    out, gout = tmp_path / "s.json", tmp_path / "g.json"
    r = CliRunner().invoke(
        main,
        [
            "pipeline",
            "datasets/stg/50/rand0000.stg",
            "--stages",
            "3",
            "--microbatches",
            "4",
            "-k",
            "6",
            "-o",
            str(out),
            "--graph-out",
            str(gout),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["valid"] and len(doc["assignment"]) == 52
    v = CliRunner().invoke(main, ["validate", str(gout), str(out)])
    assert v.exit_code == 0, v.output


def test_cli_validate_refuses_an_op_on_another_stages_unit(tmp_path) -> None:
    # chain a(2) -> b(1) -> c(2) on stages [a] [b, c] of one unit each, 2 micro-batches:
    # unit 0 runs a@0 [0, 2), a@1 [2, 4); unit 1 runs b@0, c@0, b@1 and c@1 [6, 8). Moving
    # c@1 to unit 0 (stage 0's device, idle from 4) breaks no capacity, as stage1 still has
    # one op at a time, but runs a stage-1 op on stage 0's device: the validator must say so.
    g, s = tmp_path / "g.json", tmp_path / "s.json"
    write_graph_json(chain(), tmp_path / "chain.json")
    r = CliRunner().invoke(main, ["pipeline", str(tmp_path / "chain.json"), "-s", "2", "-m",
                                  "2", "-o", str(s), "--graph-out", str(g)])  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(s.read_text())
    units = {o["name"]: o["unit"] for o in doc["ops"]}
    assert units == {"a@0": 0, "a@1": 0, "b@0": 1, "c@0": 1, "b@1": 1, "c@1": 1}
    assert CliRunner().invoke(main, ["validate", str(g), str(s)]).exit_code == 0
    for o in doc["ops"]:
        if o["name"] == "c@1":
            assert (o["start"], o["end"]) == (6, 8)
            o["unit"] = 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    v = CliRunner().invoke(main, ["validate", str(g), str(bad)])
    assert v.exit_code == 1, v.output
    assert "[stage] c@1 (stage 1) on unit 0" in v.output
    # a graph that records a pipeline without the stage of every op is bad input, one line
    gdoc = json.loads(g.read_text())
    del gdoc["ops"][0]["attrs"]["stage"]
    g.write_text(json.dumps(gdoc))
    v = CliRunner().invoke(main, ["validate", str(g), str(s)])
    assert v.exit_code == 2 and "attrs.stage must be a stage in 0..1" in v.output
    assert "Traceback" not in v.output and len(v.output.strip().splitlines()) <= 2


def test_cli_pipeline_bad_input_exits_2(tmp_path) -> None:
    r = CliRunner().invoke(
        main,
        [
            "pipeline",
            "datasets/stg/50/rand0000.stg",
            "--stages",
            "3",
            "--microbatches",
            "2",
            "-k",
            "2",
            "-o",
            str(tmp_path / "x"),
        ],
    )
    assert r.exit_code == 2 and "cannot hold 3 stages" in r.output
    assert not (tmp_path / "x").exists()


def test_cli_pipeline_refuses_an_unrolled_graph_past_the_memory_allowed(tmp_path, monkeypatch):
    # 52 ops and 119 edges per micro-batch: 52 x 2,000 + 119 x 150 = 121,850 B each, so an
    # allowance of 20 micro-batches takes 20 and refuses 21 (on the real machine, 16 GiB,
    # 900,000 micro-batches, 46.8 million ops, had been taken: about 100 GiB)
    import opsched._clikit as kit

    monkeypatch.setattr(kit, "GENERATE_MEMORY_BYTES", 20 * 121_850)
    out = tmp_path / "s.json"
    args = ["pipeline", "datasets/stg/50/rand0000.stg", "-s", "2", "-o", str(out), "-m"]
    r = CliRunner().invoke(main, [*args, "21"])
    assert r.exit_code == 2 and "1,092 ops" in r.output and "GiB of memory" in r.output
    assert "Traceback" not in r.output and not out.exists()
    r = CliRunner().invoke(main, [*args, "20"])
    assert r.exit_code == 0 and out.exists(), r.output


@pytest.mark.parametrize("formulation", ["unrolled", "modulo"])
def test_cpsat_progress_lines(formulation: str) -> None:
    # each improving unrolled schedule, or each period the modulo search settles
    lines: list[str] = []
    res = pipeline_cpsat(Problem(chain(), Machine(units=2)), 2, 3, formulation=formulation,
                         time_limit=5, progress=lines.append)  # fmt: skip
    assert lines
    if formulation == "unrolled":
        assert all(line.startswith("makespan ") for line in lines)
        assert lines[-1].startswith(f"makespan {res.schedule.makespan:g} (bound ")
    else:
        assert lines[-1] == (f"period {res.schedule.info['ii']:g}: feasible, "
                             f"latency {res.schedule.info['latency']:g}")  # fmt: skip
        # the search's verdicts, then the latency minimised at the period chosen
        assert all(line.endswith((": infeasible", ": feasible")) for line in lines[:-1])
    r = CliRunner().invoke(main, ["pipeline", "datasets/stg/50/rand0000.stg", "--stages", "2",
                                  "--microbatches", "2", "--solver", "cpsat", "--time-limit",
                                  "3", "--formulation", formulation])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert r.stderr.count("] ") >= 1 and "valid: makespan" in r.stdout


def test_cli_pipeline_never_hands_out_an_invalid_schedule(tmp_path, monkeypatch) -> None:
    # a schedule its own check refuses is a solver bug: exit 3 and no file written (it had
    # printed the violation, written the schedule and exited 0)
    import opsched.pipeline

    monkeypatch.setattr(opsched.pipeline, "check_stages", lambda p, s: ["op x@0 on unit 9"])
    out = tmp_path / "s.json"
    r = CliRunner().invoke(main, ["pipeline", "datasets/stg/50/rand0000.stg", "--stages", "2",
                                  "--microbatches", "2", "-k", "4", "-o", str(out)])  # fmt: skip
    assert r.exit_code == 3, r.output
    assert "produced an invalid schedule: op x@0 on unit 9" in r.output and not out.exists()

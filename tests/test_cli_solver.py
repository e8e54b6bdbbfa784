"""The exact-solver commands of the CLI: ``opsched solve`` with CP-SAT and the brute force,
``opsched pareto`` and ``opsched solvers`` (in-process, with click's CliRunner)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from opsched.cli import main
from opsched.datasets import dataset_path
from opsched.demo import branches_graph
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.solver import solve_brute_force

STG = dataset_path("stg/50/rand0000.stg")
STG300 = dataset_path("stg/300/rand0000.stg")
SM = dataset_path("psplib/j30/j301_1.sm")


def invoke(*args: object) -> Result:
    return CliRunner().invoke(
        main, [str(a) for a in args], prog_name="opsched", catch_exceptions=False
    )


def invoke_json(*args: object) -> Any:
    r = invoke(*args, "--json")
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    return json.loads(r.stdout)


@pytest.fixture
def branches(tmp_path: Path) -> Path:
    """a1 -> a2 and b1 -> b2 feeding c, unit durations; a1, b1 write 10 B, a2, b2 1 B.

    On 2 units: least makespan 3 (a1, b1 together, then a2, b2, then c) with 22 B live at
    t=1; least peak 12 B (one branch after the other) at makespan 5; at makespan 4, 21 B.
    """
    g = branches_graph()
    path = tmp_path / "branches.json"
    path.write_text(json.dumps(g.to_dict()))
    return path


# ----------------------------------------------------------------------------- solve


def test_solve_cpsat_stg_json() -> None:
    doc = invoke_json("solve", STG, "--solver", "cpsat", "-k", "4")
    # published optimum of rand0000 on 4 processors: 66 = ceil(work 262 / 4)
    assert doc["status"] == "OPTIMAL"
    assert doc["makespan"] == 66
    assert doc["lower_bound"] == 66
    assert (doc["solver"], doc["graph"]) == ("cpsat", "rand0000")
    assert doc["machine"] == {"units": 4, "resources": {}, "memory_cap": None}
    assert len(doc["ops"]) == 52
    assert max(o["end"] for o in doc["ops"]) == 66
    assert {o["unit"] for o in doc["ops"]} <= {0, 1, 2, 3}
    assert doc["info"]["objective"] == "makespan"
    assert doc["info"]["scaling"]["time_scale"] == 1
    assert doc["info"]["stages"][0]["cpsat_status"] == "OPTIMAL"


def test_solve_text_output() -> None:
    r = invoke("solve", STG, "-k", "4")  # cpsat is the default solver
    assert r.exit_code == 0, r.output
    first = r.stdout.splitlines()[0]
    assert first.startswith("cpsat on rand0000: OPTIMAL, makespan 66, lower bound 66, ")
    assert "unit 3 |" in r.stdout  # the Gantt chart, one row per unit
    # each improving schedule on stderr, the last one the optimum with its matching bound
    lines = [line.split("] ", 1)[1] for line in r.stderr.splitlines()]
    assert lines and lines[-1] == "makespan 66 (bound 66)"  # work / 4 = 65.5 from the start
    assert all(line.startswith("makespan ") for line in lines)
    assert invoke("solve", STG, "-k", "4", "--quiet").stderr == ""


def test_solve_progress_both_stages(branches: Path) -> None:
    # least peak first (12 B), then the least makespan at that peak (5)
    r = invoke("solve", branches, "-k", "2", "--objective", "lex-memory")
    assert r.exit_code == 0, r.output
    lines = [line.split("] ", 1)[1] for line in r.stderr.splitlines()]
    peaks = [line for line in lines if line.startswith("peak memory ")]
    assert peaks[-1] == "peak memory 12 (bound 12)"  # the one-unit search proved 12 first
    # the bound when the last schedule was found; the proof may come after it
    assert lines[-1].startswith("makespan 5 (bound ") and float(lines[-1][18:-1]) <= 5
    assert lines.index(peaks[-1]) < len(lines) - 1  # the peak stage came first


def test_objectives(branches: Path) -> None:
    fast = invoke_json("solve", branches, "-k", "2")
    assert (fast["status"], fast["makespan"]) == ("OPTIMAL", 3)
    lean = invoke_json("solve", branches, "-k", "2", "--objective", "peak-memory")
    assert (lean["status"], lean["peak_memory"]) == ("OPTIMAL", 12)
    assert lean["info"]["objective"] == "peak_memory"
    assert lean["info"]["peak_lower_bound"] == 12
    lex = invoke_json("solve", branches, "-k", "2", "--objective", "lex")
    assert (lex["makespan"], lex["peak_memory"]) == (3, 22)
    assert lex["info"]["objective"] == "makespan_then_memory"
    lexm = invoke_json("solve", branches, "-k", "2", "--objective", "lex-memory")
    assert (lexm["makespan"], lexm["peak_memory"]) == (5, 12)
    assert lexm["info"]["objective"] == "memory_then_makespan"
    limited = invoke_json(
        "solve", branches, "-k", "2", "--objective", "peak-memory", "--makespan-limit", "4"
    )
    assert limited["peak_memory"] == 21 and limited["makespan"] <= 4
    # under a 15 B cap one branch must finish first: the least makespan becomes 5
    capped = invoke_json("solve", branches, "-k", "2", "--memory-cap", "15")
    assert (capped["status"], capped["makespan"]) == ("OPTIMAL", 5)
    assert capped["peak_memory"] <= 15
    assert capped["machine"]["memory_cap"] == 15


def test_unknown_objective_is_rejected(branches: Path) -> None:
    r = invoke("solve", branches, "--objective", "fastest")
    assert r.exit_code == 2
    assert "Invalid value for '--objective'" in r.stderr


def test_impossible_cap_is_a_one_line_error(branches: Path, tmp_path: Path) -> None:
    # a2 runs with its 10 B input and its 1 B output: 11 B in every schedule
    out = tmp_path / "s.json"
    for solver in ("cpsat", "greedy"):
        for extra in ((), ("--json",)):
            r = invoke("solve", branches, "-s", solver, "-k", "2", "--memory-cap", "10",
                       "-o", out, *extra)  # fmt: skip
            assert r.exit_code == 2 and r.stdout == ""
            assert r.stderr == (
                f"opsched: error: {branches}: memory cap 10B (10 B) is below the 11B (11 B) "
                "that op 'a2' (inputs 10 + output 1 + workspace 0 + persistent 0) needs at once\n"
            )
            assert not out.exists()
    r = invoke("pareto", branches, "-k", "2", "--memory-cap", "10")
    assert r.exit_code == 2 and "is below the 11B" in r.stderr


def _held() -> OpGraph:
    """Two graph outputs held to the end: whichever runs last does so beside the other's
    output and with its own workspace (21 B), where the bounds see the 20 B held at the end."""
    return OpGraph((
        Op("a", 1, output_bytes=10, workspace_bytes=1, output=True),
        Op("b", 1, output_bytes=10, workspace_bytes=3, output=True),
    ), name="held")  # fmt: skip


def _refused(tmp_path: Path, g: OpGraph, cap: int) -> tuple[Path, str]:
    """``opsched solve`` of ``g`` on 2 units at ``cap``, which must be refused: exit 2, no
    output file, one line on stderr. Returns the graph's path and that line."""
    path = tmp_path / f"{g.name or 'graph'}.json"
    path.write_text(json.dumps(g.to_dict()))
    out = tmp_path / "s.json"
    r = invoke("solve", path, "-k", "2", "--memory-cap", str(cap), "-o", out)
    assert r.exit_code == 2 and not out.exists() and r.stderr.count("\n") == 1, r.stderr
    return path, r.stderr


def test_cap_refuted_beyond_the_bounds_is_an_error(tmp_path: Path) -> None:
    # whichever output runs last needs the other's 10 B beside its own 11-13 B: the cap's
    # orders force each before the other (the started test), where the bounds see 20 B
    path, err = _refused(tmp_path, _held(), 20)
    assert err.startswith(
        f"opsched: error: {path}: no schedule exists: ops 'b' and 'a' cannot run in either "
        "order within the memory cap"
    )
    ok = invoke_json("solve", path, "-k", "2", "--memory-cap", "21")
    assert (ok["status"], ok["makespan"], ok["peak_memory"]) == ("OPTIMAL", 2, 21)


def test_cap_refuted_by_the_one_unit_check_is_an_error(tmp_path: Path) -> None:
    # layered(20, seed=4) at 75 MiB: above the bounds, six orders and no conflict among
    # them, but no one-unit order fits (so no schedule does)
    from opsched.zoo import layered

    path, err = _refused(tmp_path, layered(20, seed=4), 78643200)
    assert err.startswith(
        f"opsched: error: {path}: no schedule exists: no one-unit order stays within 75.0MiB "
        "(78643200 B) (exhaustive search, "
    )


def test_cap_refuted_by_forced_orders_is_an_error(tmp_path: Path) -> None:
    # c and d each need 22 B while the other is unfinished; the memory bound sees 17 B
    from tests.analysis.test_cap_orders import neither

    path, err = _refused(tmp_path, neither(), 17)
    assert err == (
        f"opsched: error: {path}: no schedule exists: ops 'c' and 'd' cannot run in either "
        "order within the memory cap (each would run while the other's tensors are live)\n"
    )
    ok = invoke_json("solve", path, "-k", "2", "--memory-cap", "22")
    assert (ok["status"], ok["makespan"], ok["peak_memory"]) == ("OPTIMAL", 4, 22)


def test_heuristic_without_a_schedule_says_whether_one_exists(tmp_path: Path) -> None:
    from opsched.zoo import layered

    # held outputs at 20 B: greedy finds nothing, and nothing exists
    path = tmp_path / "held.json"
    path.write_text(json.dumps(_held().to_dict()))
    out = tmp_path / "s.json"
    r = invoke("solve", path, "--solver", "greedy", "-k", "2", "--memory-cap", "20", "-o", out)
    assert r.exit_code == 2 and not out.exists() and r.stderr.count("\n") == 1
    assert "no schedule exists: no one-unit order stays within 20B (20 B)" in r.stderr
    # a layered graph at 80 MB: both greedy orders break the cap, a one-unit order fits
    path = tmp_path / "layered.json"
    path.write_text(json.dumps(layered(30, seed=1).to_dict()))
    out = tmp_path / "none.json"
    r = invoke("solve", path, "--solver", "greedy", "-k", "2", "--memory-cap", "80000000",
               "-o", out, "--json")  # fmt: skip
    assert r.exit_code == 1 and not out.exists()  # ran, found none: no schedule file
    doc = json.loads(r.stdout)
    assert doc["status"] == "UNKNOWN" and not doc["ops"]
    assert "a schedule within the cap exists" in doc["info"]["reason"]
    assert "try --solver memory-list or cpsat" in doc["info"]["reason"]
    doc = invoke_json("solve", path, "--solver", "memory-list", "-k", "2",
                      "--memory-cap", "80000000")  # fmt: skip
    assert doc["status"] == "FEASIBLE" and doc["peak_memory"] <= 80_000_000


def test_analyze_lists_the_orders_a_cap_forces(tmp_path: Path) -> None:
    from opsched.zoo import layered
    from tests.analysis.test_cap_orders import neither
    from tests.analysis.test_memory_cut import branches

    path = tmp_path / "branches.json"
    path.write_text(json.dumps(branches().to_dict()))
    r = invoke("analyze", path, "--memory-cap", "22")
    assert r.exit_code == 0
    assert r.stdout.splitlines()[-3:] == [
        "orders a memory cap of 22B forces: 2: c -> w, z -> w",
        "critical path with them: 5",  # a, c, z, then w, f (4 without the orders)
        "a schedule fits: one op at a time, an order peaks at 22B (22 B)",
    ]
    # on two units: of the 6 ticks of work at most 1 runs two ops at once, so 5, the
    # optimum (the brute force), where the plain lower bound says 4 (the critical path with
    # the cap's orders says 5 as well)
    r = invoke("analyze", path, "--memory-cap", "22", "-k", "2")
    assert r.exit_code == 0 and r.stdout.splitlines()[-1] == (
        "makespan on 2 units within the cap: at least 5 (work 6, at most 1 of it two ops at "
        "once; 0 pairs can never run together)"
    )
    doc = invoke_json("analyze", path, "--memory-cap", "22", "-k", "2")
    assert doc["cap_orders"]["overlap"]["bound"] == 5 and doc["lower_bound"]["value"] == 4
    best = solve_brute_force(Problem(branches(), Machine(units=2, memory_cap=22)), "makespan")
    assert best.makespan == 5
    assert "overlap" not in invoke_json("analyze", path, "--memory-cap", "22")["cap_orders"]
    assert doc["cap_orders"]["cases"]["bound"] == 5  # no tensors to split on here
    r = invoke("analyze", path)  # no cap: the bound and the least peak, both 22 B here
    assert "least peak of any schedule: 22B (22 B), proven: one op at a time" in r.stdout
    doc = invoke_json("analyze", path)
    assert (doc["least_peak"]["bytes"], doc["least_peak"]["proven"]) == (22, True)
    doc = invoke_json("analyze", path, "--memory-cap", "32")
    assert doc["cap_orders"]["orders"] == [] and doc["cap_orders"]["critical_path"] == 4
    assert doc["cap_orders"]["one_unit"]["fits"] is True
    assert doc["cap_orders"]["one_unit"]["peak"] <= 32
    # at 31 c cannot run once w has started (a's 10 B and w's 20 B still live): c first
    doc = invoke_json("analyze", path, "--memory-cap", "31")
    assert doc["cap_orders"]["orders"] == [["c", "w"]] and doc["cap_orders"]["started"] == 1
    # impossible caps: below the memory bound, and two ops in neither order
    r = invoke("analyze", path, "--memory-cap", "21")
    assert r.exit_code == 2 and "is below the 22B" in r.stderr and r.stderr.count("\n") == 1
    path2 = tmp_path / "neither.json"
    path2.write_text(json.dumps(neither().to_dict()))
    r = invoke("analyze", path2, "--memory-cap", "17")
    assert r.exit_code == 2 and "ops 'c' and 'd' cannot run in either order" in r.stderr
    # two graph outputs: the bounds accept 20 B; whichever runs last cannot run once the
    # other has started, so the orders force both ways
    path3 = tmp_path / "held.json"
    path3.write_text(json.dumps(_held().to_dict()))
    r = invoke("analyze", path3, "--memory-cap", "20")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert "no schedule exists: ops 'b' and 'a' cannot run in either order" in r.stderr
    # layered(20, seed=4) at 75 MiB: the orders leave it open, no one-unit order fits
    path4 = tmp_path / "layered.json"
    path4.write_text(json.dumps(layered(20, seed=4).to_dict()))
    r = invoke("analyze", path4, "--memory-cap", "78643200")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert "no schedule exists: no one-unit order stays within 75.0MiB (78643200 B)" in r.stderr
    r = invoke("analyze", path2, "--memory-cap", "lots")
    assert r.exit_code == 2 and r.stderr.startswith("opsched: error: --memory-cap: ")


def test_time_limit() -> None:
    # STG rand0000 with 300 tasks on 4 units is not proven in 2 s: the call stops by then
    doc = invoke_json("solve", STG300, "-k", "4", "--time-limit", "2")
    assert doc["status"] in ("FEASIBLE", "OPTIMAL")
    assert doc["wall_time_s"] < 3.0
    assert all(st["solve_time_s"] < 2.5 for st in doc["info"]["stages"])
    assert doc["lower_bound"] <= doc["makespan"]
    assert len(doc["ops"]) == 302
    assert doc["makespan"] == max(o["end"] for o in doc["ops"])


def test_solve_output_then_validate(tmp_path: Path) -> None:
    sched = tmp_path / "s.json"
    r = invoke("solve", STG, "-k", "4", "-o", sched)
    assert r.exit_code == 0, r.output
    doc = json.loads(sched.read_text())
    assert doc["format"] == "opsched-schedule/1"
    assert (doc["status"], doc["makespan"], doc["solver"]) == ("OPTIMAL", 66, "cpsat")
    ok = invoke("validate", STG, sched)
    assert ok.exit_code == 0, ok.output
    assert ok.stdout.strip() == "valid: makespan 66, peak memory 0 B"
    # on 3 units the same schedule overloads the machine (66 is the optimum on 4 only)
    bad = invoke("validate", STG, sched, "--units", "3")
    assert bad.exit_code == 1
    assert "[capacity]" in bad.stdout or "[unit]" in bad.stdout


def test_solve_psplib_uses_the_file_resources(tmp_path: Path) -> None:
    sched = tmp_path / "j.json"
    doc = invoke_json("solve", SM, "-o", sched)
    # the published optimum of j301_1 under the capacities R1..R4 of the file
    assert (doc["status"], doc["makespan"], doc["lower_bound"]) == ("OPTIMAL", 43, 43)
    assert doc["graph"] == "j301_1" and len(doc["ops"]) == 32
    assert all(o["unit"] is None for o in doc["ops"])  # PSPLIB jobs hold no compute units
    assert invoke("validate", SM, sched).exit_code == 0
    # with capacities that never bind only precedence is left: the critical path, 38
    loose = invoke_json("solve", SM, "--resources", "R1=100,R2=100,R3=100,R4=100")
    assert (loose["status"], loose["makespan"]) == ("OPTIMAL", 38)


def test_brute_force_solver(branches: Path) -> None:
    fast = invoke_json("solve", branches, "-s", "brute-force", "-k", "2")
    assert (fast["solver"], fast["status"], fast["makespan"], fast["peak_memory"]) == (
        "brute-force",
        "OPTIMAL",
        3,
        22,
    )
    lean = invoke_json(
        "solve", branches, "-s", "brute-force", "-k", "2", "--objective", "lex-memory"
    )
    assert (lean["makespan"], lean["peak_memory"]) == (5, 12)


def test_brute_force_on_a_large_graph_is_bad_input(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    r = invoke("solve", STG, "-s", "brute-force", "-k", "2", "-o", out)
    assert not out.exists()
    assert r.stderr.count("\n") == 1
    assert "at most 10 ops; this one has 52" in r.stderr
    assert r.exit_code == 2
    assert "internal error" not in r.stderr


def test_unknown_solver(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    r = invoke("solve", STG, "--solver", "simplex", "-o", out)
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr == (
        "opsched: error: unknown solver 'simplex'; known: cpsat, brute-force, downsets, "
        + ", ".join(HEURISTICS)
        + "\n"
    )
    assert not out.exists()


# ----------------------------------------------------------------------------- pareto


def test_pareto_csv(branches: Path, tmp_path: Path) -> None:
    front = tmp_path / "front.csv"
    r = invoke("pareto", branches, "-k", "2", "-o", front)
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("Pareto front of two-branches (complete, ")
    assert r.stdout.rstrip().endswith(": (3, 22), (4, 21), (5, 12)")
    assert front.read_text() == (
        "makespan,peak_memory,proven\n3.0,22,True\n4.0,21,True\n5.0,12,True\n"
    )
    # each point on stderr as it is found
    lines = [line.split("] ", 1)[1] for line in r.stderr.splitlines()]
    assert lines == [
        f"makespan {m}, peak memory {p} (proven)" for m, p in ((3, 22), (4, 21), (5, 12))
    ]
    assert invoke("pareto", branches, "-k", "2", "--quiet").stderr == ""
    doc = invoke_json("pareto", branches, "-k", "2")
    assert doc["complete"] is True
    assert [(p["makespan"], p["peak_memory"]) for p in doc["points"]] == [(3, 22), (4, 21), (5, 12)]


def test_pareto_stg_without_memory(tmp_path: Path) -> None:
    # STG graphs carry no sizes: the front is the single optimum, rand0000 on 2 units: 131
    front = tmp_path / "front.csv"
    r = invoke("pareto", STG, "-k", "2", "-o", front)
    assert r.exit_code == 0, r.output
    assert front.read_text() == "makespan,peak_memory,proven\n131.0,0,True\n"


def test_pareto_with_memory_cap(branches: Path) -> None:
    doc = invoke_json("pareto", branches, "-k", "2", "--memory-cap", "21")
    assert [(p["makespan"], p["peak_memory"]) for p in doc["points"]] == [(4, 21), (5, 12)]


# ----------------------------------------------------------------------------- solvers


HEURISTICS = [
    "serial", "greedy", "greedy-blevel", "list", "heft", "list-cpop", "list-tlevel",
    "list-lpt", "list-successors", "list-random", "list-memory", "portfolio",
    "inductor-memory", "xla-memory", "min-memory", "memory-beam", "memory-list", "lns",
]  # fmt: skip


def test_solvers_json_lists_exact_flags() -> None:
    listed = invoke_json("solvers")
    expected = {"cpsat": True, "brute-force": True, "downsets": True} | {
        h: False for h in HEURISTICS
    }
    assert {name: s["exact"] for name, s in listed.items()} == expected
    assert listed["cpsat"]["description"].startswith("OR-Tools CP-SAT")
    assert "10 ops" in listed["brute-force"]["description"]
    text = invoke("solvers").stdout.splitlines()
    assert [line.split()[:2] for line in text] == [
        ["cpsat", "exact"], ["brute-force", "exact"], ["downsets", "exact"],
        *[[h, "heuristic"] for h in HEURISTICS]
    ]  # fmt: skip


@pytest.mark.parametrize(
    "args",
    [
        ("solve", STG, "--time-limit", "nan"),
        ("solve", STG, "--time-limit", "inf"),
        ("solve", STG, "--objective", "peak-memory", "--makespan-limit", "nan"),
        ("solve", STG, "--objective", "peak-memory", "--makespan-limit", "inf"),
        ("pareto", STG, "-k", "2", "--time-limit", "nan"),
        ("pareto", STG, "-k", "2", "--point-time-limit", "inf"),
    ],
)
def test_non_finite_numbers_refused(args: tuple) -> None:
    # click's FloatRange passes nan and inf: a nan time limit never ran out (pareto) and a
    # nan / inf makespan limit ended in an internal error
    r = invoke(*args)
    assert r.exit_code == 2
    assert f"'{args[-1]}' is not a finite number" in r.stderr


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"time_limit": float("nan")}, "time_limit must be a positive, finite number"),
        ({"time_limit": 0}, "time_limit must be a positive, finite number"),
        ({"time_limit": "5"}, "time_limit must be a number of seconds, got '5'"),
        ({"makespan_limit": float("inf"), "objective": "peak_memory"}, "makespan_limit must be"),
    ],
)
def test_solver_api_refuses_bad_limits(kwargs: dict, message: str) -> None:
    from opsched.demo import seed_problem
    from opsched.errors import ProblemError
    from opsched.solver import pareto_front, solve_cpsat

    with pytest.raises(ProblemError, match=message):
        solve_cpsat(seed_problem(units=2), **kwargs)
    if "time_limit" in kwargs:
        with pytest.raises(ProblemError, match=message.replace("time_limit", "point_time_limit")):
            pareto_front(seed_problem(units=2), point_time_limit=kwargs["time_limit"])


def test_validate_refuses_recorded_capacities_above_the_graphs_own(tmp_path: Path) -> None:
    # a schedule file that recorded R1..R4 = 10^6 had every job of j301_1 at its earliest
    # start (makespan 38, the optimum being 43) judged valid against the recorded machine
    sched = tmp_path / "j.json"
    assert invoke("solve", SM, "--resources", "R1=1000000,R2=1000000,R3=1000000,R4=1000000",
                  "-o", sched).exit_code == 0  # fmt: skip
    r = invoke("validate", SM, sched)
    assert r.exit_code == 2
    assert "records R1 = 1000000, above the graph's own capacity" in r.output
    assert "Traceback" not in r.output
    # said on purpose, the larger machine is checked, and named
    ok = invoke("validate", SM, sched, "--resources", "R1=1000000,R2=1000000,R3=1000000,R4=1000000")
    assert ok.exit_code == 0, ok.output
    assert ok.stdout.startswith("valid: makespan 38")
    assert "checked on: unlimited units, R1 1000000" in ok.stderr
    # without the override the file's schedule breaks the file's capacities
    doc = json.loads(sched.read_text())
    del doc["machine"]
    sched.write_text(json.dumps(doc))
    bad = invoke("validate", SM, sched)
    assert bad.exit_code == 1 and "[capacity]" in bad.stdout


def test_validate_refuses_a_boolean_unit_count(tmp_path: Path) -> None:
    sched = tmp_path / "s.json"
    assert invoke("solve", STG, "-k", "4", "-o", sched).exit_code == 0
    doc = json.loads(sched.read_text())
    doc["machine"]["units"] = True
    sched.write_text(json.dumps(doc))
    r = invoke("validate", STG, sched)
    assert r.exit_code == 2 and "machine.units must be a positive integer" in r.output
    assert str(sched) in r.output


def test_analyze_splits_on_tensors_the_cap_keeps_apart(tmp_path: Path) -> None:
    """Two ReLU -> convolution chains read one large tensor; within 15 bytes one chain ends
    before the other starts: 11 on two units (the optimum), where the pair bound says 7."""
    from tests.analysis.test_tensor_cases import _chains

    path = tmp_path / "chains.json"
    path.write_text(json.dumps(_chains().to_dict()))
    r = invoke("analyze", path, "--memory-cap", "15", "-k", "2")
    assert r.exit_code == 0
    assert r.stdout.splitlines()[-1] == (
        "split on the tensors the cap keeps apart (ra / rb): at least 11"
    )
    doc = invoke_json("analyze", path, "--memory-cap", "15", "-k", "2")
    assert doc["cap_orders"]["overlap"]["bound"] == 7
    assert doc["cap_orders"]["cases"]["bound"] == 11
    assert doc["cap_orders"]["cases"]["exclusive"] == [["ra", "rb"]]


def test_analyze_refutes_a_cap_every_case_empties(tmp_path: Path) -> None:
    """The fan of test_tensor_cases at 13 bytes, with 12 free chains beside it so that the
    one-unit search gives up first: the case split refutes the cap (exit 2, one line)."""
    from opsched.ir import Op, OpGraph

    ops = [
        Op("x", 1, output_bytes=4), Op("r0", 1, deps=("x",), output_bytes=6),
        Op("c0", 2, deps=("r0",), output_bytes=2, workspace_bytes=1),
        Op("r1", 2, deps=("x",), output_bytes=6), Op("c1", 3, deps=("r1",), output_bytes=2),
        Op("r2", 2, deps=("x",), output_bytes=2),
        Op("out", 0, deps=("c0", "c1", "r2"), output=True),
    ]  # fmt: skip
    for i in range(12):
        ops += [Op(f"p{i}", 1, output_bytes=1), Op(f"q{i}", 1, deps=(f"p{i}",))]
    path = tmp_path / "fan.json"
    path.write_text(json.dumps(OpGraph(tuple(ops)).to_dict()))
    r = invoke("analyze", path, "--memory-cap", "13", "-k", "2")
    assert r.exit_code == 2 and r.stdout == ""
    assert "no schedule exists: the outputs of these pairs of ops are never live" in r.stderr
    assert "'r0' / 'r1'" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_pareto_with_no_point_found_exits_1_and_writes_no_file(tmp_path: Path) -> None:
    """Sizes near 2**40 are rounded to quanta, and the rounded model has no schedule under
    this cap (nor has the problem: brute force refutes it). CP-SAT cannot prove that, so
    solve exits 1 with no file; pareto had exited 0 with a front of no points and written a
    CSV of its header alone."""
    big = 1099511627789
    g = OpGraph(
        (
            Op("v0", 2, output_bytes=14, workspace_bytes=1099511627778, output=True),
            Op("v1", 3, output=True),
            Op("v2", 0, deps=("v1",), output_bytes=big, output=True, demands={"units": 2}),
            Op("v3", 0, deps=("v2",), output_bytes=big),
            Op("v4", 2, deps=("v3",), output_bytes=6, output=True),
        ),
        persistent_bytes=3,
    )
    path = tmp_path / "g.json"
    path.write_text(json.dumps(g.to_dict()))
    cap = ("-k", 3, "--memory-cap", 1099511627800)
    out = tmp_path / "front.csv"
    r = invoke("pareto", path, *cap, "-o", out)
    assert r.exit_code == 1, r.output
    assert not out.exists() and f"no point: {out} not written" in r.stderr
    r = invoke("pareto", path, *cap, "--json")
    assert r.exit_code == 1 and json.loads(r.stdout)["points"] == []
    sched = tmp_path / "s.json"
    r = invoke("solve", path, *cap, "-o", sched)
    assert r.exit_code == 1 and not sched.exists()
    r = invoke("solve", path, *cap, "--solver", "brute-force")
    assert r.exit_code == 2 and "breaks the memory cap" in r.stderr

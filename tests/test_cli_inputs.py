"""Command-line refusals that name their input, and outputs written all or none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from opsched.cli import main
from opsched.datasets import dataset_path
from opsched.demo import branches_graph
from opsched.ir import Op, OpGraph

TRACE = dataset_path("traces/resnet50_v100_step.pt.trace.json.gz")


def invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], prog_name="opsched")


def _refused(r: Result, *phrases: str) -> str:
    """The one-line error of a refused command (exit 2, no traceback), which says ``phrases``."""
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    for p in phrases:
        assert p in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def branches(tmp_path: Path) -> Path:
    path = tmp_path / "branches.json"
    path.write_text(json.dumps(branches_graph().to_dict()))
    return path


@pytest.mark.parametrize(
    ("spec", "phrase"),
    [("units=3", "'units' capacity is set with --units"), ("R=1,R=2", "'R' is given twice"),
     ("R=1", "has no resource 'R' (it names none)")],
)  # fmt: skip
def test_resources_option_refuses_what_would_cap_nothing(branches, spec, phrase):
    for cmd in (("solve", branches), ("pareto", branches)):
        _refused(invoke(*cmd, "--units", 2, "--resources", spec), "--resources", phrase)


def test_resources_option_names_the_graph_resources(tmp_path):
    g = OpGraph([Op("a", 1.0, demands={"gpu": 1}), Op("b", 1.0, deps=("a",), demands={"gpu": 1})])
    path = tmp_path / "g.json"
    path.write_text(json.dumps(g.to_dict()))
    r = invoke("solve", path, "--resources", "GPU=1")
    _refused(r, "no resource 'GPU' (its resources: gpu)")
    r = invoke("solve", path, "--resources", "gpu=1", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["makespan"] == 2  # one gpu: serial
    # no op takes a compute unit (as in PSPLIB): --units would change nothing
    r = invoke("solve", path, "--units", 2, "--resources", "gpu=1")
    _refused(r, str(path), "--units 2: no op demands a compute unit")
    # the reason given fits the file: PSPLIB's was given for JSON graphs too
    _refused(r, '"demands" leave out "units"')
    assert "PSPLIB" not in r.stderr
    j30 = dataset_path("psplib/j30/j301_1.sm")
    _refused(invoke("solve", j30, "--units", 2), "a PSPLIB instance runs on its resources alone")
    # no capacity for a demanded resource: the file is named
    _refused(invoke("solve", path, "--units", 2), str(path), "op 'a'", "'gpu'")


def test_a_solver_refusing_the_problem_names_the_file(branches):
    _refused(invoke("solve", branches, "--units", 2, "--solver", "downsets"),
             str(branches), "needs a memory cap")  # fmt: skip


def test_lns_says_when_it_returns_the_portfolio_schedule(branches):
    r = invoke("solve", branches, "--units", 2, "--solver", "lns", "--memory-cap", "22",
               "--time-limit", 1)  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "opsched: warning: lns not applicable (a memory cap)" in r.stderr
    assert "portfolio" in r.stdout
    quiet = invoke("solve", branches, "--units", 2, "--solver", "lns", "--time-limit", 0.5)
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr


@pytest.mark.parametrize("option", ["--rows", "--schedule"])
def test_import_trace_writes_nothing_when_a_later_output_cannot_be_written(tmp_path, option):
    graph = tmp_path / "g.json"
    bad = tmp_path / "missing" / ("x.csv" if option == "--rows" else "x.json")
    _refused(invoke("import-trace", TRACE, "-o", graph, option, bad), "no such folder")
    assert not graph.exists()
    ok = invoke("import-trace", TRACE, "-o", graph, option, tmp_path / bad.name)
    assert ok.exit_code == 0, ok.output
    assert graph.exists() and (tmp_path / bad.name).exists()


@pytest.mark.skipif(not Path("/dev/full").is_char_device(), reason="needs /dev/full")
@pytest.mark.parametrize(
    ("args", "first", "second"),
    [
        (("import-trace", TRACE), "-o", "--rows"),
        (("import-trace", TRACE), "-o", "--schedule"),
        (("generate", "planted", "--ops", 20), "-o", "--schedule"),
    ],
)  # fmt: skip  (each command writes the first of the two before the second)
def test_an_output_failing_as_it_is_written_leaves_the_earlier_ones_unwritten(
    tmp_path: Path, args: tuple[object, ...], first: str, second: str
) -> None:
    # the second output is a link to /dev/full: it passes every check made before writing and
    # fails only as it is written, after the first output was written in full
    old = tmp_path / "old.json"
    old.write_text("kept")
    suffix = ".csv" if second == "--rows" else ".json"
    full = tmp_path / f"full{suffix}"
    full.symlink_to("/dev/full")
    _refused(invoke(*args, first, old, second, full), "cannot write", str(full))
    assert old.read_text() == "kept"  # not replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == [full.name, "old.json"]  # no temporary
    ok = invoke(*args, first, old, second, tmp_path / f"second{suffix}")
    assert ok.exit_code == 0, ok.output
    assert old.read_text() != "kept" and (tmp_path / f"second{suffix}").stat().st_size > 0


def _layered(tmp_path: Path, n: int = 12) -> Path:
    from opsched.zoo import layered

    path = tmp_path / "layered.json"
    path.write_text(json.dumps(layered(n, seed=0).to_dict()))
    return path


def test_a_unit_count_above_the_ops_demand_is_that_demand(tmp_path):
    # -k 1000000000 on 12 ops sized CP-SAT's and list scheduling's state by it (5 GB, hung)
    g = _layered(tmp_path)
    for solver in ("cpsat", "list", "heft"):
        r = invoke("solve", g, "-k", 10**9, "-s", solver, "--time-limit", 2, "--json", "-q")
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        assert doc["machine"]["units"] == 12 and doc["makespan"] == 23  # the critical path
    r = invoke("solve", g, "-k", 10**20, "-s", "list", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["machine"]["units"] == 12


def test_durations_too_long_for_cpsat_are_refused_in_one_line(tmp_path):
    doc = json.loads(_layered(tmp_path).read_text())
    doc["ops"][1]["duration"] = 2**51
    path = tmp_path / "long.json"
    path.write_text(json.dumps(doc))
    _refused(invoke("solve", path, "-k", 2, "--time-limit", 1), "over the", "(2**50)")
    # past 2^53 in all, no graph is made: its times would not be exact
    doc["ops"][1]["duration"] = 2**53
    path.write_text(json.dumps(doc))
    _refused(invoke("solve", path, "-k", 2, "-s", "list"), "durations total", "2^53 or more")


@pytest.mark.parametrize(
    ("args", "phrase"),
    [(("-s", "list", "--makespan-limit", 5), "--makespan-limit applies to --solver cpsat"),
     (("-s", "greedy", "--objective", "peak-memory"), "greedy is a heuristic"),
     (("--link-latency", 3), "apply with --devices only"),
     (("--link-bandwidth", 100), "apply with --devices only")],
)  # fmt: skip
def test_options_a_solver_would_ignore_are_refused(tmp_path, args, phrase):
    _refused(invoke("solve", _layered(tmp_path), "-k", 2, *args), phrase)


def test_cpsat_under_rounded_durations_is_never_longer_than_list_scheduling(tmp_path):
    from opsched.cost import apply
    from opsched.zoo import build_model

    g = apply(build_model("squeezenet1_1"), "A100-SXM4-80GB", "float16")
    path = tmp_path / "sq.json"
    path.write_text(json.dumps(g.to_dict()))
    cp = json.loads(invoke("solve", path, "-k", 4, "--time-limit", 3, "--json").stdout)
    ls = json.loads(invoke("solve", path, "-k", 4, "-s", "list", "--json").stdout)
    assert cp["info"]["scaling"]["time_exact"] is False  # kernel times: no exact tick
    assert cp["makespan"] <= ls["makespan"] + 1e-9 and cp["status"] == "FEASIBLE"


def test_pipeline_says_when_it_is_not_periodic_and_refuses_empty_stages(tmp_path):
    g = _layered(tmp_path)
    args = ("pipeline", g, "-s", 3, "-m", 4, "--solver", "cpsat", "--time-limit", 2, "-q")
    r, j = invoke(*args), invoke(*args, "--json")
    assert r.exit_code == 0 and j.exit_code == 0, r.output
    m = json.loads(j.stdout)["metrics"]
    bunched = m["interval"] < m["bottleneck"]  # CP-SAT's optimum ends the inputs together
    assert bunched and m["makespan"] >= 3 * m["bottleneck"]
    assert ("below the bottleneck" in r.stdout.splitlines()[0]) is bunched
    _refused(invoke("pipeline", g, "-s", 20, "-m", 2), "more stages than the graph's 12 ops")
    none = invoke("pipeline", g, "-s", 2, "-m", 2, "--memory-cap", "40MiB")
    assert none.exit_code == 1 and "no schedule" in none.stdout


def test_a_bad_psplib_duration_is_named_a_duration(tmp_path):
    lines = dataset_path("psplib/j30/j301_1.sm").read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("REQUESTS")) + 7
    fields = lines[at].split()
    fields[2] = "-4"
    lines[at] = "  ".join(fields)
    path = tmp_path / "bad.sm"
    path.write_text("\n".join(lines) + "\n")
    _refused(invoke("analyze", path), f"line {at + 1}: duration must be >= 0, got -4")


def test_analyze_without_units_shows_only_the_bounds_that_apply(tmp_path):
    r = invoke("analyze", _layered(tmp_path))
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("lower bound"))
    assert line == "lower bound on unlimited units: 23 (binding: critical_path; critical path 23)"


@pytest.mark.parametrize(
    ("args", "phrase"),
    [(("network", "-n", 20, "--max-duration", 3), "--max-duration does not apply"),
     (("layered", "-n", 20, "--avg-deps", 3), "--avg-deps is for the gnp and planted"),
     (("seed", "--memory"), "--memory does not apply to the seed generator")],
)  # fmt: skip
def test_generate_refuses_options_its_generator_does_not_use(tmp_path, args, phrase):
    out = tmp_path / "g.json"
    _refused(invoke("generate", *args, "-o", out), phrase)
    assert not out.exists()


def test_cost_evaluate_without_a_scorable_row_is_an_error(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("gpu,M,N,K,time_us,transA\nTesla T4,64,64,64,,N\nTesla T4,64,x,64,5,N\n")
    _refused(invoke("cost", "evaluate", table), "no row could be scored: 2 rows")


def test_an_output_never_replaces_an_input_or_another_output(
    tmp_path: Path, branches: Path
) -> None:
    before = branches.read_bytes()
    _refused(invoke("solve", branches, "-o", branches), "would overwrite an input")
    _refused(invoke("fuse", branches, "-o", branches), "would overwrite an input")
    assert branches.read_bytes() == before
    s = tmp_path / "s.json"
    _refused(invoke("import-trace", TRACE, "-o", s, "--schedule", s), "given for two outputs")
    assert not s.exists()
    p = tmp_path / "p.json"
    _refused(invoke("generate", "planted", "-n", 5, "--schedule", p, "-o", p), "two outputs")
    # an output beside a missing folder leaves the other output unwritten too
    g = tmp_path / "g.json"
    _refused(invoke("generate", "planted", "-n", 5, "--schedule", tmp_path / "no" / "s.json",
                    "-o", g), "no such folder")  # fmt: skip
    assert not g.exists()


def test_a_results_store_is_not_overwritten_by_its_own_export(tmp_path: Path) -> None:
    toml = tmp_path / "q.toml"
    toml.write_text('[experiment]\nname = "q"\n[[graphs]]\ngenerate = "layered"\nops = 6\n'
                    '[machines]\nunits = [2]\n[schedulers]\nnames = ["greedy"]\n')  # fmt: skip
    db = tmp_path / "db.sqlite"
    assert invoke("bench", toml, "--db", db, "-q").exit_code == 0
    _refused(invoke("results", db, "-o", db), "would overwrite an input")
    _refused(invoke("report", db, "-o", db), "would overwrite an input")
    assert db.read_bytes()[:15] == b"SQLite format 3"
    assert invoke("results", db, "-o", tmp_path / "r.csv").exit_code == 0


def test_links_are_written_through_and_pipes_written_into(tmp_path: Path, branches: Path) -> None:
    import os

    target = tmp_path / "target.json"
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert invoke("solve", branches, "-o", link).exit_code == 0
    assert link.is_symlink() and json.loads(target.read_text())["graph"] == "two-branches"
    assert invoke("solve", branches, "-o", os.devnull).exit_code == 0
    assert Path(os.devnull).is_char_device()  # /dev/null was not replaced by a file


def test_option_errors_are_one_line(branches: Path) -> None:
    _refused(invoke("solve", branches, "-k", 0), "--units", "(see 'opsched solve --help')")
    _refused(invoke("solve", branches, "--objective", "foo"), "--objective")
    _refused(invoke("solve", branches, "--nope"), "No such option '--nope'")
    _refused(invoke("solvx"), "No such command 'solvx'")
    _refused(invoke("cost", "predict"), "Missing option '--input'")
    assert invoke("--version").exit_code == 0
    assert invoke("solve", "--help").output.startswith("Usage: opsched solve")


def test_a_graph_without_ops_has_an_empty_optimal_schedule(tmp_path: Path) -> None:
    g = tmp_path / "e.json"
    g.write_text('{"format": "opsched-graph/1", "name": "e", "ops": []}')
    out = tmp_path / "s.json"
    r = invoke("solve", g, "-o", out)
    assert r.exit_code == 0, r.output
    assert "OPTIMAL, makespan 0" in r.output and json.loads(out.read_text())["ops"] == []
    assert invoke("validate", g, out).exit_code == 0


def test_pipeline_refuses_a_cap_no_micro_batch_meets(branches: Path) -> None:
    _refused(invoke("pipeline", branches, "-s", 2, "-m", 2, "--memory-cap", 0),
             "no schedule exists", "memory cap 0B")  # fmt: skip


def test_a_file_that_is_no_archive_is_refused_without_torch_noise(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    junk = tmp_path / "j.pt2"
    junk.write_text("junk")
    _refused(invoke("convert", junk, tmp_path / "o.json"), "not a torch.export archive")


def test_sizes_past_any_machine_are_refused_not_run(tmp_path: Path, branches: Path) -> None:
    _refused(invoke("generate", "layered", "-n", 99999999999999, "-o", tmp_path / "x.json"),
             "--ops")  # fmt: skip
    _refused(invoke("pipeline", branches, "-s", 2, "-m", 99999999999), "--microbatches")
    _refused(invoke("solve", branches, "--resources", "R1=99999999999999999999999"),
             "--resources: capacity of 'R1' must be in [0, 2^62]")  # fmt: skip
    _refused(invoke("simulate", branches, branches, "--noise", 50), "--noise")


def test_a_store_in_a_missing_folder_is_named_as_such(tmp_path: Path) -> None:
    toml = tmp_path / "q.toml"
    toml.write_text('[experiment]\nname = "q"\n[[graphs]]\ngenerate = "layered"\nops = 6\n'
                    '[machines]\nunits = [2]\n[schedulers]\nnames = ["greedy"]\n')  # fmt: skip
    _refused(invoke("bench", toml, "--db", tmp_path / "no" / "db.sqlite"), "no such folder")
    _refused(invoke("bench", toml, "--db", tmp_path), "is a directory")


def test_cost_apply_names_the_option_or_the_file_at_fault(tmp_path: Path, branches: Path) -> None:
    out = tmp_path / "a.json"
    _refused(invoke("cost", "apply", branches, "--gpu", "NoGPU", "-o", out), "--gpu: unknown GPU")
    _refused(invoke("cost", "apply", branches, "--gpu", "H200", "--dtype", "foo", "-o", out),
             "--dtype: unknown dtype 'foo'")  # fmt: skip
    _refused(invoke("cost", "apply", branches, "--gpu", "H200", "--tick", 0, "-o", out), "--tick")
    kinds = tmp_path / "k.json"
    kinds.write_text('{"ops": [{"name": "op0", "duration": 1, "kind": "layer"}]}')
    _refused(invoke("cost", "apply", kinds, "--gpu", "H200", "-o", out),
             "k.json: op 'op0': unknown op kind 'layer'")  # fmt: skip
    assert not out.exists()


def test_an_empty_scheduler_list_names_its_section(tmp_path: Path) -> None:
    toml = tmp_path / "q.toml"
    toml.write_text('[experiment]\nname = "q"\n[[graphs]]\ngenerate = "layered"\nops = 6\n'
                    '[machines]\nunits = [2]\n[schedulers]\nnames = []\n')  # fmt: skip
    _refused(invoke("bench", toml, "--db", tmp_path / "db.sqlite"), "schedulers.names")


def test_out_of_range_options_are_refused_before_any_work(tmp_path):
    g = _layered(tmp_path)
    _refused(invoke("solve", g, "-k", 2, "--workers", 20000), "--workers", "1<=x<=1024")
    _refused(invoke("solve", g, "-k", 2, "--workers", 10**20), "--workers")
    _refused(invoke("solve", g, "--devices", f"gpu:{10**20},cpu:1", "-s", "heft"),
             "count must be at most 4,096")  # fmt: skip
    _refused(invoke("solve", g, "--devices", "gpu:1,cpu:1", "-s", "heft", "--link-latency",
                    1e17), "a transfer over the links takes up to 1e+17")  # fmt: skip
    # a size past 2^53 is read exactly, past 2^62 refused
    _refused(invoke("solve", g, "-k", 2, "-s", "greedy", "--memory-cap", 2**62 + 1),
             "too large (max 2^62 bytes)")  # fmt: skip
    # the output is checked before the search (pareto) or the fit (cost fit)
    _refused(invoke("pareto", g, "-k", 2, "-o", tmp_path / "no" / "f.csv"), "no such folder")
    (tmp_path / "afile").write_text("x")
    _refused(invoke("cost", "fit", "-q", "-o", tmp_path / "afile" / "sub"), "is a file")
    _refused(invoke("demo", "page", "-o", tmp_path / "d.html", "--seed-units", 10**20),
             "--seed-units")  # fmt: skip


def test_a_makespan_limit_past_all_the_work_binds_nothing(tmp_path):
    g = _layered(tmp_path)
    free = json.loads(invoke("solve", g, "-k", 2, "--json", "--time-limit", 5).stdout)
    r = invoke("solve", g, "-k", 2, "--json", "--time-limit", 5, "--makespan-limit", 1e300)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["makespan"] == free["makespan"]
    r = invoke("solve", g, "-k", 2, "--json", "--time-limit", 5, "--objective", "peak-memory",
               "--makespan-limit", 1e300)  # fmt: skip
    assert r.exit_code == 0 and json.loads(r.stdout)["status"] == "OPTIMAL", r.output


def test_a_grouped_convolution_whose_groups_do_not_divide_its_channels(tmp_path):
    attrs = {"N": 8, "C": 64, "H": 56, "W": 56, "K": 64, "R": 3, "S": 3, "groups": 7,
             "pad_h": 1, "pad_w": 1, "dtype": "float32"}  # fmt: skip
    doc = {"ops": [{"name": "c", "duration": 1, "kind": "conv2d", "attrs": attrs}]}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "o.json"
    _refused(invoke("cost", "apply", path, "--gpu", "A100-SXM4-80GB", "-o", out),
             "op 'c'", "groups = 7 does not divide C = 64")  # fmt: skip
    assert not out.exists()


def test_cost_predict_leaves_a_row_no_kernel_can_have_empty_and_names_it(tmp_path):
    head = "gpu,dtype,N,C,H,W,K,R,S,pad_h,pad_w,stride_h,stride_w,fwd_time_us\n"
    good = "NVIDIA T4,fp32,8,64,56,56,64,3,3,1,1,1,1,100\n"
    path = tmp_path / "conv.csv"
    path.write_text(head + good + good.replace(",1,1,100", ",0,1,100"))
    out = tmp_path / "out.csv"
    r = invoke("cost", "predict", "-i", path, "-o", out)
    assert r.exit_code == 0, r.output
    assert "1 rows with a shape no kernel can have (data row 2: conv2d stride" in r.output
    import pandas as pd

    pred = pd.read_csv(out)["predicted_time_us"]
    assert pred[0] > 0 and pd.isna(pred[1])  # the good row is still priced


def test_cost_predict_prices_elementwise_names_and_names_ops_without_a_rule(tmp_path):
    # a NeuSight-schema table with ops NeuSight's train split does not have: the elementwise
    # ones the profiler rules know are priced (softplus: one operand; maximum: two; subu: a
    # sub with a scalar); an op of no rule is priced as the profiler's aten op of that name
    # (here the catch-all) and named; without sizes or bytes it has no readable shape
    head = "gpu,op,dtype,shape,B,Cin,H_dim,measured_time_us\n"
    rows = [
        f"Tesla T4,{op},float32,x=[127 168],127,,168,30\n"
        for op in ("relu", "softplus", "maximum", "subu", "frobnicate", "frobnicate")
    ]
    path = tmp_path / "ns.csv"
    odd = [
        "Tesla T4,relu,float32,x=?,,,168,30\n",  # no rows count: unreadable
        "Tesla T4,,float32,x=[127 168],127,,168,30\n",  # no op: unreadable, not an op
        "Tesla T4,relu,float64,x=[127 168],127,,168,30\n",  # a dtype of no class
        "Tesla T4,zap,float32,x=?,,,,30\n",
    ]  # an op of no rule, and no sizes: unreadable
    path.write_text(head + "".join(rows) + "".join(odd))
    out = tmp_path / "out.csv"
    r = invoke("cost", "predict", "-i", path, "-o", out)
    assert r.exit_code == 0, r.output
    assert "2 rows of ops NeuSight's rules do not name, read as ATen ops: 'frobnicate'" in r.output
    assert "1 rows of dtypes without a class: float64 (first: data row 9)" in r.output
    assert "3 rows without a readable shape" in r.output and "not priced" not in r.output
    import pandas as pd

    pred = pd.read_csv(out)["predicted_time_us"].tolist()
    assert all(p > 0 for p in pred[:6]) and all(pd.isna(p) for p in pred[6:])
    # maximum reads two operands, subu one (and a scalar): priced from different curves
    assert pred[2] != pred[3]
    r = invoke("cost", "evaluate", path)
    assert r.exit_code == 0, r.output
    # the same rows, counted the same way; the catch-all's two rows scored
    assert (
        "not scored: 1 rows of dtypes without a class: float64 (first: data row 9); 3 rows "
        "without a readable shape" in r.output
    )
    assert "opaque" in r.output


def test_an_attention_table_without_its_dtype_column_is_refused(tmp_path):
    # each row had been left empty as "without a readable shape"
    path = tmp_path / "sdpa.csv"
    path.write_text("gpu,B,H,Sq,Skv,D,causal,time_us\nNVIDIA H200,1,8,128,128,64,0,5.6\n")
    out = tmp_path / "o.csv"
    _refused(invoke("cost", "predict", "-i", path, "-o", out), "no 'dtype' column")
    assert not out.exists()
    path.write_text("gpu,B,H,Sq,Skv,D,causal,dtype,time_us\nNVIDIA H200,1,8,128,128,64,0,"
                    "float16,5.6\n")  # fmt: skip
    assert invoke("cost", "predict", "-i", path, "-o", out).exit_code == 0


@pytest.mark.parametrize(
    ("field", "value", "phrase"),
    [
        ("start", 10**400, "start must be a finite number"),
        ("unit", 10**30, "unit must be an integer in [-2**62, 2**62) or null"),
        ("makespan", 10**400, "makespan must be a finite number"),
        ("lower_bound", 10**400, "lower_bound must be a finite number"),
    ],
)
def test_a_schedule_file_with_an_integer_past_float_range_is_refused(
    tmp_path: Path, field: str, value: int, phrase: str
) -> None:
    # 10**400 had crashed math.isfinite (exit 3), a unit of 10**30 the checker's int64 array
    g = tmp_path / "g.json"
    g.write_text(json.dumps(OpGraph((Op("a", 1),), name="g").to_dict()))
    doc: dict = {"graph": "g", "ops": [{"name": "a", "start": 0, "end": 1, "unit": 0}]}
    if field in ("start", "unit"):
        doc["ops"][0][field] = value
    else:
        doc[field] = value
    s = tmp_path / "s.json"
    s.write_text(json.dumps(doc))
    _refused(invoke("validate", g, s), str(s), phrase)


def test_a_subnormal_duration_is_refused_before_any_output(tmp_path: Path) -> None:
    # 1e-320 overflowed CP-SAT's ticks per time unit (exit 3); greedy wrote -o, then crashed
    g = tmp_path / "g.json"
    g.write_text('{"ops": [{"name": "a", "duration": 1e-320}]}')
    for solver in ("cpsat", "greedy"):
        out = tmp_path / f"{solver}.json"
        _refused(invoke("solve", g, "-k", 1, "--solver", solver, "-o", out),
                 "op 'a'", "duration must be 0 or at least 1e-300")  # fmt: skip
        assert not out.exists()
    assert Op("b", 1e-300).duration == 1e-300


def test_json_nested_too_deeply_names_the_file(tmp_path: Path) -> None:
    g = tmp_path / "deep.json"
    g.write_text("[" * 100_000 + "]" * 100_000)
    _refused(invoke("analyze", g), str(g), "nested too deeply")


def test_names_with_line_breaks_stay_on_one_line(tmp_path: Path) -> None:
    # a cycle through names holding a line break had printed a four-line error, and a file
    # name with one a two-line error
    g = tmp_path / "nl.json"
    ops = [{"name": "a\nb", "duration": 1, "deps": ["c\nd"]},
           {"name": "c\nd", "duration": 1, "deps": ["a\nb"]}]  # fmt: skip
    g.write_text(json.dumps({"ops": ops}))
    line = _refused(invoke("solve", g, "--time-limit", 1), "dependency cycle")
    assert "'a\\nb'" in line and "'c\\nd'" in line
    _refused(invoke("solve", tmp_path / "no\nfile.json"), "no\\nfile.json", "no such file")


def test_cost_evaluate_names_rows_whose_measured_time_is_no_number(tmp_path: Path) -> None:
    # such rows had been dropped from the scores without a word
    import pandas as pd

    d = pd.read_csv(dataset_path("kernel-timings/deepbench_gemm.csv")).head(5)
    d["time_us"] = d["time_us"].astype(object)
    d.loc[1, "time_us"], d.loc[3, "time_us"] = "-1", "abc"
    f = tmp_path / "t.csv"
    d.to_csv(f, index=False)
    r = CliRunner().invoke(main, ["cost", "evaluate", str(f), "--json"])
    assert r.exit_code == 0, r.output
    assert sum(row["rows"] for row in json.loads(r.stdout)) == 3
    assert "2 rows not scored, their measured time is no time (text, infinite or below 0; data " \
        "rows 2, 4)" in r.stderr  # fmt: skip
    # an empty cell is an unmeasured row, skipped as before without a word (the shipped
    # tables leave optional timing columns blank), as is a time of 0
    d.loc[1, "time_us"], d.loc[3, "time_us"] = "", 0
    d.to_csv(f, index=False)
    r = CliRunner().invoke(main, ["cost", "evaluate", str(f), "--json"])
    assert r.exit_code == 0 and "not scored" not in r.stderr, r.stderr


def test_pipeline_refuses_an_op_no_stage_can_hold(tmp_path: Path) -> None:
    # the unrolled problem proves it impossible: bad input (exit 2 on stderr), as solve says
    # it; the heuristic had printed it on stdout with exit 1, as a search that found nothing
    g = tmp_path / "g.json"
    g.write_text(json.dumps({"ops": [{"name": "a", "duration": 1, "demands": {"units": 2}},
                                     {"name": "b", "duration": 2, "deps": ["a"]}]}))  # fmt: skip
    out = tmp_path / "p.json"
    for solver in ("heuristic", "cpsat"):
        r = invoke("pipeline", g, "-s", 2, "-m", 2, "--solver", solver, "-o", out)
        _refused(r, "no schedule exists: op 'a@0' demands 2 of 'stage0' but the capacity is 1")
        assert not out.exists()


def test_cost_predict_refuses_a_size_with_a_fraction(tmp_path: Path) -> None:
    # M = 2.5 had been priced as a GEMM of M = 2 without a word; 64.0 is still 64
    import pandas as pd

    d = pd.read_csv(dataset_path("kernel-timings/deepbench_gemm.csv")).head(4)
    d["M"] = d["M"].astype(float)
    f, out = tmp_path / "t.csv", tmp_path / "p.csv"
    d.to_csv(f, index=False)
    assert invoke("cost", "predict", "--input", f, "--output", out).exit_code == 0
    out.unlink()
    d.loc[1, "M"] = 2.5
    d.to_csv(f, index=False)
    r = invoke("cost", "predict", "--input", f, "--output", out)
    _refused(r, "data row 2: size 2.5 is not an integer")
    assert not out.exists()


def test_a_lone_surrogate_in_a_json_string_is_refused_naming_it(tmp_path: Path) -> None:
    # "\ud800" parses to no Unicode text: every later write of the name would fail (exit 3)
    graph = tmp_path / "g.json"
    graph.write_text('{"ops": [{"name": "a\\ud800", "duration": 1}]}')
    for args in (("solve", graph, "--units", 2), ("analyze", graph)):
        _refused(invoke(*args), str(graph), "the string 'a\\ud800' holds a lone UTF-16 surrogate")
    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": [{"ph": "X", "name": "k\\udc00", "ts": 1, "dur": 2}]}')
    _refused(invoke("import-trace", trace, "-o", tmp_path / "o.json"), "'k\\udc00' holds a lone")
    assert not (tmp_path / "o.json").exists()
    # a pair of surrogates is one character, read as such
    graph.write_text('{"ops": [{"name": "a\\ud83d\\ude00", "duration": 1}]}')
    r = invoke("solve", graph, "--units", 1, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["ops"][0]["name"] == "a\U0001f600"


def test_a_graph_giving_a_unit_count_is_refused(tmp_path: Path) -> None:
    # the machine's unit count (--units, or unlimited) would override it without a word
    doc = {"resources": {"units": 1}, "ops": [{"name": n, "duration": 1} for n in "abc"]}
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(doc))
    _refused(invoke("solve", graph), str(graph), "'units' is the machine's unit count")
    doc["resources"] = {"dma": 1}
    graph.write_text(json.dumps(doc))
    r = invoke("solve", graph, "--json")  # other capacities are the graph's to give
    assert r.exit_code == 0 and json.loads(r.stdout)["machine"]["resources"] == {"dma": 1}


def test_outputs_stand_when_only_stdout_is_closed(tmp_path: Path) -> None:
    # `opsched solve ... -o s.json | head -1`: the reader of stdout going away is no failure of
    # the command, so the file it wrote in full stays (exit 141)
    from opsched._files import guarding_outputs, write_text_atomic

    path = tmp_path / "s.json"
    with pytest.raises(BrokenPipeError), guarding_outputs():
        write_text_atomic("done", path)
        raise BrokenPipeError
    assert path.read_text() == "done"
    with pytest.raises(KeyboardInterrupt), guarding_outputs():  # Ctrl-C: an abort, none stays
        write_text_atomic("half", tmp_path / "t.json")
        raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


def test_a_trace_with_surrogates_coded_as_utf8_bytes_is_no_utf8(tmp_path: Path) -> None:
    # b"\xed\xb0\x80" is a lone surrogate written as UTF-8: a strict reader refuses it
    trace = tmp_path / "t.json"
    trace.write_bytes(b'{"traceEvents": [{"ph": "X", "name": "k\xed\xb0\x80", "ts": 1, "dur": 2}]}')
    _refused(invoke("import-trace", trace, "-o", tmp_path / "o.json"), "not UTF-8 text (byte 39)")


def test_cost_predict_refuses_a_row_cut_short_or_too_long(tmp_path: Path) -> None:
    # a table cut off mid-row had been priced up to the cut without a word (pandas pads
    # the short last row with blanks); a long first row had shifted every cell of its row
    import gzip

    head = "gpu,dtype,B,H,Sq,Skv,D,causal,time_us\n"
    row = "NVIDIA H200,float16,1,8,128,128,64,0,5.6\n"
    f, out = tmp_path / "t.csv", tmp_path / "p.csv"
    f.write_text(head + row * 3 + "NVIDIA H200,float16,1,8,51")
    r = invoke("cost", "predict", "-i", f, "-o", out)
    _refused(r, str(f), "data row 4 has 5 cells where the header has 9", "looks cut short")
    assert not out.exists()
    f.write_text(head + row.replace("\n", ",7\n") + row)
    _refused(invoke("cost", "predict", "-i", f, "-o", out), "data row 1 has 10 cells")
    f.write_text(head + row + "NVIDIA H200,float16,1\n" + row)  # not the last: not cut short
    line = _refused(invoke("cost", "predict", "-i", f, "-o", out), "data row 2 has 3 cells")
    assert "cut short" not in line
    f.write_text(head + row + row.replace("\n", ",7,8\n"))
    _refused(invoke("cost", "predict", "-i", f, "-o", out), "data row 2 has 11 cells")
    # the same cut in a .csv.gz, and a .csv.gz cut mid-stream: each one line
    gz = tmp_path / "t.csv.gz"
    gz.write_bytes(gzip.compress((head + row * 3 + "NVIDIA H200,float16,1").encode()))
    _refused(invoke("cost", "predict", "-i", gz, "-o", out), str(gz), "data row 4 has 3 cells")
    gz.write_bytes(gzip.compress((head + row * 200).encode())[:-30])
    _refused(invoke("cost", "predict", "-i", gz, "-o", out), str(gz), "truncated")
    # blank trailing cells of a complete row stay readable
    f.write_text(head + row + "NVIDIA H200,float16,1,8,128,128,64,0,\n")
    assert invoke("cost", "predict", "-i", f, "-o", out).exit_code == 0


@pytest.mark.parametrize("value", [-5, float("nan"), "lots"])
@pytest.mark.parametrize("key", ["flops", "bytes"])
def test_fuse_refuses_bad_flops_or_bytes_as_cost_apply_does(tmp_path, key, value):
    # fuse had left such an op out of every group without a word (NaN: an internal error)
    attrs = {"numel": 4, "fn": "relu", key: value}
    ops = [{"name": "a", "duration": 1, "kind": "elementwise", "attrs": attrs},
           {"name": "b", "duration": 1, "deps": ["a"], "kind": "elementwise",
            "attrs": {"numel": 4, "fn": "relu"}}]  # fmt: skip
    path, out = tmp_path / "g.json", tmp_path / "o.json"
    path.write_text(json.dumps({"ops": ops}))
    phrase = f"elementwise attrs[{key!r}] must be a non-negative integer"
    _refused(invoke("fuse", path, "-o", out), str(path), "op 'a'", phrase)
    assert not out.exists()
    _refused(invoke("cost", "apply", path, "--gpu", "H100-SXM5", "-o", out), "op 'a'", phrase)


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["gnp", "--ops", 20_000_000], "--ops 20,000,000: a gnp graph of about 40,000,000 edges"),
        (["gnp", "--ops", 1_000_000, "--p", 0.5], "--ops 1,000,000 with --p 0.5: a gnp graph"),
        (["planted", "--ops", 1_000_000, "--avg-deps", 1000], "with --avg-deps 1000: a planted"),
        (["network", "--ops", 5_000_000], "needs about 20 GiB of memory, past the 16 GiB allowed"),
    ],
)
def test_generate_refuses_a_graph_past_its_memory_bound_up_front(tmp_path, args, phrase):
    # these ran for minutes and then said no more than "out of memory"
    out = tmp_path / "g.json"
    _refused(invoke("generate", *args, "-o", out), phrase)
    assert not out.exists()


def test_simulate_bounds_its_runs_by_the_durations_they_draw(tmp_path: Path) -> None:
    from opsched.zoo.generators import gnp

    path, sched = tmp_path / "g.json", tmp_path / "s.json"
    path.write_text(json.dumps(gnp(1000, 0.002).to_dict()))
    assert invoke("solve", path, "-k", 2, "--solver", "greedy", "-o", sched).exit_code == 0
    _refused(invoke("simulate", path, sched, "--runs", 300_000), str(path),
             "--runs 300,000: 300,000 runs of the 1,000 ops draw more than the 250,000,000",
             "at most --runs 250,000 here")  # fmt: skip
    _refused(invoke("simulate", path, sched, "--runs", 2_000_000), "--runs", "1<=x<=1000000")
    assert invoke("simulate", path, sched, "--runs", 2).exit_code == 0


def test_analyze_under_a_cap_takes_the_unit_count_given(tmp_path: Path) -> None:
    # the cap's check had run on one unit whatever -k said: an op of 2 units was "impossible"
    doc = {"ops": [{"name": "a", "duration": 1, "output_bytes": 4, "demands": {"units": 2}}]}
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(doc))
    for units in (("-k", 2), ()):
        r = invoke("analyze", graph, *units, "--memory-cap", 10, "--json")
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["cap_orders"]["memory_cap"] == 10
    _refused(invoke("analyze", graph, "-k", 1, "--memory-cap", 10), "demands 2 of 'units'")
    _refused(invoke("analyze", graph, "-k", 2, "--memory-cap", 3), "below the 4B")


def test_lines_of_spaces_in_a_table_are_skipped_as_pandas_skips_them(tmp_path: Path) -> None:
    # the row count of a table with a sparse last column had taken "   " for a row of 1 cell
    from opsched.cost.data import read_table

    f = tmp_path / "t.csv"
    for text in ("a,b,c\n1,2,\n3,4,5\n   \n", "a,b,c\n1,2,\n \t\n3,4,5\n"):
        f.write_text(text)
        assert read_table(f).shape == (2, 3)


def test_a_trace_saved_as_utf16_is_read(tmp_path: Path) -> None:
    # JSON may be UTF-16 (as some Windows tools save it): decoded strictly in the encoding its
    # first bytes show, it parses, and the trace is judged on what it holds
    doc = '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}]}'
    for enc in ("utf-16", "utf-8-sig"):
        trace = tmp_path / f"t-{enc}.json"
        trace.write_bytes(doc.encode(enc))
        r = invoke("import-trace", trace, "-o", tmp_path / "o.json")
        assert "not UTF" not in r.output and "invalid JSON" not in r.output, r.output


def test_torch_spellings_of_a_dtype_are_read(tmp_path: Path) -> None:
    # NeuSight-schema rows of dtype "half" had been left empty ("dtypes without a class")
    import pandas as pd

    src = pd.read_csv(dataset_path("kernel-timings") / "neusight_ops.csv.gz", nrows=8)
    f, out = tmp_path / "t.csv", tmp_path / "p.csv"
    src.assign(dtype="float16").to_csv(f, index=False)
    assert invoke("cost", "predict", "-i", f, "-o", out).exit_code == 0
    want = pd.read_csv(out)["predicted_time_us"]
    for spelt in ("half", "torch.float16", " Float16"):
        src.assign(dtype=spelt).to_csv(f, index=False)
        r = invoke("cost", "predict", "-i", f, "-o", out)
        assert r.exit_code == 0 and "left empty" not in r.output, r.output
        assert pd.read_csv(out)["predicted_time_us"].tolist() == want.tolist()

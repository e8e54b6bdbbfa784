"""The HTML / PNG / Markdown report and the ``opsched report`` command."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.experiments import parse_config, run_experiment
from opsched.report import build_report

from .test_stats import make_hand_db

RUN = """
[experiment]
name = "fig"
[[graphs]]
generate = "layered"
ops = 8
count = 2
[machines]
units = [2]
memory_cap = ["none", 0.8]
[schedulers]
names = ["cpsat", "greedy"]
time_limit = 5
"""


def test_hand_report_numbers(tmp_path) -> None:
    make_hand_db(tmp_path / "h.sqlite")
    md = tmp_path / "out" / "r.md"
    md.parent.mkdir()
    data = build_report(tmp_path / "h.sqlite", tmp_path / "r.html", markdown=md, n_instances=0)
    s = data.summary()
    assert (s["jobs"], s["instances"], s["with_proven_optimum"], s["conflicts"]) == (12, 4, 2, 1)
    text = md.read_text()
    # greedy: mean (20 + 6.06) / 2 = 13.03, median 13.03, max 20, share 0 %
    assert "| greedy | 4 | 2 | 0 | 13.03 | 13.03 | 20 | 0.0 % |" in text
    assert "| cpsat | 4 | 2 | 1 | 0 | 0 | 0 | 50.0 % |" in text
    assert "![profile](../r_figures/profile.png)" in text
    html = (tmp_path / "r.html").read_text()
    assert "13.03" in html and "Conflicts" in html and "boom" in html
    assert not re.search(r"<script[^>]+src=", html)  # plotly.js inline, no CDN
    assert "Plotly.newPlot" in html and "Machine and versions" in html
    for name in ("gap.png", "profile.png", "time.png", "peak.png"):
        assert (tmp_path / "r_figures" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_report_with_gantt_and_errors(tmp_path) -> None:
    db = tmp_path / "r.sqlite"
    run_experiment(parse_config(RUN), db, workers=1, progress=False)
    r = CliRunner().invoke(main, ["report", str(db), "-o", str(tmp_path / "rep.html"),
                                  "--instance", "layered-8-s1", "--json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert '"jobs": 8' in r.output
    html = (tmp_path / "rep.html").read_text()
    assert html.count("layered-8-s1 (2 units") == 2  # both caps of that graph drawn
    assert (tmp_path / "rep_figures" / "instance2.png").exists()
    bad = CliRunner().invoke(main, ["report", str(db), "-o", str(tmp_path / "x.html"),
                                    "--instance", "nope"])  # fmt: skip
    assert bad.exit_code == 2 and "--instance 'nope'" in bad.output
    assert not (tmp_path / "x.html").exists()
    empty = CliRunner().invoke(main, ["report", str(db), "-o", str(tmp_path / "y.html"),
                                      "--experiment", "other"])  # fmt: skip
    assert empty.exit_code == 2 and "no finished jobs" in empty.output
    assert not (tmp_path / "y.html").exists()


def test_report_writes_nothing_when_the_markdown_cannot_be_written(tmp_path):
    make_hand_db(tmp_path / "h.sqlite")
    html = tmp_path / "r.html"
    r = CliRunner().invoke(main, ["report", str(tmp_path / "h.sqlite"), "-o", str(html),
                                  "--markdown", str(tmp_path / "missing" / "r.md"),
                                  "--gantt", "0"])  # fmt: skip
    assert r.exit_code == 2 and "r.md: no such folder" in r.output
    assert not html.exists() and not (tmp_path / "r_figures").exists()
    build_report(tmp_path / "h.sqlite", html, markdown=tmp_path / "r.md", n_instances=0)
    assert html.exists() and (tmp_path / "r.md").exists()


def test_report_writes_nothing_when_an_output_is_the_store(tmp_path) -> None:
    # the store became an input only once read: the figures were written, then exit 2
    db = tmp_path / "h.sqlite"
    make_hand_db(db)
    before = sorted(p.name for p in tmp_path.iterdir())
    for args in (
        ["-o", str(tmp_path / "r.html"), "--markdown", str(db)],
        ["-o", str(db)],
        ["-o", str(tmp_path / "r.html"), "--png-dir", str(tmp_path / "r.html")],
    ):
        r = CliRunner().invoke(main, ["report", str(db), *args, "--gantt", "0"])
        assert r.exit_code == 2, r.output
        assert "opsched: error:" in r.output and "Traceback" not in r.output
        assert sorted(p.name for p in tmp_path.iterdir()) == before, args
    assert build_report(db, tmp_path / "r.html", n_instances=0).summary()["jobs"] == 12


def test_report_of_a_store_without_one_schedule(tmp_path) -> None:
    # every job a dead end (half the peak is below what a greedy order can keep): the result
    # columns hold NULLs alone, which once reached np.isnan as objects (internal error)
    cfg = RUN.replace('["none", 0.8]', "[0.3]").replace('"cpsat", ', "")
    cfg = cfg.replace("ops = 8", "ops = 24")
    db = tmp_path / "r.sqlite"
    s = run_experiment(parse_config(cfg), db, workers=1, progress=False)
    assert s.statuses == {"UNKNOWN": 2}
    md = tmp_path / "r.md"
    data = build_report(db, tmp_path / "r.html", markdown=md, n_instances=0)
    assert (data.summary()["jobs"], data.summary()["instances"]) == (2, 2)
    assert "greedy" in md.read_text() and (tmp_path / "r.html").exists()


def test_an_edited_experiment_reports_its_current_jobs_only(tmp_path) -> None:
    # the same name run again with another time limit: new jobs, the old ones kept but no
    # longer current, so the report counts each (instance, scheduler) once
    db = tmp_path / "r.sqlite"
    cfg = RUN.replace('"cpsat", ', "")
    run_experiment(parse_config(cfg), db, workers=1, progress=False)
    run_experiment(parse_config(cfg.replace("time_limit = 5", "time_limit = 4")), db,
                   workers=1, progress=False)  # fmt: skip
    from opsched.experiments import load_results

    df = load_results(db)
    assert len(df) == 8 and df["current"].sum() == 4
    data = build_report(db, tmp_path / "r.html", n_instances=0)
    assert (data.summary()["jobs"], data.summary()["earlier_jobs_left_out"]) == (4, 4)
    assert set(data.results["time_limit"]) == {4.0}
    r = CliRunner().invoke(main, ["results", str(db), "-o", str(tmp_path / "x.csv"),
                                  "--experiment", "nope"])  # fmt: skip
    assert r.exit_code == 2 and "--experiment 'nope': not in the store (it has: fig)" in r.output
    assert not (tmp_path / "x.csv").exists()


def test_two_experiments_on_the_same_instances_are_not_pooled(tmp_path) -> None:
    # a copied file renamed for a time-limit sweep: each (instance, scheduler) ran under both
    # names and the report had counted them together (16 greedy jobs on 8 instances)
    db = tmp_path / "r.sqlite"
    cfg = RUN.replace('"cpsat", ', "")
    run_experiment(parse_config(cfg), db, workers=1, progress=False)
    short = cfg.replace('name = "fig"', 'name = "fig-short"').replace(
        "time_limit = 5", "time_limit = 1"
    )
    run_experiment(parse_config(short), db, workers=1, progress=False)
    r = CliRunner().invoke(main, ["report", str(db), "-o", str(tmp_path / "r.html")])
    assert r.exit_code == 2
    assert "experiments 'fig', 'fig-short' both ran greedy" in r.output
    assert "--experiment" in r.output and not (tmp_path / "r.html").exists()
    data = build_report(db, tmp_path / "r.html", experiment="fig-short", n_instances=0)
    assert data.summary()["jobs"] == 4
    # experiments on different graphs still report together
    other = cfg.replace('name = "fig"', 'name = "other"').replace("ops = 8", "ops = 9")
    db2 = tmp_path / "r2.sqlite"
    run_experiment(parse_config(cfg), db2, workers=1, progress=False)
    run_experiment(parse_config(other), db2, workers=1, progress=False)
    assert build_report(db2, tmp_path / "r2.html", n_instances=0).summary()["jobs"] == 8


def test_figures_labels_and_current_jobs_follow_the_file_as_last_run(tmp_path) -> None:
    from opsched.experiments import load_results
    from opsched.experiments.store import ResultStore
    from opsched.report.build import collect

    db = tmp_path / "r.sqlite"
    cfg = RUN.replace('"cpsat", ', "").replace("count = 2", "count = 1")
    run_experiment(parse_config(cfg), db, workers=1, progress=False)
    renamed = cfg.replace("count = 1", 'count = 1\nlabel = "renamed"')
    s = run_experiment(parse_config(renamed), db, workers=1, progress=False)
    # a new label is no new job, but the jobs kept take it
    assert (s.ran, s.skipped) == (0, 2)
    assert set(load_results(db)["set_label"]) == {"renamed"}
    edited = renamed.replace("time_limit = 5", "time_limit = 4")
    run_experiment(parse_config(edited), db, workers=1, progress=False)
    data = collect(db, n_instances=1)
    # the drawn instance shows the current greedy schedule only (both had been drawn)
    assert [s.solver for s in data.instances[0]["schedules"]] == ["greedy"]
    # a file that now makes no job leaves no job current (all had come back)
    run_experiment(parse_config(edited.replace('names = ["greedy"]', 'names = ["downsets"]')
                                .replace('memory_cap = ["none", 0.8]', 'memory_cap = ["none"]')),
                   db, workers=1, progress=False)  # fmt: skip
    assert not load_results(db)["current"].any()
    r = CliRunner().invoke(main, ["report", str(db), "-o", str(tmp_path / "r.html")])
    assert r.exit_code == 2 and "4 finished jobs are of earlier versions" in r.output
    with ResultStore(db, create=False) as store:
        assert store.frame()["job_id"].nunique() == 4


def test_cap_settings_that_print_alike_keep_their_own_rows() -> None:
    import pandas as pd

    from opsched.report.build import _cap_labels

    df = pd.DataFrame({"cap_fraction": [0.9, 0.901, None, None, None, 0.125],
                       "cap_bytes": [None, None, 2**30, 2**30 + 1, None, None]})  # fmt: skip
    got = _cap_labels(df).tolist()
    assert got[:2] == ["90% of peak", "90.1% of peak"] and got[4:] == ["none", "12.5% of peak"]
    assert got[2] != got[3] and got[2].endswith("(1,073,741,824 B)")
    close = pd.DataFrame({"cap_fraction": [0.9, 0.9000001], "cap_bytes": [None, None]})
    assert _cap_labels(close).tolist() == ["90% of peak", "90.00001% of peak"]


def test_profile_title_says_which_instances_it_covers(tmp_path) -> None:
    from opsched.report.build import collect
    from opsched.report.stats import profile_title

    db = tmp_path / "r.sqlite"
    cfg = RUN.replace('"cpsat", "greedy"', '"downsets", "greedy"')
    run_experiment(parse_config(cfg), db, workers=1, progress=False)
    from opsched.experiments import load_results

    df = load_results(db)
    capped = df[df["cap_fraction"].notna()]
    solved = capped.loc[capped["valid"] == True, "instance_id"].nunique()  # noqa: E712
    assert 1 <= solved <= 2  # at 80 % of the peak one graph may have no schedule
    p = collect(db, n_instances=0).profile
    assert p.attrs == {"instances": solved, "of": 4}
    assert profile_title(p).endswith(f"{solved} of 4 instances: those every scheduler ran")


def test_a_figures_folder_under_a_file_is_one_line_and_writes_nothing(tmp_path) -> None:
    # the folder is made after the report is computed: one under a file had failed there
    # with an internal error (NotADirectoryError)
    db = tmp_path / "h.sqlite"
    make_hand_db(db)
    (tmp_path / "afile").write_text("x")
    before = sorted(p.name for p in tmp_path.iterdir())
    for png_dir in ("afile/figs", "afile/a/b"):
        args = ["-o", str(tmp_path / "r.html"), "--png-dir", str(tmp_path / png_dir)]
        r = CliRunner().invoke(main, ["report", str(db), *args, "--gantt", "0"])
        assert r.exit_code == 2, r.output
        assert r.output.startswith(f"opsched: error: {tmp_path / png_dir}: ")
        assert "is a file, not a folder" in r.output and "internal error" not in r.output
        assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_report_of_a_stopped_run_says_how_many_jobs_have_no_result(tmp_path, monkeypatch):
    # a bench stopped at 2 of 4 jobs: the report had shown the two as the whole study
    # (greedy measured on one instance, say, cpsat on another) without a word
    from opsched.experiments.executors import LocalExecutor

    real_run = LocalExecutor.run

    def run_then_stop(self, tasks):
        for i, outcome in enumerate(real_run(self, tasks)):
            if i == 2:
                raise KeyboardInterrupt
            yield outcome

    monkeypatch.setattr(LocalExecutor, "run", run_then_stop)
    db = tmp_path / "r.sqlite"
    cfg = parse_config(RUN.replace('"cpsat", ', ""))  # greedy: 2 graphs x 2 caps
    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, db, workers=1, progress=False)
    md = tmp_path / "r.md"
    r = CliRunner().invoke(main, ["report", str(db), "-o", str(tmp_path / "r.html"),
                                  "--markdown", str(md), "--gantt", "0", "--json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert '"unfinished_jobs": 2' in r.output and '"jobs": 2' in r.output
    assert "Not finished: 2 jobs of the experiment file have no result yet" in md.read_text()
    assert "Not finished: 2 jobs" in (tmp_path / "r.html").read_text()
    r = CliRunner().invoke(main, ["report", str(db), "-o", str(tmp_path / "r.html")])
    assert "not finished: 2 jobs of the experiment file have no result yet" in r.output
    monkeypatch.setattr(LocalExecutor, "run", real_run)
    run_experiment(cfg, db, workers=1, progress=False)  # resumed to the end
    data = build_report(db, tmp_path / "r.html", markdown=md, n_instances=0)
    assert data.summary()["unfinished_jobs"] == 0 and data.summary()["jobs"] == 4
    assert "Not finished" not in md.read_text()
    # jobs of an earlier version of the file are left out, not unfinished
    run_experiment(parse_config(RUN.replace('"cpsat", ', "").replace("= 5", "= 4")), db,
                   workers=1, progress=False)  # fmt: skip
    assert build_report(db, tmp_path / "r.html", n_instances=0).summary()["unfinished_jobs"] == 0


def test_a_pipe_in_a_markdown_cell_stays_in_its_cell() -> None:
    # a set label "a|b" had split its cell in two, shifting the row's numbers one column
    import pandas as pd

    from opsched.report.render import _md_table

    text = _md_table(pd.DataFrame({"set_label": ["a|b"], "jobs": [2], "error": ["x | y"]}))
    row = text.splitlines()[2]
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
    assert cells == [r"a\|b", "2", r"x \| y"]


def test_the_time_figures_leave_errors_out_as_the_time_table_does(tmp_path, monkeypatch):
    from opsched.report import figures

    make_hand_db(tmp_path / "h.sqlite")  # serial: 4 jobs, one an ERROR, each 0.5 s
    drawn: dict[str, list[int]] = {}
    for name in ("plotly_box", "png_box"):
        real = getattr(figures, name)

        def spy(df, column, *a, _real=real, _name=name, **k):
            if column == "wall_time_s":
                drawn[_name] = sorted(df.loc[df["scheduler"] == "serial", "status"].tolist())
            return _real(df, column, *a, **k)

        monkeypatch.setattr(figures, name, spy)
    data = build_report(tmp_path / "h.sqlite", tmp_path / "r.html", n_instances=0)
    assert data.times.set_index("scheduler").loc["serial", "errors"] == 1
    want = ["FEASIBLE", "FEASIBLE", "FEASIBLE"]
    assert drawn == {"plotly_box": want, "png_box": want}

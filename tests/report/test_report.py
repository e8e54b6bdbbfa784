"""The HTML / PNG / Markdown report and the ``opsched report`` command."""

from __future__ import annotations

import re

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

"""The demo page's data, HTML and command (no browser; see test_browser.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.demo_page.build import page_data, render_page, write_page
from opsched.errors import ProblemError
from opsched.ir import Op, OpGraph, write_graph_json


def _embedded(html: str) -> dict:
    m = re.search(r'<script id="opsched-data" type="application/json">(.*?)</script>', html, re.S)
    assert m is not None
    return json.loads(m.group(1))


@pytest.fixture(scope="module")
def small_data() -> dict:
    return page_data(micro_batches=2, time_limit=5)


def test_data_of_the_three_tabs(small_data: dict) -> None:
    seed, strat, crit = small_data["seed"], small_data["strategies"], small_data["critical"]
    assert seed["makespan"] == 6 and len(seed["steps"]) == 7 and seed["units"] == 2
    assert {n["name"] for n in seed["dag"]["nodes"]} == set(seed["analysis"]["order"])
    assert len(seed["dag"]["edges"]) == 7
    assert strat["pipeline"]["micro_batches"] == 2
    assert crit["before"]["length"] == 5 and crit["after"]["length"] == 3
    assert crit["speedup_percent"] == 40
    assert crit["before"]["makespan"] == 5 and crit["after"]["makespan"] == 3
    assert [(e["src"], e["dst"]) for e in crit["after"]["dag"]["edges"]] == [
        ("A", "B"), ("A", "C"), ("B", "D"), ("C", "E")
    ]  # fmt: skip
    assert crit["after"]["dag"]["edges"][0]["kind"] == "RAW a"
    assert len(crit["before"]["dag"]["edges"]) == 4


def test_page_is_self_contained_and_round_trips_its_data(small_data: dict) -> None:
    html = render_page(small_data)
    assert _embedded(html) == json.loads(json.dumps(small_data))
    # nothing is fetched: no src/href to any URL, no @import, only the SVG namespace string
    assert not re.search(r"""(src|href)\s*=\s*["'](?!data:)""", html)
    assert "@import" not in html and "url(http" not in html
    assert set(re.findall(r"https?://[^\s\"']+", html)) == {"http://www.w3.org/2000/svg"}
    for placeholder in ("/*@CSS@*/", "/*@JS@*/", "/*@DATA@*/"):
        assert placeholder not in html


def test_hostile_names_cannot_close_the_data_element(tmp_path: Path) -> None:
    bad = "</script><script>alert(1)</script>"
    g = OpGraph((Op("x", 1, output_bytes=8), Op(bad, 2, deps=("x",), output_bytes=4)),
                name="<b>&amp;")  # fmt: skip
    html = render_page(page_data(graph=g, micro_batches=2, time_limit=5))
    assert html.count("</script>") == 2  # the data element and the script element
    data = _embedded(html)
    assert data["strategies"]["graph"]["name"] == "<b>&amp;"
    assert data["strategies"]["graph"]["ops"][1]["name"] == bad


def test_bad_options_raise_problem_errors() -> None:
    with pytest.raises(ProblemError, match="units must be >= 1"):
        page_data(units=0)
    with pytest.raises(ProblemError, match="time limit"):
        page_data(time_limit=float("nan"))
    big = OpGraph(tuple(Op(f"v{i}", 1) for i in range(61)), name="big")
    with pytest.raises(ProblemError, match="graph 'big': 61 ops"):
        page_data(graph=big)
    multi = OpGraph((Op("w", 1, demands={"units": 2}),), name="wide")
    with pytest.raises(ProblemError, match="op 'w'"):
        page_data(graph=multi)


def test_write_page_is_atomic(tmp_path: Path) -> None:
    out = tmp_path / "demo.html"
    write_page(out, micro_batches=2, time_limit=5)
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["demo.html"]


def test_cli_writes_the_page(tmp_path: Path) -> None:
    out = tmp_path / "demo.html"
    r = CliRunner().invoke(main, ["demo", "page", "-o", str(out), "-m", "2", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["seed_makespan"] == 6 and doc["critical_path"] == [5, 3]
    assert doc["strategies"]["pipeline"]["initiation_interval"] == 18
    assert _embedded(out.read_text(encoding="utf-8"))["seed"]["makespan"] == 6


def test_cli_uses_a_given_graph(tmp_path: Path) -> None:
    g = OpGraph((Op("a", 2, output_bytes=8), Op("b", 2, output_bytes=8),
                 Op("c", 1, deps=("a", "b"))), name="tiny")  # fmt: skip
    src = tmp_path / "tiny.json"
    write_graph_json(g, src)
    out = tmp_path / "tiny.html"
    r = CliRunner().invoke(main, ["demo", "page", "-o", str(out), "--graph", str(src), "-k", "2"])
    assert r.exit_code == 0, r.output
    assert "wrote" in r.output and "parallel    makespan 3," in r.output
    assert _embedded(out.read_text(encoding="utf-8"))["strategies"]["graph"]["name"] == "tiny"


def test_cli_bad_input_exits_2_without_output(tmp_path: Path) -> None:
    out = tmp_path / "never.html"
    big = OpGraph(tuple(Op(f"v{i}", 1) for i in range(70)), name="big")
    src = tmp_path / "big.json"
    write_graph_json(big, src)
    for args in (["--graph", str(tmp_path / "missing.json")], ["--graph", str(src)]):
        r = CliRunner().invoke(main, ["demo", "page", "-o", str(out), *args])
        assert r.exit_code == 2
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("opsched: error: ")
        assert not out.exists()


def test_cli_refuses_an_unwritable_output_before_computing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a folder as -o had been found out only at the end: the page was computed (seconds of
    # CP-SAT), "wrote <folder>" and the summary printed, then the error
    import opsched.demo_page.build as build

    def never(**_: object) -> dict:
        raise AssertionError("page data computed for an output that cannot be written")

    monkeypatch.setattr(build, "page_data", never)
    (tmp_path / "folder.html").mkdir()
    for out, why in ((tmp_path / "folder.html", "is a directory"),
                     (tmp_path / "no" / "demo.html", "no such folder")):  # fmt: skip
        r = CliRunner().invoke(main, ["demo", "page", "-o", str(out)])
        assert r.exit_code == 2, r.output
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"opsched: error: {out}: {why}"), lines
    assert [p.name for p in tmp_path.iterdir()] == ["folder.html"]

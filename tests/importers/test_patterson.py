"""The Patterson ``.rcp`` reader: the same graphs as the ``.sm`` reader, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.datasets import dataset_path
from opsched.errors import InputError
from opsched.importers import parse_patterson, parse_psplib, read_graph
from opsched.ir.graph import OpGraph
from tests.importers.test_psplib import SMALL as SMALL_SM

# the .sm file SMALL of test_psplib.py, by hand: 4 jobs, 2 resources (3, 2)
SMALL = """\
4 2
3 2
0 0 0 2 2 3
3 2 1 1 4
5 1 2 1 4
0 0 0 0
"""


def to_patterson(g: OpGraph, wrap: int | None = None) -> str:
    """Write ``g`` in the Patterson format; ``wrap`` breaks successor lists after so many."""
    res = sorted(g.resources, key=lambda r: int(r[1:]))
    lines = [f"{g.num_ops} {len(res)}", " ".join(str(g.resources[r]) for r in res)]
    for op in g.ops:
        succ = g.successors(op.name)
        head = [int(op.duration), *(op.demands.get(r, 0) for r in res), len(succ)]
        if wrap is None:
            lines.append(" ".join(map(str, head + [int(s) for s in succ])))
        else:
            lines.append(" ".join(map(str, head + [int(s) for s in succ[:wrap]])))
            for i in range(wrap, len(succ), wrap):
                lines.append("   " + " ".join(succ[i : i + wrap]))
    return "\n".join(lines) + "\n"


def test_small_by_hand_matches_the_sm_reader() -> None:
    g = parse_patterson(SMALL, name="small")
    assert g.names == ["1", "2", "3", "4"]
    assert g["4"].deps == ("2", "3")
    assert dict(g["3"].demands) == {"R1": 1, "R2": 2}
    assert dict(g.resources) == {"R1": 3, "R2": 2}
    assert g.to_dict() == parse_psplib(SMALL_SM, name="small").to_dict()


@pytest.mark.parametrize("wrap", [None, 1, 2])
def test_all_j30_files_give_the_sm_graph(wrap: int | None) -> None:
    files = sorted(dataset_path("psplib/j30").glob("*.sm"))
    assert len(files) == 480
    for path in files[:: 1 if wrap is None else 40]:
        g = parse_psplib(path.read_text(), name=path.stem)
        again = parse_patterson(to_patterson(g, wrap), name=path.stem)
        assert again.to_dict() == g.to_dict(), path.name


def test_windows_line_ends_and_blank_lines() -> None:
    text = "\r\n".join(["", *SMALL.splitlines()[:3], "", *SMALL.splitlines()[3:], ""])
    assert parse_patterson(text).to_dict() == parse_patterson(SMALL).to_dict()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("4", "ends after line 1 while reading resource count (truncated?)"),
        (SMALL.rsplit("0 0 0 0", 1)[0], "ends after line 5 while reading duration of job 4"),
        (SMALL.replace("4 2\n", "x 2\n", 1), "line 1: job count must be an integer, got 'x'"),
        (SMALL.replace("4 2\n", "0 2\n", 1), "line 1: needs at least one job and one resource"),
        # counts far beyond the file are refused at once, not allocated (a 20-digit count
        # had built lists until memory ran out)
        ("99999999999999999999 2\n5 3\n", "line 1: 99999999999999999999 jobs and 2 resources"),
        ("4 99999999999999999\n5 3\n", "need at least 500000000000000005 numbers, the file"),
        (SMALL.replace("3 2\n", "3 -2\n", 1), "line 2: capacity of R2 must be >= 0, got -2"),
        (SMALL.replace("3 2 1 1 4", "3.5 2 1 1 4"), "line 4: duration of job 2 must be an"),
        (SMALL.replace("3 2 1 1 4", "3 2 1 1 9"), "line 4: job 2 has unknown successor 9"),
        (SMALL.replace("3 2 1 1 4", "3 2 1 1 2"), "line 4: job 2 lists itself as a successor"),
        (
            SMALL.replace("3 2 1 1 4", "3 2 1 2 4"),
            "line 5: job 2 has unknown successor 5 (job 2 starts on line 4: does its successor",
        ),
        (SMALL.replace("0 0 0 0\n", "0 0 0 0 7\n"), "line 6: unexpected '7' after the last of 4"),
        (SMALL.replace("0 0 0 0\n", "0 0 0 1 1\n"), "dependency cycle"),
    ],
)
def test_errors_name_the_file_and_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_patterson(text, where="f.rcp")
    assert str(exc.value).startswith("f.rcp: ")
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_cli_solves_an_rcp_file_to_the_published_optimum(tmp_path: Path) -> None:
    g = parse_psplib(dataset_path("psplib/j30/j301_1.sm").read_text(), name="j301_1")
    rcp = tmp_path / "J301_1.RCP"
    rcp.write_text(to_patterson(g))
    assert read_graph(rcp).name == "J301_1"
    r = CliRunner().invoke(
        main, ["solve", str(rcp), "--json"], prog_name="opsched", catch_exceptions=False
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    # j301_1's published optimum under the file's capacities R1..R4
    assert (doc["status"], doc["makespan"], doc["lower_bound"]) == ("OPTIMAL", 43, 43)
    bad = tmp_path / "bad.rcp"
    bad.write_text(SMALL.replace("3 2 1 1 4", "3 2 1 1 9"))
    r = CliRunner().invoke(main, ["solve", str(bad)], prog_name="opsched")
    assert r.exit_code != 0
    assert "bad.rcp: line 4: job 2 has unknown successor 9" in r.output
    assert "Traceback" not in r.output

"""The STG reader: rand0000 in detail, every file of the 50/100/300 sets against its header."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from opsched.analysis import critical_path
from opsched.datasets import dataset_path, stg_optima
from opsched.errors import InputError
from opsched.importers import parse_stg, read_graph, read_stg

BAD = Path(__file__).resolve().parent.parent / "data" / "bad"
SIZES = (50, 100, 300)
_EDGES = re.compile(r"Edges\s*:\s*(\d+)\s*/\s*\d+\s*\(\+dummy edges\s*:\s*(\d+)\)")


def test_rand0000() -> None:
    g = read_stg(dataset_path("stg/50/rand0000.stg"))
    assert g.name == "rand0000"
    assert g.num_ops == 52
    assert g.names == [str(i) for i in range(52)]
    assert g.work == 262.0
    assert g.num_edges == 119  # 96 edges + 23 dummy edges, as the header says
    cp = critical_path(g)
    assert cp.length == 55.0
    assert cp.ops[0] == "0" and cp.ops[-1] == "51"
    assert sum(g[n].duration for n in cp.ops) == 55.0
    header = g.attrs["stg"]
    assert header["CP Length"] == 55.0
    assert header["Tasks"] == 50.0
    assert header["Edges"] == 96.0
    assert header["Parallelism"] == pytest.approx(4.763637)
    assert g.attrs["source"] == "stg"
    # spot checks against the file's lines
    assert g["0"].duration == 0.0 and g["0"].deps == ()
    assert g["1"].duration == 9.0 and g["1"].deps == ("0",)
    assert g["10"].duration == 2.0 and g["10"].deps == ("2", "6", "8")
    assert g["51"].duration == 0.0 and len(g["51"].deps) == 11
    assert all(dict(op.demands) == {"units": 1} for op in g.ops)
    assert all(op.output_bytes == 0 and op.workspace_bytes == 0 for op in g.ops)
    assert {op.kind for op in g.ops} == {"task"}
    assert read_graph(dataset_path("stg/50/rand0000.stg")).ops == g.ops


@pytest.mark.parametrize("size", SIZES)
def test_every_file_matches_its_header(size: int) -> None:
    files = sorted(dataset_path(f"stg/{size}").glob("*.stg"))
    assert len(files) == 180
    for path in files:
        text = path.read_text()
        g = parse_stg(text, name=path.stem, where=str(path))
        assert g.num_ops == size + 2, path.name
        header = g.attrs["stg"]
        assert header["Tasks"] == size, path.name
        assert critical_path(g).length == header["CP Length"], path.name
        m = _EDGES.search(text)
        assert m, path.name
        assert g.num_edges == int(m.group(1)) + int(m.group(2)), path.name


@cache
def _cp_and_work_50(name: str) -> tuple[float, float]:
    g = read_stg(dataset_path(f"stg/50/{name}.stg"))
    return critical_path(g).length, g.work


@pytest.mark.parametrize("procs", [2, 4, 8, 16])
def test_critical_path_below_published_optima(procs: int) -> None:
    optima = stg_optima(procs)
    assert len(optima) == 180
    for name, (lb, ub) in optima.items():
        cp, work = _cp_and_work_50(name)
        assert lb <= ub
        assert cp <= lb, name
        assert work / procs <= ub + 1e-9, name


def test_parse_stg_small_example() -> None:
    text = "# a comment\n\n2\n0 0 0\n1 3 1 0\n2 4 1 0\n3 0 2 1 2\n# CP Length : 4\n"
    g = parse_stg(text, name="tiny")
    assert g.name == "tiny"
    assert g.names == ["0", "1", "2", "3"]
    assert g.work == 7.0
    assert g["3"].deps == ("1", "2")
    assert g.attrs["stg"] == {"CP Length": 4.0}
    assert critical_path(g).length == 4.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no task count: the file has no data lines"),
        ("# only comments\n", "no task count"),
        ("2 3\n0 0 0\n", "line 1: expected the task count alone, got '2 3'"),
        ("x\n", "line 1: task count must be an integer, got 'x'"),
        ("-1\n", "line 1: task count must be >= 0, got -1"),
        ("2\n0 0 0\n1 3 1 0\n", "expected 4 task lines (n = 2 plus 2 dummy tasks), found 2"),
        ("1\n0 0 0\n1 3 1 0\n2 0 1 1\n3 0 1 2\n", "expected 3 task lines"),
        ("1\n0 0 0\n1 3\n2 0 1 1\n", "line 3: expected 'id time num_preds preds...'"),
        ("1\n0 0 0\n2 3 1 0\n2 0 1 1\n", "line 3: task id 2 out of order (expected 1)"),
        ("1\n0 0 0\n1 3.5 1 0\n2 0 1 1\n", "line 3: processing time must be an integer, got '3.5'"),
        ("1\n0 0 0\n1 -3 1 0\n2 0 1 1\n", "line 3: processing time must be >= 0, got -3"),
        ("1\n0 0 0\n1 3 x 0\n2 0 1 1\n", "line 3: predecessor count must be an integer"),
        ("1\n0 0 0\n1 3 2 0\n2 0 1 1\n", "line 3: task 1 declares 2 predecessors but lists 1"),
        ("1\n0 0 0\n1 3 1 9\n2 0 1 1\n", "line 3: task 1 has unknown predecessor 9"),
        ("1\n0 0 0\n1 3 1 a\n2 0 1 1\n", "line 3: predecessor id must be an integer, got 'a'"),
        ("1\n0 0 0\n1 3 1 1\n2 0 1 1\n", "line 3: op '1': op depends on itself"),
        ("1\n0 0 0\n1 3 2 0 0\n2 0 1 1\n", "line 3: op '1': dependency '0' is listed twice"),
        ("1\n0 0 1 2\n1 3 1 0\n2 0 1 1\n", "dependency cycle: "),
    ],
)
def test_parse_stg_errors(text: str, message: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_stg(text, where="f.stg")
    assert message in str(exc.value)
    assert str(exc.value).startswith("f.stg: ")
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("truncated.stg", "expected 5 task lines (n = 3 plus 2 dummy tasks), found 3 (truncated"),
        ("non_integer_time.stg", "line 3: processing time must be an integer, got '3.5'"),
        ("pred_count_mismatch.stg", "line 4: task 2 declares 2 predecessors but lists 1"),
        ("unknown_pred.stg", "line 4: task 2 has unknown predecessor 7"),
    ],
)
def test_read_bad_stg_files(name: str, message: str) -> None:
    with pytest.raises(InputError) as exc:
        read_stg(BAD / name)
    assert message in str(exc.value)
    assert str(exc.value).startswith(f"{BAD / name}: ")


def test_header_overflow_is_read() -> None:
    g = read_stg(BAD / "header_overflow.stg")
    assert g.num_ops == 4
    # a non-finite header value is dropped (it could not be written back as JSON)
    assert "CP Length" not in g.attrs["stg"]


def test_byte_order_mark(tmp_path: Path) -> None:
    # an editor on Windows may save one; read as the file without it, not as a bad count
    src = dataset_path("stg/50/rand0000.stg")
    p = tmp_path / "bom.stg"
    p.write_bytes(b"\xef\xbb\xbf" + src.read_bytes())
    g, ref = read_stg(p), read_stg(src)
    assert g.num_ops == ref.num_ops == 52
    assert [op.deps for op in g.ops] == [op.deps for op in ref.ops]


def test_both_random_seeds_of_the_footer_are_kept() -> None:
    # the precedence and the processing-time generators each print a "Random Seed"; the
    # second had overwritten the first
    from opsched.datasets import dataset_path
    from opsched.importers import read_stg

    meta = read_stg(dataset_path("stg/50") / "rand0000.stg").attrs["stg"]
    assert (meta["Random Seed"], meta["Random Seed #2"]) == (28549, 28548)

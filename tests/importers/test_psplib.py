"""The PSPLIB .sm reader: j301_1 in detail, all 480 J30 files against the known optima."""

from __future__ import annotations

from pathlib import Path

import pytest

from opsched.analysis import critical_path
from opsched.datasets import dataset_path, psplib_optima
from opsched.errors import InputError
from opsched.importers import parse_psplib, read_graph, read_psplib

BAD = Path(__file__).resolve().parent.parent / "data" / "bad"

SMALL = """\
jobs (incl. supersource/sink ):  4
************************************************************************
PRECEDENCE RELATIONS:
jobnr.    #modes  #successors   successors
   1        1          2           2   3
   2        1          1           4
   3        1          1           4
   4        1          0
************************************************************************
REQUESTS/DURATIONS:
jobnr. mode duration  R 1  R 2
------------------------------------------------------------------------
  1      1     0       0    0
  2      1     3       2    1
  3      1     5       1    2
  4      1     0       0    0
************************************************************************
RESOURCEAVAILABILITIES:
  R 1  R 2
    3    2
************************************************************************
"""


def test_j301_1() -> None:
    g = read_psplib(dataset_path("psplib/j30/j301_1.sm"))
    assert g.name == "j301_1"
    assert g.num_ops == 32
    assert g.names == [str(i) for i in range(1, 33)]
    assert dict(g.resources) == {"R1": 12, "R2": 13, "R3": 4, "R4": 12}
    job2 = g["2"]
    assert job2.duration == 8.0
    assert dict(job2.demands) == {"R1": 4, "R2": 0, "R3": 0, "R4": 0}
    assert job2.deps == ("1",)
    assert job2.units == 0  # PSPLIB jobs demand no compute units
    assert job2.kind == "job"
    # successors "2 3 4" of job 1 become deps of 2, 3 and 4; job 2's successors 6, 11, 15
    assert g.successors("1") == ["2", "3", "4"]
    assert g.successors("2") == ["6", "11", "15"]
    assert g["1"].duration == 0.0 and g["32"].duration == 0.0
    assert g.successors("32") == []
    # the header's MPM-Time is the critical path
    assert critical_path(g).length == 38.0
    assert g.attrs == {"source": "psplib"}
    assert read_graph(dataset_path("psplib/j30/j301_1.sm")).ops == g.ops


def test_all_j30_files_parse_and_stay_below_the_optimum() -> None:
    optima = psplib_optima()
    assert len(optima) == 480
    assert optima["j301_1"] == 43
    files = sorted(dataset_path("psplib/j30").glob("*.sm"))
    assert len(files) == 480
    assert {f.stem for f in files} == set(optima)
    for path in files:
        g = parse_psplib(path.read_text(), name=path.stem, where=str(path))
        assert g.num_ops == 32, path.name
        assert sorted(g.resources) == ["R1", "R2", "R3", "R4"], path.name
        cp = critical_path(g).length
        assert 0 < cp <= optima[path.stem], path.name
        for op in g.ops:
            for r, amount in op.demands.items():
                assert amount <= g.resources[r], (path.name, op.name, r)


def test_parse_small() -> None:
    g = parse_psplib(SMALL, name="small")
    assert g.names == ["1", "2", "3", "4"]
    assert g["4"].deps == ("2", "3")
    assert dict(g["3"].demands) == {"R1": 1, "R2": 2}
    assert dict(g.resources) == {"R1": 3, "R2": 2}
    assert g.work == 8.0
    assert critical_path(g).length == 5.0


def _replace_line(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "missing section 'PRECEDENCE RELATIONS'"),
        (SMALL.split("REQUESTS")[0], "missing section 'REQUESTS/DURATIONS' (truncated"),
        (SMALL.split("RESOURCEAVAIL")[0], "missing section 'RESOURCEAVAILABILITIES'"),
        (SMALL.replace("jobs (incl. supersource/sink ):  4\n", ""), "missing 'jobs (incl."),
        (
            SMALL.replace(":  4\n", ":  x\n"),
            "line 1: job count must be an integer, got 'x'",
        ),
        (SMALL.replace(":  4\n", ":  5\n"), "precedence table has 4 of 5 jobs (truncated?)"),
        (SMALL.replace(":  4\n", ":  0\n"), "line 1: the job count must be at least 1, got 0"),
        (SMALL.rsplit("    3    2", 1)[0], "missing resource capacities (truncated file?)"),
        (SMALL.replace("    3    2", "    3"), "line 20: 1 capacities for resources ['R1', 'R2']"),
        (SMALL.replace("    3    2", "    3   -2"), "line 20: capacity must be >= 0, got -2"),
        (
            _replace_line(
                SMALL, "   2        1          1           4", "   2        2          1  4"
            ),
            "line 6: job 2 has 2 modes (single-mode only)",
        ),
        (
            _replace_line(SMALL, "   2        1          1           4", "   2  1  2  4"),
            "line 6: job 2 declares 2 successors but lists 1",
        ),
        (
            _replace_line(SMALL, "   2        1          1           4", "   2  1  1  9"),
            "line 6: job 2 has unknown successor 9",
        ),
        (
            _replace_line(SMALL, "   2        1          1           4", "   2  1  1  2"),
            "line 6: job 2 lists itself as a successor",
        ),
        (
            _replace_line(SMALL, "   3        1          1           4", "   4  1  1  4"),
            "line 7: expected job 3 in the precedence table",
        ),
        (
            _replace_line(SMALL, "  2      1     3       2    1", "  2      1     3       2"),
            "line 14: expected job, mode, duration and 2 requests",
        ),
        (
            _replace_line(SMALL, "  2      1     3       2    1", "  2      1     3.5     2    1"),
            "line 14: duration must be an integer, got '3.5'",
        ),
        (
            _replace_line(SMALL, "   4        1          0", "   4        1          1  1"),
            "dependency cycle: 2 -> 4 -> 1 -> 2",
        ),
    ],
)
def test_parse_psplib_errors(text: str, message: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_psplib(text, where="f.sm")
    assert message in str(exc.value)
    assert str(exc.value).startswith("f.sm: ")
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("truncated.sm", "missing section 'REQUESTS/DURATIONS' (truncated"),
        ("non_integer.sm", "line 18: duration must be an integer, got '5.5'"),
    ],
)
def test_read_bad_sm_files(name: str, message: str) -> None:
    with pytest.raises(InputError) as exc:
        read_psplib(BAD / name)
    assert str(exc.value).startswith(f"{BAD / name}: ")
    assert message in str(exc.value)


def test_truncated_after_resource_header() -> None:
    text = SMALL.split("  R 1  R 2\n    3    2")[0]
    assert text.endswith("RESOURCEAVAILABILITIES:\n")
    with pytest.raises(InputError, match="truncated"):
        parse_psplib(text, where="f.sm")


def test_self_successor_error_names_the_precedence_line() -> None:
    text = _replace_line(SMALL, "   2        1          1           4", "   2  1  1  2")
    with pytest.raises(InputError) as exc:
        parse_psplib(text, where="f.sm")
    assert str(exc.value).startswith("f.sm: line 6: ")


def _with_nonrenewable(requests: tuple[int, int], capacity: int) -> str:
    """SMALL with one nonrenewable resource N 1: jobs 2 and 3 request ``requests``."""
    text = SMALL.replace("R 1  R 2\n---", "R 1  R 2  N 1\n---")
    text = text.replace(
        "  2      1     3       2    1\n", f"  2      1     3       2    1  {requests[0]}\n"
    )
    text = text.replace(
        "  3      1     5       1    2\n", f"  3      1     5       1    2  {requests[1]}\n"
    )
    text = text.replace("  1      1     0       0    0\n", "  1      1     0       0    0  0\n")
    text = text.replace("  4      1     0       0    0\n", "  4      1     0       0    0  0\n")
    return text.replace("  R 1  R 2\n    3    2\n", f"  R 1  R 2  N 1\n    3    2  {capacity}\n")


def test_nonrenewable_resource_within_its_total_is_left_out() -> None:
    # 4 + 5 = 9 <= 9: any schedule keeps the total, so the graph only has R1 and R2
    g = parse_psplib(_with_nonrenewable((4, 5), 9))
    assert dict(g.resources) == {"R1": 3, "R2": 2}
    assert dict(g["3"].demands) == {"R1": 1, "R2": 2}


def test_nonrenewable_resource_overdrawn_has_no_schedule() -> None:
    # 4 + 6 = 10 > 9: the jobs cannot all run, whatever their order (was: read as renewable)
    with pytest.raises(
        InputError,
        match=r"line 20: no schedule exists: .* request 10 of the "
        r"nonrenewable resource N1 in all, its capacity is 9",
    ):
        parse_psplib(_with_nonrenewable((4, 6), 9))


def test_resource_names_without_spaces_and_no_rule_line() -> None:
    text = SMALL.replace("  R 1  R 2\n    3", "  R1  R2\n    3").replace("-" * 72 + "\n", "", 1)
    g = parse_psplib(text)
    assert dict(g.resources) == {"R1": 3, "R2": 2}
    assert g["3"].duration == 5.0 and dict(g["2"].demands) == {"R1": 2, "R2": 1}


def test_bad_resource_header_is_named() -> None:
    text = SMALL.replace("  R 1  R 2\n    3", "  R 1  R x\n    3")
    with pytest.raises(InputError, match=r"line 19: expected resource names .* 'R 1  R x'"):
        parse_psplib(text)


def test_duplicate_successor_names_the_precedence_line() -> None:
    text = SMALL.replace(
        "   1        1          2           2   3", "   1        1          2           2   2"
    )
    with pytest.raises(InputError, match=r"^<sm>: line 5: job 1 lists successor 2 twice$"):
        parse_psplib(text)


def test_byte_order_mark(tmp_path: Path) -> None:
    p = tmp_path / "small.sm"
    p.write_bytes(b"\xef\xbb\xbf" + SMALL.encode())
    assert read_psplib(p).num_ops == 4


def test_request_columns_follow_their_own_header() -> None:
    # the requests' header may list the resources in another order than the availabilities:
    # job 2's "2 1" under "R 2  R 1" is R1 = 1, R2 = 2 (it was read as R1 = 2, R2 = 1)
    text = SMALL.replace("jobnr. mode duration  R 1  R 2", "jobnr. mode duration  R 2  R 1")
    g = parse_psplib(text)
    assert dict(g["2"].demands) == {"R1": 1, "R2": 2}
    assert dict(g["3"].demands) == {"R1": 2, "R2": 1}
    bad = SMALL.replace("jobnr. mode duration  R 1  R 2", "jobnr. mode duration  R 1  R 3")
    with pytest.raises(InputError, match=r"request columns \['R1', 'R3'\] are not the resources"):
        parse_psplib(bad)


def test_more_jobs_than_the_header_counts_is_an_error() -> None:
    # a header of 3 jobs over tables of 4: the fourth job was dropped without a word
    text = SMALL.replace("supersource/sink ):  4", "supersource/sink ):  3")
    with pytest.raises(InputError, match=r"line 8: the precedence table lists more jobs than"):
        parse_psplib(text)


HEADED = SMALL.replace(
    "jobs (incl. supersource/sink ):  4\n",
    "jobs (incl. supersource/sink ):  4\nRESOURCES\n  - renewable                 :  2   R\n"
    "  - nonrenewable              :  0   N\n  - doubly constrained        :  0   D\n",
)


def test_the_header_resource_counts_agree_with_the_tables() -> None:
    assert dict(parse_psplib(HEADED).resources) == {"R1": 3, "R2": 2}


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        # these counts had not been read: a header of 4 renewable resources over tables of 2
        # had been read as 2 without a word
        (":  2   R", ":  4   R", "line 3: 4 renewable resources, but RESOURCEAVAILABILITIES "
         "lists ['R1', 'R2']"),
        (":  0   N", ":  2   N", "line 4: 2 nonrenewable resources, but RESOURCEAVAILABILITIES "
         "lists []"),
        (":  0   D", ":  1   D", "line 5: 1 doubly constrained resources, but "
         "RESOURCEAVAILABILITIES lists []"),
        (":  2   R", ":  x   R", "line 3: renewable resource count must be an integer, got 'x'"),
        (":  2   R", ":", "line 3: renewable resource count must be an integer, got ''"),
    ],
)  # fmt: skip
def test_a_header_resource_count_the_tables_disagree_with_is_refused(
    old: str, new: str, message: str
) -> None:
    with pytest.raises(InputError) as exc:
        parse_psplib(_replace_line(HEADED, old, new), where="f.sm")
    assert str(exc.value) == f"f.sm: {message}"


def test_a_nonrenewable_resource_the_header_counts_is_read() -> None:
    text = _with_nonrenewable((4, 5), 9)
    header = (
        "RESOURCES\n  - renewable : 2 R\n  - nonrenewable : 1 N\n  - doubly constrained : 0 D\n"
    )
    text = text.replace("jobs (incl. supersource/sink ):  4\n",
                        "jobs (incl. supersource/sink ):  4\n" + header)  # fmt: skip
    assert dict(parse_psplib(text).resources) == {"R1": 3, "R2": 2}
    with pytest.raises(InputError, match=r"line 4: 0 nonrenewable resources, but .* \['N1'\]$"):
        parse_psplib(text.replace(": 1 N", ": 0 N"))


def test_a_resource_listed_twice_is_refused() -> None:
    # "R 1  R 1" had kept one resource R1 with the second column's capacity (2) and
    # requests, the first column's dropped without a word
    text = SMALL.replace("R 1  R 2", "R 1  R 1")
    with pytest.raises(InputError, match=r"^<sm>: line 19: resource R1 is listed twice$"):
        parse_psplib(text)

"""The opsched-graph/1 JSON format: round trips, program form, validation and file errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opsched.errors import GraphError, InputError
from opsched.ir import (
    DEP_KINDS,
    GRAPH_FORMAT,
    Dependency,
    Op,
    OpGraph,
    derive_dependencies,
    graph_from_dict,
    graph_to_dict,
    read_graph_json,
    write_graph_json,
)
from opsched.ir.jsonio import load_json_file

BAD = Path(__file__).resolve().parent.parent / "data" / "bad"


def assert_same_graph(a: OpGraph, b: OpGraph) -> None:
    assert a.name == b.name
    assert a.persistent_bytes == b.persistent_bytes
    assert dict(a.resources) == dict(b.resources)
    assert dict(a.attrs) == dict(b.attrs)
    assert a.ops == b.ops
    assert a.pred_idx.tolist() == b.pred_idx.tolist()


def full_graph() -> OpGraph:
    return OpGraph(
        (
            Op("in", 1, output_bytes=4096, kind="input"),
            Op(
                "conv",
                2.5,
                deps=("in",),
                output_bytes=2**61,
                workspace_bytes=128,
                demands={"units": 2, "dma": 1},
                kind="conv2d",
                attrs={"shape": [1, 3, 224, 224], "dtype": "f16"},
            ),
            Op("free", 0, demands={}),
            Op("out", 1e-3, deps=("conv", "free"), output=True),
        ),
        name="full",
        persistent_bytes=1 << 20,
        resources={"dma": 2},
        attrs={"source": "test", "nested": {"k": [1, 2.5, None, True]}},
    )


# --------------------------------------------------------------------------------- to_dict


def test_graph_to_dict_exact_document() -> None:
    g = OpGraph((Op("a", 2, output_bytes=8), Op("b", 1.5, deps=("a",), output=True)), name="t")
    assert graph_to_dict(g) == {
        "format": "opsched-graph/1",
        "name": "t",
        "persistent_bytes": 0,
        "ops": [
            {"name": "a", "duration": 2, "output_bytes": 8},
            {"name": "b", "duration": 1.5, "deps": ["a"], "output": True},
        ],
    }
    assert GRAPH_FORMAT == "opsched-graph/1"
    # integral durations are written as JSON integers
    assert isinstance(graph_to_dict(g)["ops"][0]["duration"], int)
    assert g.to_dict() == graph_to_dict(g)


def test_graph_to_dict_keeps_non_default_fields() -> None:
    doc = graph_to_dict(full_graph())
    assert doc["resources"] == {"dma": 2}
    assert doc["attrs"]["source"] == "test"
    conv = doc["ops"][1]
    assert conv == {
        "name": "conv",
        "duration": 2.5,
        "deps": ["in"],
        "output_bytes": 2**61,
        "workspace_bytes": 128,
        "demands": {"units": 2, "dma": 1},
        "kind": "conv2d",
        "attrs": {"shape": [1, 3, 224, 224], "dtype": "f16"},
    }
    assert doc["ops"][2] == {"name": "free", "duration": 0, "demands": {}}


# --------------------------------------------------------------------------------- round trips


def test_round_trip_through_dict_and_json_text() -> None:
    g = full_graph()
    assert_same_graph(graph_from_dict(graph_to_dict(g)), g)
    text = json.dumps(graph_to_dict(g), allow_nan=False)
    assert_same_graph(graph_from_dict(json.loads(text)), g)
    assert_same_graph(OpGraph.from_dict(g.to_dict()), g)


def test_round_trip_through_file(tmp_path: Path) -> None:
    g = full_graph()
    path = tmp_path / "g.json"
    write_graph_json(g, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]  # no temp file left
    assert json.loads(path.read_text())["format"] == "opsched-graph/1"
    assert_same_graph(read_graph_json(path), g)
    # writing again replaces the file
    write_graph_json(g.replace_ops(g.ops[:1]), path)
    assert read_graph_json(path).names == ["in"]


def test_write_into_missing_folder_is_input_error(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "g.json"
    with pytest.raises(InputError, match="cannot write"):
        write_graph_json(full_graph(), target)
    assert not target.exists()


names = st.text(alphabet="abcdefgh_0123456789", min_size=1, max_size=6)
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.text(max_size=5)
)
# up to 8 ops: totals stay within the graph's limits (bytes 2^62, durations 2^53)
durations = st.one_of(
    st.integers(0, 2**49),
    st.floats(0, 2**49, allow_nan=False, allow_infinity=False).filter(
        lambda d: d == 0 or d >= 1e-300
    ),
)
sizes = st.integers(0, 2**57)


@st.composite
def graphs(draw: st.DrawFn) -> OpGraph:
    op_names = draw(st.lists(names, min_size=0, max_size=8, unique=True))
    ops = []
    for i, name in enumerate(op_names):
        deps = draw(st.lists(st.sampled_from(op_names[:i]), unique=True) if i else st.just([]))
        demands = draw(
            st.one_of(
                st.just({"units": 1}),
                st.dictionaries(st.sampled_from(["units", "dma", "R1"]), sizes, max_size=3),
            )
        )
        ops.append(
            Op(
                name,
                draw(durations),
                deps=tuple(deps),
                output_bytes=draw(sizes),
                workspace_bytes=draw(sizes),
                demands=demands,
                kind=draw(st.none() | st.sampled_from(["conv2d", "matmul"])),
                output=draw(st.booleans()),
                attrs=draw(st.dictionaries(names, json_scalars, max_size=2)),
            )
        )
    # shuffle the file order: deps may point forward
    order = draw(st.permutations(range(len(ops))))
    return OpGraph(
        tuple(ops[i] for i in order),
        name=draw(names),
        persistent_bytes=draw(sizes),
        resources=draw(st.dictionaries(st.sampled_from(["dma", "R1"]), sizes, max_size=2)),
        attrs=draw(st.dictionaries(names, json_scalars, max_size=2)),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_round_trip_property(g: OpGraph) -> None:
    text = json.dumps(graph_to_dict(g), allow_nan=False)
    back = graph_from_dict(json.loads(text))
    assert_same_graph(back, g)
    assert back.work == g.work
    assert graph_to_dict(back) == graph_to_dict(g)


# --------------------------------------------------------------------------------- program form


def test_program_form_derives_raw_war_waw_and_keeps_explicit_deps() -> None:
    # x = a(); y = b(x); x = c(); d(x, y); e() -- d also lists a explicitly, e lists b
    doc = {
        "ops": [
            {"name": "a", "duration": 1, "writes": ["x"]},
            {"name": "b", "duration": 1, "reads": ["x"], "writes": ["y"]},
            {"name": "c", "duration": 1, "writes": ["x"]},
            {"name": "d", "duration": 1, "reads": ["x", "y"], "deps": ["a"]},
            {"name": "e", "duration": 1, "deps": ["b"]},
        ]
    }
    g = graph_from_dict(doc)
    deps = {op.name: op.deps for op in g.ops}
    assert deps == {
        "a": (),
        "b": ("a",),  # RAW on x
        "c": ("b", "a"),  # WAR on x (b read it), then WAW on x (a wrote it)
        "d": ("a", "c", "b"),  # explicit a first, then RAW on x (c) and on y (b)
        "e": ("b",),  # explicit only
    }
    assert g["c"].reads == () and g["c"].writes == ("x",)
    assert g.num_edges == 7
    # the derived edges survive a round trip unchanged
    back = graph_from_dict(graph_to_dict(g))
    assert {op.name: op.deps for op in back.ops} == deps
    assert back.ops == g.ops


def test_program_form_explicit_dep_already_derived_is_not_duplicated() -> None:
    g = graph_from_dict(
        {
            "ops": [
                {"name": "w", "writes": ["t"]},
                {"name": "r", "reads": ["t"], "deps": ["w"]},
            ]
        }
    )
    assert g["r"].deps == ("w",)


def test_program_form_read_and_write_same_buffer() -> None:
    # x += 1 twice: the second update waits for the first (RAW, WAW), never for itself
    g = graph_from_dict(
        {
            "ops": [
                {"name": "init", "writes": ["x"]},
                {"name": "inc1", "reads": ["x"], "writes": ["x"]},
                {"name": "inc2", "reads": ["x"], "writes": ["x"]},
            ]
        }
    )
    assert g["inc1"].deps == ("init",)
    assert g["inc2"].deps == ("inc1",)


def test_program_form_cycle_with_explicit_dep() -> None:
    with pytest.raises(GraphError, match="dependency cycle"):
        graph_from_dict(
            {
                "ops": [
                    {"name": "a", "writes": ["x"], "deps": ["b"]},
                    {"name": "b", "reads": ["x"]},
                ]
            }
        )


def test_raw_only_program_graph_round_trips_without_war_waw(tmp_path: Path) -> None:
    from opsched.transforms import derive_deps

    doc = {
        "ops": [
            {"name": "A", "writes": ["x"]},
            {"name": "B", "reads": ["x"], "writes": ["y"]},
            {"name": "C", "writes": ["x"]},
            {"name": "D", "reads": ["x", "y"]},
        ]
    }
    full = graph_from_dict(doc)
    assert full["C"].deps == ("B", "A")  # WAR on x from B, WAW from A
    raw = derive_deps(full, kinds=["RAW"])
    assert raw["C"].deps == () and raw["D"].deps == ("C", "B")
    out = tmp_path / "raw.json"
    write_graph_json(raw, out)
    assert json.loads(out.read_text())["derive_deps"] is False
    back = read_graph_json(out)
    assert [op.deps for op in back.ops] == [op.deps for op in raw.ops]
    assert [op.reads for op in back.ops] == [op.reads for op in raw.ops]
    # a hand-written file still derives, and the flag must be a bool
    assert graph_from_dict({**doc, "derive_deps": True})["C"].deps == ("B", "A")
    with pytest.raises(GraphError, match="derive_deps must be true or false"):
        graph_from_dict({**doc, "derive_deps": "no"})


def test_derive_dependencies_kinds() -> None:
    reads = [[], ["x"], [], ["x", "y"]]
    writes = [["x"], ["y"], ["x"], []]
    got = derive_dependencies(reads, writes)
    assert got == [
        Dependency(0, 1, "RAW", "x"),
        Dependency(1, 2, "WAR", "x"),
        Dependency(0, 2, "WAW", "x"),
        Dependency(2, 3, "RAW", "x"),
        Dependency(1, 3, "RAW", "y"),
    ]
    assert DEP_KINDS == ("RAW", "WAR", "WAW")
    assert [d.kind for d in derive_dependencies(reads, writes, kinds=("RAW",))] == ["RAW"] * 3
    assert derive_dependencies(reads, writes, kinds=("WAR", "WAW")) == [
        Dependency(1, 2, "WAR", "x"),
        Dependency(0, 2, "WAW", "x"),
    ]
    assert derive_dependencies([], []) == []
    with pytest.raises(ValueError, match="unknown dependency kinds"):
        derive_dependencies(reads, writes, kinds=("RAR",))
    with pytest.raises(ValueError):
        derive_dependencies([[]], [])  # lengths must match


def test_derive_dependencies_war_waits_for_every_reader() -> None:
    got = derive_dependencies([[], ["b"], ["b"], []], [["b"], [], [], ["b"]])
    assert [(d.src, d.dst, d.kind) for d in got] == [
        (0, 1, "RAW"),
        (0, 2, "RAW"),
        (1, 3, "WAR"),
        (2, 3, "WAR"),
        (0, 3, "WAW"),
    ]


# --------------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "a graph document must be a JSON object, got list"),
        ("x", "a graph document must be a JSON object, got str"),
        ({"format": "opsched-graph/2", "ops": []}, "format: unsupported format 'opsched-graph/2'"),
        ({"format": None, "ops": []}, "format: unsupported format None"),
        ({"ops": [], "colour": 1}, "unknown top-level field(s) ['colour']"),
        ({"name": "x"}, "missing required field 'ops'"),
        ({"ops": {"a": {}}}, "'ops' must be a list, got dict"),
        ({"ops": [3]}, "ops[0]: must be an object, got int"),
        ({"ops": [{"duration": 1}]}, "ops[0]: missing required field 'name'"),
        ({"ops": [{"name": ""}]}, "ops[0]: op name must be a non-empty string"),
        ({"ops": [{"name": 7}]}, "ops[0]: op name must be a non-empty string, got 7"),
        (
            {"ops": [{"name": "a", "colour": "red", "size": 1}]},
            "op 'a' (ops[0]): unknown field(s) ['colour', 'size']",
        ),
        ({"ops": [{"name": "a", "deps": "b"}]}, "op 'a' (ops[0]): deps must be a list of names"),
        ({"ops": [{"name": "a", "deps": None}]}, "op 'a' (ops[0]): deps must be a list of names"),
        ({"ops": [{"name": "a", "reads": "x"}]}, "op 'a' (ops[0]): reads must be a list"),
        ({"ops": [{"name": "a", "demands": [1]}]}, "op 'a' (ops[0]): demands must be an object"),
        ({"ops": [{"name": "a", "demands": None}]}, "op 'a' (ops[0]): demands must be an object"),
        (
            {"ops": [{"name": "a"}, {"name": "b", "duration": -1}]},
            "op 'b' (ops[1]): duration must be >= 0, got -1",
        ),
        (
            {"ops": [{"name": "a", "duration": "3"}]},
            "op 'a' (ops[0]): duration must be a number, got '3'",
        ),
        (
            {"ops": [{"name": "a", "duration": True}]},
            "op 'a' (ops[0]): duration must be a number, got True",
        ),
        (
            {"ops": [{"name": "a", "output_bytes": 2**63}]},
            "op 'a' (ops[0]): output_bytes must be <= 2^62, got 9223372036854775808",
        ),
        (
            {"ops": [{"name": "a", "workspace_bytes": 0.5}]},
            "op 'a' (ops[0]): workspace_bytes must be an integer, got 0.5",
        ),
        (
            {"ops": [{"name": "a", "demands": {"units": -2}}]},
            "op 'a' (ops[0]): demand of 'units' must be >= 0, got -2",
        ),
        ({"ops": [{"name": "a", "output": "yes"}]}, "op 'a' (ops[0]): output must be true"),
        ({"ops": [{"name": "a", "kind": 1}]}, "op 'a' (ops[0]): kind must be a string, got 1"),
        ({"ops": [{"name": "a", "deps": ["a"]}]}, "op 'a' (ops[0]): op depends on itself"),
        (
            {"ops": [{"name": "a", "deps": ["b", "b"]}, {"name": "b"}]},
            "op 'a' (ops[0]): dependency 'b' is listed twice",
        ),
        ({"ops": [{"name": "a"}, {"name": "a"}]}, "op 'a': duplicate op name (ops[0] and ops[1])"),
        ({"ops": [{"name": "a", "deps": ["zz"]}]}, "op 'a': unknown dependency 'zz'"),
        (
            {"ops": [{"name": "a", "deps": ["b"]}, {"name": "b", "deps": ["a"]}]},
            "dependency cycle: ",
        ),
        ({"ops": [], "name": 5}, "name: graph name must be a string, got 5"),
        ({"ops": [], "resources": [1]}, "resources: resources must be an object"),
        ({"ops": [], "attrs": "x"}, "attrs: attrs must be an object"),
        ({"ops": [], "persistent_bytes": -5}, "persistent_bytes must be >= 0, got -5"),
        ({"ops": [], "resources": {"dma": 1.5}}, "capacity of resource 'dma' must be an integer"),
    ],
)
def test_graph_from_dict_rejects(doc: object, message: str) -> None:
    with pytest.raises(GraphError) as exc:
        graph_from_dict(doc)  # type: ignore[arg-type]
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_graph_from_dict_defaults() -> None:
    g = graph_from_dict({"ops": [{"name": "a"}]})
    assert g.name == "graph" and g.persistent_bytes == 0
    assert g["a"].duration == 0.0 and dict(g["a"].demands) == {"units": 1}
    assert graph_from_dict({"ops": []}).num_ops == 0
    # integral floats are accepted for sizes
    assert graph_from_dict({"ops": [{"name": "a", "output_bytes": 8.0}]})["a"].output_bytes == 8


# --------------------------------------------------------------------------------- files


def test_read_graph_json_errors_name_the_file() -> None:
    cases = {
        "malformed.json": "malformed.json:1:23: invalid JSON: Expecting ',' delimiter",
        "truncated.json": "truncated.json:1:53: invalid JSON: Unterminated string",
        "empty.json": "empty.json: file is empty",
        "list.json": "list.json: a graph document must be a JSON object, got list",
        "nan_duration.json": "nan_duration.json: op 'nan_op' (ops[1]): duration must be finite",
        "infinity_duration.json": "op 'inf_op' (ops[1]): duration must be finite, got inf",
        "non_utf8.json": "non_utf8.json: not UTF-8 text (byte 22)",
        "duplicate_name.json": "duplicate_name.json: op 'a': duplicate op name",
        "unknown_dep.json": "unknown_dep.json: op 'b': unknown dependency 'ghost'",
        "cycle3.json": "cycle3.json: dependency cycle: b -> c -> a -> b",
    }
    for name, fragment in cases.items():
        with pytest.raises((InputError, GraphError)) as exc:
            read_graph_json(BAD / name)
        assert fragment in str(exc.value), name
        assert str(BAD / name) in str(exc.value), name


def test_load_json_file(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text('{"a": [1, 2.5, null]}')
    assert load_json_file(p) == {"a": [1, 2.5, None]}
    # NaN/Infinity parse as floats; the graph checks reject them and name the op
    p.write_text('{"a": -Infinity}')
    assert load_json_file(p) == {"a": -math.inf}
    p.write_text("   \n\t ")
    with pytest.raises(InputError, match="file is empty"):
        load_json_file(p)
    with pytest.raises(InputError, match="no such file"):
        load_json_file(tmp_path / "missing.json")
    with pytest.raises(InputError, match="is a directory"):
        load_json_file(tmp_path)


def test_json_nan_and_infinity_never_reach_a_graph(tmp_path: Path) -> None:
    for token in ("NaN", "Infinity", "-Infinity", "1e999"):
        p = tmp_path / "g.json"
        p.write_text('{"ops": [{"name": "a", "duration": ' + token + "}]}")
        with pytest.raises((InputError, GraphError)) as exc:
            read_graph_json(p)
        assert str(p) in str(exc.value)
        # every token parses as a float and is then rejected by the op check, naming the op
        assert "op 'a' (ops[0]): duration must be" in str(exc.value)
    assert math.isinf(json.loads("1e999"))


def test_large_graphs_are_written_compact_and_read_back_the_same(tmp_path, monkeypatch) -> None:
    # past INDENT_MAX_OPS ops the file is compact JSON (the indenting encoder is Python
    # code, several times slower); either way it reads back to the same graph
    from opsched.ir import jsonio
    from opsched.zoo import layered

    g = layered(50, seed=4)
    small, big = tmp_path / "small.json", tmp_path / "big.json"
    jsonio.write_graph_json(g, small)
    monkeypatch.setattr(jsonio, "INDENT_MAX_OPS", 49)
    jsonio.write_graph_json(g, big)
    assert small.read_text().count("\n") > 50 * 2 and big.read_text().count("\n") == 1
    for path in (small, big):
        back = jsonio.read_graph_json(path)
        assert jsonio.graph_to_dict(back) == jsonio.graph_to_dict(g)
    assert json.loads(small.read_text()) == json.loads(big.read_text())

"""OpGraph / Op construction, validation, CSR arrays and networkx interop."""

from __future__ import annotations

import itertools
import math
import re

import networkx as nx
import numpy as np
import pytest

from opsched.errors import GraphError, OpschedError
from opsched.ir import DEFAULT_DEMANDS, MAX_SIZE, Op, OpGraph
from opsched.ir.nx import from_networkx, to_networkx


def diamond() -> OpGraph:
    """a -> {b, c} -> d, deps of d listed as (c, b) to make file order observable."""
    return OpGraph(
        (
            Op("a", 2, output_bytes=8),
            Op("b", 3, deps=("a",)),
            Op("c", 1, deps=("a",)),
            Op("d", 4, deps=("c", "b")),
        ),
        name="diamond",
    )


def cycle_pairs(message: str) -> list[tuple[str, str]]:
    """The consecutive (earlier, later) pairs of the cycle a GraphError message shows."""
    m = re.fullmatch(r"dependency cycle: (.+)", message)
    assert m, message
    names = m.group(1).split(" -> ")
    assert names[0] == names[-1], f"cycle does not close: {message}"
    return list(itertools.pairwise(names))


# --------------------------------------------------------------------------------- Op fields


def test_op_defaults() -> None:
    op = Op("x")
    assert op.duration == 0.0
    assert op.deps == ()
    assert op.output_bytes == 0
    assert op.workspace_bytes == 0
    assert dict(op.demands) == {"units": 1} == dict(DEFAULT_DEMANDS)
    assert op.units == 1
    assert op.kind is None
    assert op.output is False
    assert dict(op.attrs) == {}
    assert op.reads == () and op.writes == ()


def test_op_normalises_numbers_and_sequences() -> None:
    op = Op("x", 3, deps=["a", "b"], output_bytes=16.0, demands={"units": 2.0, "dma": 1})
    assert op.duration == 3.0 and isinstance(op.duration, float)
    assert op.deps == ("a", "b")
    assert op.output_bytes == 16 and isinstance(op.output_bytes, int)
    assert op.demands == {"units": 2, "dma": 1}
    assert all(isinstance(v, int) for v in op.demands.values())
    assert op.units == 2
    assert Op("y", demands={"dma": 1}).units == 0


def test_op_accepts_limits() -> None:
    op = Op("x", float(MAX_SIZE), output_bytes=MAX_SIZE, workspace_bytes=MAX_SIZE)
    assert MAX_SIZE == 2**62
    assert op.duration == float(2**62)
    assert op.output_bytes == 2**62
    assert op.workspace_bytes == 2**62
    assert Op("z", demands={"units": MAX_SIZE}).units == 2**62
    assert Op("t", 0).duration == 0.0
    assert Op("u", 0.25).duration == 0.25


@pytest.mark.parametrize(
    ("duration", "fragment"),
    [
        (-1, "duration must be >= 0, got -1"),
        (-0.5, "duration must be >= 0, got -0.5"),
        (math.nan, "duration must be finite, got nan"),
        (math.inf, "duration must be finite, got inf"),
        (-math.inf, "duration must be finite, got -inf"),
        (True, "duration must be a number, got True"),
        (False, "duration must be a number, got False"),
        ("3", "duration must be a number, got '3'"),
        (None, "duration must be a number, got None"),
        ([1], "duration must be a number, got [1]"),
        (2**62 + 1, "duration must be <= 2^62"),
        (1e300, "duration must be <= 2^62"),
    ],
)
def test_op_rejects_bad_duration(duration: object, fragment: str) -> None:
    with pytest.raises(GraphError) as exc:
        Op("bad", duration)  # type: ignore[arg-type]
    assert fragment in str(exc.value)
    assert exc.value.where == "op 'bad'"
    assert "\n" not in str(exc.value)


def test_op_rejects_huge_integer_duration() -> None:
    with pytest.raises(GraphError, match=r"duration must be <= 2\^62"):
        Op("huge", 10**400)


@pytest.mark.parametrize("field", ["output_bytes", "workspace_bytes"])
@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (2**62 + 1, "must be <= 2^62"),
        (2**63, "must be <= 2^62"),
        (10**400, "must be <= 2^62"),
        (float(2**63), "must be <= 2^62"),
        (-1, "must be >= 0, got -1"),
        (1.5, "must be an integer, got 1.5"),
        (math.nan, "must be finite, got nan"),
        (math.inf, "must be finite, got inf"),
        (True, "must be an integer, got True"),
        ("8", "must be an integer, got '8'"),
        (None, "must be an integer, got None"),
    ],
)
def test_op_rejects_bad_size(field: str, value: object, fragment: str) -> None:
    with pytest.raises(GraphError) as exc:
        Op("bad", 1, **{field: value})  # type: ignore[arg-type]
    assert f"{field} {fragment}" in str(exc.value)
    assert exc.value.where == "op 'bad'"


@pytest.mark.parametrize(
    ("demands", "fragment"),
    [
        ({"units": -1}, "demand of 'units' must be >= 0, got -1"),
        ({"units": 1.5}, "demand of 'units' must be an integer, got 1.5"),
        ({"units": True}, "demand of 'units' must be an integer, got True"),
        ({"dma": "2"}, "demand of 'dma' must be an integer, got '2'"),
        ({"dma": 2**62 + 1}, "demand of 'dma' must be <= 2^62"),
        ({"": 1}, "resource names must be non-empty strings, got ''"),
        ({3: 1}, "resource names must be non-empty strings, got 3"),
        ([("units", 1)], "demands must be an object"),
        ("units", "demands must be an object"),
    ],
)
def test_op_rejects_bad_demands(demands: object, fragment: str) -> None:
    with pytest.raises(GraphError) as exc:
        Op("bad", 1, demands=demands)  # type: ignore[arg-type]
    assert fragment in str(exc.value)
    assert exc.value.where == "op 'bad'"


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"deps": "a"}, "deps must be a list of names, got 'a'"),
        ({"deps": 5}, "deps must be a list of names, got 5"),
        ({"deps": ("a", 3)}, "deps entries must be non-empty strings, got 3"),
        ({"deps": ("",)}, "deps entries must be non-empty strings, got ''"),
        ({"deps": ("a", "a")}, "dependency 'a' is listed twice"),
        ({"deps": ("bad",)}, "op depends on itself"),
        ({"reads": "x"}, "reads must be a list of names"),
        ({"writes": (None,)}, "writes entries must be non-empty strings, got None"),
        ({"kind": 3}, "kind must be a string, got 3"),
        ({"output": 1}, "output must be true or false, got 1"),
        ({"attrs": [1]}, "attrs must be an object, got [1]"),
    ],
)
def test_op_rejects_bad_fields(kwargs: dict, fragment: str) -> None:
    with pytest.raises(GraphError) as exc:
        Op("bad", 1, **kwargs)
    assert fragment in str(exc.value)
    assert exc.value.where == "op 'bad'"


@pytest.mark.parametrize("name", ["", None, 3, ("a",)])
def test_op_rejects_bad_name(name: object) -> None:
    with pytest.raises(GraphError, match="op name must be a non-empty string"):
        Op(name)  # type: ignore[arg-type]


def test_errors_are_opsched_errors_with_location() -> None:
    with pytest.raises(OpschedError) as exc:
        Op("x", -2)
    err = exc.value
    assert isinstance(err, GraphError)
    assert err.message == "duration must be >= 0, got -2"
    assert str(err) == "op 'x': duration must be >= 0, got -2"
    moved = err.located("model.json")
    assert isinstance(moved, GraphError)
    assert str(moved) == "model.json: op 'x': duration must be >= 0, got -2"


# --------------------------------------------------------------------------------- OpGraph


def test_graph_basic_properties() -> None:
    g = diamond()
    assert g.name == "diamond"
    assert g.num_ops == len(g) == 4
    assert g.num_edges == 4
    assert g.work == 10.0
    assert g.names == ["a", "b", "c", "d"]
    assert [op.name for op in g] == g.names
    assert "c" in g and "z" not in g
    assert g["d"].deps == ("c", "b")
    assert g.index("c") == 2
    assert g.predecessors("d") == ["c", "b"]
    assert g.successors("a") == ["b", "c"]
    assert g.successors("d") == []
    assert g.consumers() == [[1, 2], [3], [3], []]
    assert g.summary() == "diamond: 4 ops, 4 edges, work 10"
    assert repr(g) == "OpGraph(diamond: 4 ops, 4 edges, work 10)"
    assert g.persistent_bytes == 0 and dict(g.resources) == {} and dict(g.attrs) == {}


def test_graph_unknown_lookup_raises_graph_error() -> None:
    g = diamond()
    with pytest.raises(GraphError, match="unknown op 'zz'"):
        g["zz"]
    with pytest.raises(GraphError, match="unknown op 'zz'"):
        g.index("zz")
    with pytest.raises(GraphError, match="unknown op 'zz'"):
        g.successors("zz")


def test_graph_arrays() -> None:
    g = OpGraph(
        (
            Op("a", 2, output_bytes=8, workspace_bytes=1, demands={"units": 1, "dma": 2}),
            Op("b", 0.5, deps=("a",), output_bytes=4, demands={"units": 2}),
        ),
        resources={"dma": 3},
    )
    assert g.durations.dtype == np.float64 and g.durations.tolist() == [2.0, 0.5]
    assert g.output_sizes.dtype == np.int64 and g.output_sizes.tolist() == [8, 4]
    assert g.workspace_sizes.tolist() == [1, 0]
    assert g.demand_array("units").tolist() == [1, 2]
    assert g.demand_array("dma").tolist() == [2, 0]
    assert g.demand_array("nothing").tolist() == [0, 0]
    assert g.resource_names() == ["units", "dma"]
    assert g.resources == {"dma": 3}


def test_csr_in_file_order() -> None:
    g = OpGraph(
        (
            Op("a", 1),
            Op("b", 1),
            Op("c", 1, deps=("b", "a")),
            Op("d", 1, deps=("a",)),
            Op("e", 1, deps=("d", "b", "c")),
        )
    )
    assert g.pred_ptr.tolist() == [0, 0, 0, 2, 3, 6]
    # predecessors in the order each op lists them
    assert g.pred_idx.tolist() == [1, 0, 0, 3, 1, 2]
    assert g.succ_ptr.tolist() == [0, 2, 4, 5, 6, 6]
    # successors of each op in file order of the consumer
    assert g.succ_idx.tolist() == [2, 3, 2, 4, 4, 4]
    for arr in (g.pred_ptr, g.pred_idx, g.succ_ptr, g.succ_idx):
        assert arr.dtype == np.int64
    assert g.num_edges == 6
    assert g.successors("a") == ["c", "d"]
    assert g.successors("b") == ["c", "e"]
    for i, op in enumerate(g.ops):
        preds = g.pred_idx[g.pred_ptr[i] : g.pred_ptr[i + 1]].tolist()
        assert [g.ops[j].name for j in preds] == list(op.deps)


def test_csr_of_empty_and_isolated_graphs() -> None:
    empty = OpGraph(())
    assert empty.num_ops == 0 and empty.num_edges == 0 and empty.work == 0.0
    assert empty.pred_ptr.tolist() == [0] and empty.succ_ptr.tolist() == [0]
    assert empty.pred_idx.tolist() == [] and empty.succ_idx.tolist() == []
    g = OpGraph((Op("a", 1), Op("b", 2)))
    assert g.pred_ptr.tolist() == [0, 0, 0] and g.succ_ptr.tolist() == [0, 0, 0]
    assert g.num_edges == 0 and g.work == 3.0


def test_deps_may_point_forward_in_file_order() -> None:
    g = OpGraph((Op("late", 1, deps=("early",)), Op("early", 2)))
    assert g.pred_idx.tolist() == [1]
    assert g.successors("early") == ["late"]


def test_graph_duplicate_name() -> None:
    with pytest.raises(GraphError) as exc:
        OpGraph((Op("a"), Op("b"), Op("a", 2)))
    assert str(exc.value) == "op 'a': duplicate op name (ops[0] and ops[2])"


def test_graph_unknown_dep() -> None:
    with pytest.raises(GraphError) as exc:
        OpGraph((Op("a"), Op("b", deps=("a", "ghost"))))
    assert str(exc.value) == "op 'b': unknown dependency 'ghost'"


def test_graph_self_dep() -> None:
    with pytest.raises(GraphError) as exc:
        OpGraph((Op("a"), Op("loop", deps=("loop",))))
    assert str(exc.value) == "op 'loop': op depends on itself"


def test_graph_two_cycle() -> None:
    with pytest.raises(GraphError) as exc:
        OpGraph((Op("a", deps=("b",)), Op("b", deps=("a",))))
    pairs = cycle_pairs(str(exc.value))
    assert sorted(pairs) == [("a", "b"), ("b", "a")]


def test_graph_three_cycle_message_in_data_flow_order() -> None:
    # data flow: a -> b -> c -> a
    ops = (Op("a", deps=("c",)), Op("b", deps=("a",)), Op("c", deps=("b",)))
    with pytest.raises(GraphError) as exc:
        OpGraph(ops)
    assert str(exc.value) == "dependency cycle: b -> c -> a -> b"
    by_name = {op.name: op for op in ops}
    for earlier, later in cycle_pairs(str(exc.value)):
        assert earlier in by_name[later].deps


def test_graph_cycle_message_names_only_the_cycle() -> None:
    # x and y lead into a 4-cycle p -> q -> r -> s -> p, z hangs off it
    ops = (
        Op("x"),
        Op("y", deps=("x",)),
        Op("p", deps=("y", "s")),
        Op("q", deps=("p",)),
        Op("r", deps=("q",)),
        Op("s", deps=("r",)),
        Op("z", deps=("s",)),
    )
    with pytest.raises(GraphError) as exc:
        OpGraph(ops)
    pairs = cycle_pairs(str(exc.value))
    assert len(pairs) == 4
    assert {a for a, _ in pairs} == {"p", "q", "r", "s"}
    by_name = {op.name: op for op in ops}
    for earlier, later in pairs:
        assert earlier in by_name[later].deps


def test_graph_long_chain_needs_no_recursion() -> None:
    n = 20_000
    ops = [Op("v0", 1)] + [Op(f"v{i}", 1, deps=(f"v{i - 1}",)) for i in range(1, n)]
    g = OpGraph(tuple(ops))
    assert g.num_edges == n - 1
    assert g.work == float(n)
    # closing the chain into a cycle is found without a RecursionError
    ops[0] = Op("v0", 1, deps=(f"v{n - 1}",))
    with pytest.raises(GraphError) as exc:
        OpGraph(tuple(ops))
    assert len(cycle_pairs(str(exc.value))) == n


def test_graph_rejects_non_ops_and_bad_graph_fields() -> None:
    with pytest.raises(GraphError, match=r"ops\[1\] is not an Op"):
        OpGraph((Op("a"), {"name": "b"}))  # type: ignore[arg-type]
    with pytest.raises(GraphError, match=r"persistent_bytes must be <= 2\^62"):
        OpGraph((), persistent_bytes=2**62 + 1)
    with pytest.raises(GraphError, match="persistent_bytes must be >= 0"):
        OpGraph((), persistent_bytes=-1)
    with pytest.raises(GraphError, match=r"persistent_bytes must be an integer, got 0\.5"):
        OpGraph((), persistent_bytes=0.5)
    with pytest.raises(GraphError, match="resources must be an object"):
        OpGraph((), resources=[("dma", 1)])  # type: ignore[arg-type]
    with pytest.raises(GraphError, match="capacity of resource 'dma' must be an integer"):
        OpGraph((), name="g", resources={"dma": 1.5})
    with pytest.raises(GraphError) as exc:
        OpGraph((), name="g", resources={"dma": -3})
    assert str(exc.value) == "graph 'g': capacity of resource 'dma' must be >= 0, got -3"


def test_graph_is_immutable_and_replace_ops() -> None:
    g = diamond()
    with pytest.raises(AttributeError):
        g.name = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        g.ops[0].duration = 5  # type: ignore[misc]
    h = g.replace_ops([Op("a", 1), Op("b", 1, deps=("a",))], name="small")
    assert h.name == "small" and h.names == ["a", "b"] and h.num_edges == 1
    assert g.names == ["a", "b", "c", "d"]  # the original is untouched
    with pytest.raises(GraphError, match="unknown dependency 'zz'"):
        g.replace_ops([Op("a", 1, deps=("zz",))])


# --------------------------------------------------------------------------------- networkx


def test_to_networkx() -> None:
    g = OpGraph(
        (
            Op("a", 2, output_bytes=8, kind="conv2d", attrs={"flops": 10}),
            Op("b", 3, deps=("a",), demands={"units": 1, "dma": 1}, output=True),
        ),
        name="nxg",
        persistent_bytes=64,
    )
    d = to_networkx(g)
    assert isinstance(d, nx.DiGraph)
    assert list(d.nodes) == ["a", "b"]
    assert list(d.edges) == [("a", "b")]
    assert d.graph == {"name": "nxg", "persistent_bytes": 64, "resources": {}, "attrs": {}}
    assert d.nodes["a"]["duration"] == 2.0
    assert d.nodes["a"]["output_bytes"] == 8
    assert d.nodes["a"]["kind"] == "conv2d"
    assert d.nodes["a"]["attrs"] == {"flops": 10}
    assert d.nodes["b"]["demands"] == {"units": 1, "dma": 1}
    assert d.nodes["b"]["output"] is True
    assert g.to_networkx().nodes["b"]["duration"] == 3.0


def test_networkx_round_trip_keeps_ops() -> None:
    g = OpGraph(
        (
            Op("a", 1.5, output_bytes=8, workspace_bytes=2, kind="k", attrs={"x": [1, 2]}),
            Op("b", 0),
            Op("c", 3, deps=("b", "a"), demands={"units": 2, "dma": 1}),
            Op("d", 4, deps=("a",), output=True),
        ),
        name="rt",
    )
    h = from_networkx(to_networkx(g))
    assert h.name == "rt"
    assert h.ops == g.ops  # every field, deps in the same order
    assert h.pred_idx.tolist() == g.pred_idx.tolist()
    assert h.succ_idx.tolist() == g.succ_idx.tolist()
    assert from_networkx(to_networkx(g), name="renamed").name == "renamed"


def test_from_networkx_plain_digraph() -> None:
    d = nx.DiGraph()
    d.add_node(1, duration=2)
    d.add_node(2, duration=3)
    d.add_edge(1, 2)
    g = from_networkx(d, persistent_bytes=5)
    assert g.names == ["1", "2"]
    assert g["2"].deps == ("1",)
    assert g.work == 5.0 and g.persistent_bytes == 5
    assert g.name == "graph"
    cyc = nx.DiGraph([("a", "b"), ("b", "a")])
    with pytest.raises(GraphError, match="dependency cycle"):
        from_networkx(cyc)
    bad = nx.DiGraph()
    bad.add_node("n", duration=-1)
    with pytest.raises(GraphError, match="duration must be >= 0"):
        from_networkx(bad)


def test_networkx_round_trip_keeps_persistent_bytes() -> None:
    g = OpGraph((Op("a", 1),), persistent_bytes=100)
    assert from_networkx(to_networkx(g)).persistent_bytes == 100


def test_totals_past_what_memory_and_time_can_sum_are_refused() -> None:
    big = 2**61
    # exactly 2^62 in all is accepted
    OpGraph((Op("a", 1, output_bytes=big), Op("b", 1, workspace_bytes=big - 1)),
            persistent_bytes=1)  # fmt: skip
    with pytest.raises(GraphError, match=r"graph 'g'.*bytes total 4.61e\+18, more than 2\^62"):
        OpGraph((Op("a", 1, output_bytes=big), Op("b", 1, workspace_bytes=big)),
                name="g", persistent_bytes=2**40)  # fmt: skip
    with pytest.raises(GraphError, match=r"durations total 1e\+16, 2\^53 or more"):
        OpGraph((Op("a", 1e16), Op("b", 1, deps=("a",))))

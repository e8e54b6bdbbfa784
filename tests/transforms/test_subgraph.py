"""Cutting pieces (cells, stages) out of a graph."""

from __future__ import annotations

import pytest

from opsched.demo import seed_graph
from opsched.errors import GraphError
from opsched.heuristics import greedy
from opsched.problem import Machine, Problem
from opsched.transforms import extract, select
from opsched.transforms.fusion import fuse
from opsched.validate import validate
from opsched.zoo.models import build


def test_seed_piece_inputs_and_outputs() -> None:
    g = seed_graph()
    piece = extract(g, ["BN", "ReLU", "Add"])
    names = [op.name for op in piece.ops]
    # Conv1 (read by BN) and Conv2 (read by ReLU) come from outside: zero-time inputs
    assert names == ["Conv1", "Conv2", "BN", "ReLU", "Add"]
    for op in piece.ops[:2]:
        assert op.kind == "input" and op.duration == 0 and op.demands == {}
        assert op.output_bytes == g[op.name].output_bytes
    # Add feeds Output (outside): handed on, kept to the end
    assert [op.output for op in piece.ops] == [False, False, False, False, True]
    assert piece.persistent_bytes == 0
    # any iterable of prefixes, a generator included, names the piece
    again = extract(g, (p for p in ["BN", "ReLU", "Add"]))
    assert again.ops == piece.ops and again.name == f"{g.name}[BN+ReLU+Add]"


def test_whole_graph_piece_is_the_graph() -> None:
    g = seed_graph()
    piece = extract(g, [op.name for op in g.ops], keep_persistent=True)
    assert piece.ops == g.ops


def test_no_match_is_a_one_line_error() -> None:
    with pytest.raises(GraphError, match="no op matches 'Nope'"):
        extract(seed_graph(), "Nope")


def test_fused_ops_belong_to_their_first_member() -> None:
    g, _ = fuse(build("inception_v3"))
    idx = select(g, "Mixed_5b")
    assert idx and all(g.ops[i].name.startswith("Mixed_5b.") for i in idx)
    assert any("+" in g.ops[i].name for i in idx)


def test_nasnet_cell_reads_two_earlier_cells() -> None:
    g, _ = fuse(build("nasnet_a_mobile"))
    piece = extract(g, "cell_1")
    inputs = [op.name for op in piece.ops if op.kind == "input"]
    # a NASNet cell reads the outputs of the two cells before it
    assert len(inputs) == 2
    assert any(n.startswith("cell_0.") for n in inputs)
    assert sum(op.duration for op in piece.ops) == sum(
        g.ops[i].duration for i in select(g, "cell_1")
    )
    outs = [op for op in piece.ops if op.output]
    assert len(outs) == 1 and outs[0].name.startswith("cell_1.concat")
    p = Problem(piece, Machine(units=2))
    s = greedy(p)
    assert validate(p, s).valid
    # the peak counts the inherited inputs: at least the two input tensors together
    assert s.peak_memory is not None
    assert s.peak_memory >= sum(op.output_bytes for op in piece.ops[:2])


def test_a_piece_of_a_costed_graph_keeps_its_time_unit() -> None:
    # extract dropped the graph's attrs: a piece written by `zoo export --gpu G --piece P`
    # carried durations in microseconds with no unit
    import warnings

    from opsched.cost import apply

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = apply(build("squeezenet1_1"), "A100-SXM4-80GB", "float16")
    piece = extract(g, [g.names[3], g.names[4]])
    assert piece.attrs["time_unit"] == g.attrs["time_unit"] == "us"
    assert piece.attrs["cost_model"] == g.attrs["cost_model"]
    assert piece.attrs["extracted_from"] == g.name
    assert "flops" not in piece.attrs  # the whole network's total is not the piece's


def test_a_piece_a_path_leaves_and_reenters_is_refused() -> None:
    # A -> X -> B with A and B taken: X would become an input and B stop waiting for A
    from opsched.ir import Op, OpGraph

    g = OpGraph((Op("A", 3), Op("X", 1, deps=("A",)), Op("B", 2, deps=("X",)),
                 Op("C", 1, deps=("A",))))  # fmt: skip
    with pytest.raises(GraphError, match=r"not closed: A -> X -> B leaves it and comes back"):
        extract(g, ["A", "B"])
    assert [op.name for op in extract(g, ["A", "X", "B"]).ops] == ["A", "X", "B"]
    assert [op.name for op in extract(g, ["X", "B"]).ops] == ["A", "X", "B"]  # A as input

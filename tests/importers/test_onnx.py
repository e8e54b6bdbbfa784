"""The ONNX importer: onnx.helper models worked by hand, a torch-exported CNN, errors."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

onnx = pytest.importorskip("onnx")
from click.testing import CliRunner  # noqa: E402
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as oh  # noqa: E402

from opsched.cli import main  # noqa: E402
from opsched.errors import InputError  # noqa: E402
from opsched.importers import from_onnx, read_graph  # noqa: E402
from opsched.importers._build import ImporterWarning  # noqa: E402


def _zeros(name: str, dims: list[int]) -> Any:
    n = 1
    for d in dims:
        n *= d
    return oh.make_tensor(name, TP.FLOAT, dims, [0.0] * n)


def small_cnn() -> Any:
    """Conv 3->8 (3x3, stride 2, pad 1) -> Relu -> GlobalAveragePool -> Flatten -> Gemm 8->4."""
    x = oh.make_tensor_value_info("x", TP.FLOAT, ["batch", 3, 16, 16])
    y = oh.make_tensor_value_info("y", TP.FLOAT, None)
    nodes = [
        oh.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", strides=[2, 2], pads=[1] * 4),
        oh.make_node("Relu", ["c"], ["r"], name="relu"),
        oh.make_node("GlobalAveragePool", ["r"], ["p"], name="gap"),
        oh.make_node("Flatten", ["p"], ["f"], name="flat"),
        oh.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc", transB=1),
    ]
    inits = [_zeros("w", [8, 3, 3, 3]), _zeros("b", [8]), _zeros("fw", [4, 8]), _zeros("fb", [4])]
    return oh.make_model(oh.make_graph(nodes, "cnn", [x], [y], inits))


def test_helper_cnn_by_hand() -> None:
    g = from_onnx(small_cnn(), dims={"batch": 2})
    assert [(op.name, op.kind) for op in g.ops] == [
        ("x", "input"), ("conv", "conv2d"), ("relu", "elementwise"), ("gap", "pool"),
        ("flat", "view"), ("fc", "matmul"),
    ]  # fmt: skip
    conv = g["conv"]
    # output 2 x 8 x 8 x 8; each output element: 3 channels x 3 x 3 taps
    assert conv.attrs["flops"] == 2 * (2 * 8 * 8 * 8) * 27 and conv.output_bytes == 2 * 8 * 64 * 4
    gap = g["gap"]
    assert (gap.attrs["R"], gap.attrs["S"], gap.attrs["mode"]) == (8, 8, "avg")
    assert gap.attrs["flops"] == 2 * 8 * 64 and gap.output_bytes == 2 * 8 * 4
    fc = g["fc"]
    assert (fc.attrs["M"], fc.attrs["N"], fc.attrs["K"]) == (2, 4, 8) and fc.output
    assert set(fc.deps) == {"flat", "gap"}  # the view's base stays alive until the Gemm
    assert g.persistent_bytes == (216 + 8 + 32 + 4) * 4
    assert g.attrs["opset"] >= 13 and "symbolic_dims" not in g.attrs
    assert g["conv"].attrs["onnx_op"] == "Conv"


def test_symbolic_dims_default_to_one() -> None:
    g = from_onnx(small_cnn())
    assert g.attrs["symbolic_dims"] == {"batch": 1}
    assert g["x"].output_bytes == 3 * 16 * 16 * 4


def test_embedding_softmax_layernorm_and_unknown() -> None:
    ids = oh.make_tensor_value_info("ids", TP.INT64, [2, 5])
    y = oh.make_tensor_value_info("y", TP.FLOAT, None)
    nodes = [
        oh.make_node("Gather", ["table", "ids"], ["e"], name="emb"),
        oh.make_node("LayerNormalization", ["e", "g", "bb"], ["n"], name="ln", axis=-1),
        oh.make_node("Softmax", ["n"], ["s"], name="sm", axis=-1),
        oh.make_node("LpNormalization", ["s"], ["y"], name="odd"),
    ]
    inits = [_zeros("table", [100, 16]), _zeros("g", [16]), _zeros("bb", [16])]
    model = oh.make_model(
        oh.make_graph(nodes, "t", [ids], [y], inits), opset_imports=[oh.make_opsetid("", 17)]
    )
    with pytest.warns(ImporterWarning, match="LpNormalization x1"):
        g = from_onnx(model)
    assert g["emb"].kind == "embedding" and g["emb"].attrs["tokens"] == 10
    assert g["emb"].attrs["dim"] == 16 and g["emb"].output_bytes == 10 * 16 * 4
    assert (g["ln"].kind, g["ln"].attrs["rows"], g["ln"].attrs["cols"]) == ("layernorm", 10, 16)
    assert (g["sm"].kind, g["sm"].attrs["cols"]) == ("softmax", 16)
    assert g["odd"].kind == "elementwise" and g.attrs["unmapped"] == {"LpNormalization": 1}


def test_torch_exported_cnn(tmp_path) -> None:
    torch = pytest.importorskip("torch")
    from torch import nn

    net = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(128, 10)
    ).eval()
    path = tmp_path / "net.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the legacy TorchScript exporter: the dynamo one needs onnxscript, not installed here
        torch.onnx.export(net, (torch.randn(2, 3, 8, 8),), str(path), dynamo=False)
    g = read_graph(path)
    assert g.name == "net" and [op.kind for op in g.ops] == [
        "input", "conv2d", "elementwise", "pool", "view", "matmul",
    ]  # fmt: skip
    from opsched.importers import from_torch

    ref = from_torch(net, (torch.randn(2, 3, 8, 8),))
    assert [op.attrs["flops"] for op in g.ops] == [op.attrs["flops"] for op in ref.ops]
    assert [op.output_bytes for op in g.ops] == [op.output_bytes for op in ref.ops]
    assert g.persistent_bytes == ref.persistent_bytes


def test_bad_files(tmp_path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage that is not protobuf \xff\xff")
    with pytest.raises(InputError) as e:
        read_graph(bad)
    assert str(bad) in str(e.value) and "\n" not in str(e.value)
    out = tmp_path / "o.json"
    res = CliRunner().invoke(main, ["convert", str(bad), str(out)])
    assert res.exit_code == 2 and res.output.startswith("opsched: error: ") and not out.exists()
    with pytest.raises(InputError, match="no such file"):
        from_onnx(tmp_path / "missing.onnx")
    # an empty file parses as an empty protobuf: it had been read as a graph of no ops
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    res = CliRunner().invoke(main, ["convert", str(empty), str(out)])
    assert res.exit_code == 2 and "holds no ONNX graph" in res.output and not out.exists()


def test_undefined_input_names_the_node() -> None:
    x = oh.make_tensor_value_info("x", TP.FLOAT, [4])
    y = oh.make_tensor_value_info("y", TP.FLOAT, [4])
    node = oh.make_node("Add", ["x", "ghost"], ["y"], name="plus")
    with pytest.raises(InputError, match=r"node 'plus' \(Add\): input 'ghost' is not defined"):
        from_onnx(oh.make_model(oh.make_graph([node], "g", [x], [y])))


def test_a_negative_dimension_is_named() -> None:
    # a -1 (a reshape's wildcard) in an input's type had failed later on the op's numel,
    # naming neither the tensor nor the dimension
    x = oh.make_tensor_value_info("x", TP.FLOAT, [-1, 4])
    y = oh.make_tensor_value_info("y", TP.FLOAT, None)
    model = oh.make_model(oh.make_graph([oh.make_node("Relu", ["x"], ["y"])], "g", [x], [y]))
    with pytest.raises(InputError, match=r"graph input 'x' has a dimension of -1"):
        from_onnx(model)


def _vi(name: str, shape: Any) -> Any:
    return oh.make_tensor_value_info(name, TP.FLOAT, shape)


def _if_model(then_nodes: list[Any], then_out: str) -> Any:
    """x -> e = Exp(x), a = Abs(x), c = ReduceSum(x) > 0; y = If(c) with branches that read
    e and a from the enclosing graph, not as inputs of the If node."""
    then = oh.make_graph(then_nodes, "then", [], [_vi(then_out, [4])])
    other = oh.make_graph([oh.make_node("Neg", ["a"], ["o2"])], "else", [], [_vi("o2", [4])])
    nodes = [
        oh.make_node("Exp", ["x"], ["e"], name="e"),
        oh.make_node("Abs", ["x"], ["a"], name="a"),
        oh.make_node("ReduceSum", ["x"], ["s"], name="s", keepdims=0),
        oh.make_node("Cast", ["s"], ["c"], name="c", to=TP.BOOL),
        oh.make_node("If", ["c"], ["y"], name="if", then_branch=then, else_branch=other),
    ]
    return oh.make_model(oh.make_graph(nodes, "g", [_vi("x", [4])], [_vi("y", None)]))


def test_if_depends_on_what_its_branches_read() -> None:
    # the If node lists only its condition: its deps had been ('c',), so e and a (read
    # inside the branches) could be scheduled after it and freed before it ran
    with pytest.warns(ImporterWarning, match="If x1"):
        g = from_onnx(_if_model([oh.make_node("Relu", ["e"], ["o1"])], "o1"))
    assert set(g["if"].deps) == {"c", "e", "a"} and g["if"].output_bytes == 16
    # a branch may return an outer value as it is, with no node reading it
    with pytest.warns(ImporterWarning):
        g = from_onnx(_if_model([], "e"))
    assert set(g["if"].deps) == {"c", "e", "a"}


def test_loop_depends_on_what_its_body_reads() -> None:
    # the body adds h, which it does not define: h comes from the enclosing graph
    body = oh.make_graph(
        [oh.make_node("Add", ["v", "h"], ["v2"]), oh.make_node("Identity", ["ci"], ["co"])],
        "body",
        [oh.make_tensor_value_info("i", TP.INT64, []),
         oh.make_tensor_value_info("ci", TP.BOOL, []), _vi("v", [4])],
        [oh.make_tensor_value_info("co", TP.BOOL, []), _vi("v2", [4])],
    )  # fmt: skip
    nodes = [
        oh.make_node("Exp", ["x"], ["h"], name="e"),
        oh.make_node("Loop", ["trip", "", "x"], ["y"], name="loop", body=body),
    ]
    trip = oh.make_tensor("trip", TP.INT64, [], [3])
    model = oh.make_model(oh.make_graph(nodes, "g", [_vi("x", [4])], [_vi("y", [4])], [trip]))
    with pytest.warns(ImporterWarning, match="Loop x1"):
        g = from_onnx(model)
    assert set(g["loop"].deps) == {"x", "e"} and g.persistent_bytes == 8


def test_nodes_out_of_order_or_in_a_cycle_are_refused() -> None:
    # r reads h, made by the later node e: the edge e -> r had been dropped without a word
    # (the value's type came from value_info), as had the back edge of a cycle
    nodes = [oh.make_node("Relu", ["h"], ["y"], name="r"), oh.make_node("Exp", ["x"], ["h"])]
    model = oh.make_model(
        oh.make_graph(nodes, "g", [_vi("x", [4])], [_vi("y", [4])], value_info=[_vi("h", [4])])
    )
    with pytest.raises(InputError, match=r"node 'r' \(Relu\): input 'h' is produced by a later"):
        from_onnx(model)
    cycle = [oh.make_node("Add", ["x", "b"], ["a"], name="A"), oh.make_node("Relu", ["a"], ["b"])]
    model = oh.make_model(oh.make_graph(cycle, "g", [_vi("x", [4])], [_vi("b", [4])],
                                        value_info=[_vi("a", [4])]))  # fmt: skip
    with pytest.raises(InputError, match=r"node 'A' \(Add\): input 'b' is produced by a later"):
        from_onnx(model)
    outer = _if_model([oh.make_node("Relu", ["late"], ["o1"])], "o1")
    with pytest.raises(InputError, match=r"input 'late' \(read by a subgraph\) is not defined"):
        from_onnx(outer)


def test_an_input_passed_out_as_an_output() -> None:
    # x is also a graph output, declared without a shape: that shapeless type had replaced
    # the input's ("graph input 'x' has no tensor shape") and stopped onnx's inference of r
    w = _zeros("w", [2])
    nodes = [oh.make_node("Relu", ["x"], ["y"], name="r")]
    outs = [_vi("y", None), _vi("x", None), _vi("w", None)]
    g = from_onnx(oh.make_model(oh.make_graph(nodes, "g", [_vi("x", [4])], outs, [w])))
    assert [(op.name, op.deps, op.output_bytes, op.output) for op in g.ops] == [
        ("x", (), 16, True), ("r", ("x",), 16, True),
    ]  # fmt: skip
    assert g.persistent_bytes == 8


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("ghost output", "graph output 'z' is not produced by any node"),
        ("negative initializer", "initializer 'w' has a negative dimension: [-2]"),
        ("negative dim", "dims: 'b' must be a non-negative integer, got -3"),
    ],
)
def test_bad_models_one_line(case: str, message: str) -> None:
    w = _zeros("w", [2])
    outs = [_vi("y", None)]
    dims = None
    if case == "ghost output":  # it had been left out, the graph built without it
        outs.append(_vi("z", [2]))
    elif case == "negative initializer":  # it had surfaced as a shapeless output of 'add'
        w.dims[0] = -2
    else:  # it had surfaced as a negative numel of the input op
        dims = {"b": -3}
    x = _vi("x", ["b", 2])
    nodes = [oh.make_node("Add", ["x", "w"], ["y"], name="add")]
    with pytest.raises(InputError) as e:
        from_onnx(oh.make_model(oh.make_graph(nodes, "g", [x], outs, [w])), dims=dims)
    assert str(e.value) == f"onnx: {message}"


def test_packed_int4_counts_half_a_byte_an_element() -> None:
    # a 4-bit weight of 3 x 5 elements is stored in 8 bytes (two to a byte, the last half
    # empty) and its DequantizeLinear output is 15 floats; int4 had been counted as 15 bytes
    w = oh.make_tensor("w", TP.INT4, [3, 5], [1] * 15)
    scale = oh.make_tensor("s", TP.FLOAT, [], [0.5])
    x = oh.make_tensor_value_info("x", TP.INT4, [7])
    nodes = [
        oh.make_node("DequantizeLinear", ["w", "s"], ["y"], name="dq"),
        oh.make_node("Identity", ["x"], ["z"], name="id"),
    ]
    model = oh.make_model(
        oh.make_graph(nodes, "q", [x], [_vi("y", None), _vi("z", None)], [w, scale]),
        opset_imports=[oh.make_opsetid("", 21)],
    )
    with pytest.warns(ImporterWarning, match="DequantizeLinear"):
        g = from_onnx(model)
    assert g.persistent_bytes == 8 + 4
    by = {op.name: op.output_bytes for op in g.ops}
    assert by["x"] == 4 and by["dq"] == 15 * 4


def test_topk_reads_its_whole_input() -> None:
    # TopK had no rule: a copy of its k outputs, with a warning; it reads every element
    x = oh.make_tensor_value_info("x", TP.FLOAT, [8, 1000])
    k = oh.make_tensor("k", TP.INT64, [1], [5])
    node = oh.make_node("TopK", ["x", "k"], ["v", "i"], name="top", axis=1)
    outs = [oh.make_tensor_value_info("v", TP.FLOAT, [8, 5]),
            oh.make_tensor_value_info("i", TP.INT64, [8, 5])]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error", ImporterWarning)
        g = from_onnx(oh.make_model(oh.make_graph([node], "t", [x], outs, [k])))
    top = g["top"]
    assert top.kind == "reduce" and top.attrs["numel"] == 8000
    assert top.attrs["out_numel"] == 40 and top.attrs["onnx_op"] == "TopK"


def test_complex_and_16_bit_integer_tensors_keep_their_size_and_label() -> None:
    # complex128 had been labelled float64 and counted at 8 bytes an element, not 16;
    # uint16 and int16 were labelled float16 (and priced as half precision)
    outs = {}
    for name, tp, want, size in (("c", TP.COMPLEX128, "complex128", 16),
                                 ("d", TP.COMPLEX64, "complex64", 8),
                                 ("u", TP.UINT16, "int16", 2), ("i", TP.INT16, "int16", 2),
                                 ("w", TP.UINT32, "int32", 4)):  # fmt: skip
        x = oh.make_tensor_value_info("x", tp, [3, 5])
        model = oh.make_model(oh.make_graph([oh.make_node("Identity", ["x"], ["y"], name="id")],
                                            name, [x], [_vi("y", None)]))  # fmt: skip
        g = from_onnx(model)
        outs[name] = (g["x"].output_bytes, g["x"].attrs.get("dtype"))
        assert g["x"].output_bytes == 15 * size, (name, outs[name])
        assert g["x"].attrs.get("dtype", want) == want, (name, outs[name])


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        (["y"], "node 'again' (Relu): output 'y' is already defined"),
        (["x"], "node 'again' (Relu): output 'x' is already defined"),  # a graph input
        (["w"], "node 'again' (Relu): output 'w' is already defined"),  # an initializer
    ],
)
def test_a_value_defined_twice_is_refused(outputs: list[str], message: str) -> None:
    # the second definition had silently replaced the first, so later readers depended on
    # the wrong node
    nodes = [
        oh.make_node("Add", ["x", "w"], ["y"], name="add"),
        oh.make_node("Relu", ["y"], outputs, name="again"),
    ]
    model = oh.make_model(oh.make_graph(nodes, "g", [_vi("x", [2])], [_vi("y", None)],
                                        [_zeros("w", [2])]))  # fmt: skip
    with pytest.raises(InputError) as e:
        from_onnx(model)
    assert str(e.value) == f"onnx: {message} (an ONNX value is assigned once)"


def test_comparisons_and_logic_are_elementwise() -> None:
    # ONNX's Equal, Less, Greater, Not, And, Or, Xor and Mod had been looked up in the ATen
    # table by their lower-cased names, which ATen does not use: each was an unknown op,
    # warned, and its bool result imported as a copy of no FLOPs
    bvi = oh.make_tensor_value_info
    nodes = [
        oh.make_node("Equal", ["x", "y"], ["eq"], name="eq"),
        oh.make_node("Less", ["x", "y"], ["lt"], name="lt"),
        oh.make_node("Greater", ["x", "y"], ["gt"], name="gt"),
        oh.make_node("Not", ["eq"], ["n"], name="not"),
        oh.make_node("And", ["lt", "gt"], ["a"], name="and"),
        oh.make_node("Or", ["a", "n"], ["o"], name="or"),
        oh.make_node("Xor", ["o", "eq"], ["z"], name="xor"),
        oh.make_node("Mod", ["x", "y"], ["m"], name="mod", fmod=1),
    ]
    outs = [bvi("z", TP.BOOL, None), _vi("m", None)]
    model = oh.make_model(oh.make_graph(nodes, "cmp", [_vi("x", [3]), _vi("y", [3])], outs))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ImporterWarning)
        g = from_onnx(model)
    assert "unmapped" not in g.attrs
    for name, deps in [
        ("eq", ("x", "y")),
        ("not", ("eq",)),
        ("and", ("lt", "gt")),
        ("or", ("and", "not")),
        ("xor", ("or", "eq")),
        ("mod", ("x", "y")),
    ]:
        op = g[name]
        assert (op.kind, op.deps) == ("elementwise", deps), name
        assert op.attrs["flops"] > 0, name
    assert g["eq"].output_bytes == 3 and g["mod"].output_bytes == 12

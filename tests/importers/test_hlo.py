"""The XLA HLO text importer: the JAX samples, hand-written snippets, one-line errors."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.datasets import dataset_path
from opsched.errors import InputError
from opsched.importers import from_hlo_text, read_graph
from opsched.importers._build import TensorMeta
from opsched.importers.hlo import parse_type

SAMPLES = ("mlp", "conv_block", "attention")


@pytest.mark.parametrize("name", SAMPLES)
def test_lowered_and_compiled_agree_on_flops(name: str) -> None:
    """XLA's fusions regroup the same arithmetic: total FLOPs must not change."""
    lowered = read_graph(dataset_path(f"hlo/{name}.hlo"))
    compiled = read_graph(dataset_path(f"hlo/{name}.opt.hlo"))
    total = sum(op.attrs["flops"] for op in lowered.ops)
    assert total == sum(op.attrs["flops"] for op in compiled.ops) > 0
    assert compiled.num_ops < lowered.num_ops
    assert any(op.kind == "fused" for op in compiled.ops)
    assert sum(op.output for op in lowered.ops) >= 1
    assert "unmapped" not in lowered.attrs and "unmapped" not in compiled.attrs


def test_mlp_sample_by_hand() -> None:
    g = read_graph(dataset_path("hlo/mlp.hlo"))
    assert g.name == "mlp" and g.attrs["source"] == "hlo"
    dots = [op for op in g.ops if op.kind == "matmul"]
    assert [(d.attrs["M"], d.attrs["N"], d.attrs["K"]) for d in dots] == [
        (32, 512, 256),
        (32, 10, 512),
    ]
    assert dots[0].attrs["flops"] == 2 * 32 * 512 * 256 and dots[0].output_bytes == 32 * 512 * 4
    assert [op.name for op in g.ops if op.kind == "input"] == ["x.1", "w1.1", "b1.1", "w2.1"]


def test_conv_sample_by_hand() -> None:
    g = read_graph(dataset_path("hlo/conv_block.hlo"))
    conv = next(op for op in g.ops if op.kind == "conv2d")
    a = conv.attrs
    assert (a["N"], a["C"], a["H"], a["W"], a["K"], a["R"], a["S"]) == (8, 16, 32, 32, 32, 3, 3)
    assert a["flops"] == 2 * 8 * 32 * 32 * 32 * 16 * 9 and conv.output_bytes == 8 * 32 * 32 * 32 * 4
    pool = next(op for op in g.ops if op.kind == "pool")
    assert (pool.attrs["R"], pool.attrs["stride_h"], pool.attrs["mode"]) == (2, 2, "max")
    assert pool.output_bytes == 8 * 32 * 16 * 16 * 4 and pool.output


OLD_STYLE = """HloModule old, entry_computation_layout={(f32[2,4,8]{2,1,0})->(f32[2,4,4]{2,1,0}, f32[2,4]{1,0})}

%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

%fused (p0: f32[2,4,8], p1: f32[2,8,4]) -> f32[2,4,4] {
  %p0 = f32[2,4,8]{2,1,0} parameter(0)
  %p1 = f32[2,8,4]{2,1,0} parameter(1)
  %d = f32[2,4,4]{2,1,0} dot(f32[2,4,8]{2,1,0} %p0, f32[2,8,4]{2,1,0} %p1), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT %e = f32[2,4,4]{2,1,0} exponential(f32[2,4,4]{2,1,0} %d)
}

ENTRY %main (x: f32[2,4,8]) -> (f32[2,4,4], f32[2,4]) {
  %x = f32[2,4,8]{2,1,0} parameter(0), metadata={op_name="x" source_file="a, b.py"}
  %t = f32[2,8,4]{1,2,0} transpose(f32[2,4,8]{2,1,0} %x), dimensions={0,2,1}
  %f = f32[2,4,4]{2,1,0} fusion(f32[2,4,8]{2,1,0} %x, f32[2,8,4]{1,2,0} %t), kind=kOutput, calls=%fused
  %z = f32[] constant(0)
  %r = f32[2,4]{1,0} reduce(f32[2,4,4]{2,1,0} %f, f32[] %z), dimensions={2}, to_apply=%add_f32
  %tup = (f32[2,4,4]{2,1,0}, f32[2,4]{1,0}) tuple(%f, %r)
  %g = f32[2,4]{1,0} get-tuple-element(%tup), index=1
  ROOT %out = (f32[2,4,4]{2,1,0}, f32[2,4]{1,0}) tuple(%f, %g)
}
"""  # noqa: E501


def test_old_style_fusion_tuple_gte() -> None:
    g = from_hlo_text(OLD_STYLE)
    assert g.name == "old" and g.names == ["x", "t", "f", "r"]
    f = g["f"]
    # batch 2 of [4,8]x[8,4]: 2*2*4*4*8 = 512 FLOPs, plus 32 exponentials
    assert f.kind == "fused" and f.attrs["flops"] == 512 + 32
    assert f.attrs["bytes"] == (64 + 64 + 32) * 4 and f.attrs["fusion_kind"] == "kOutput"
    assert set(f.deps) == {"x", "t"} and g["t"].kind == "copy"
    r = g["r"]
    assert (r.kind, r.attrs["numel"], r.attrs["out_numel"]) == ("reduce", 32, 8)
    assert f.output and r.output and not g["t"].output  # the ROOT tuple's elements
    assert g.persistent_bytes == 4  # the scalar constant


TRANSPOSED = """HloModule t
ENTRY main {
  c = f32[1,4,4,4]{3,2,1,0} parameter(0)
  w = f32[4,4,3,3]{3,2,1,0} parameter(1)
  ROOT ct = f32[1,4,9,9]{3,2,1,0} convolution(c, w), WINDOW, dim_labels=bf01_io01->bf01
}
""".replace("WINDOW", "window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2}")


def test_an_input_dilated_convolution_is_a_transposed_one() -> None:
    # lhs_dilate = 2 is ConvTranspose of stride 2 (4 x 4 -> 9 x 9): every input element of 4
    # channels meets 4 output channels through 3 x 3 taps, 64 x 4 x 9 = 2,304 multiply-adds.
    # Read as a plain convolution with pad 2 it counted 23,328 FLOPs and a 10 x 10 output
    ct = from_hlo_text(TRANSPOSED)["ct"]
    assert ct.kind == "conv2d_bwd_data"
    assert ct.attrs["flops"] == 2 * 2304
    assert (ct.attrs["H"], ct.attrs["W"], ct.attrs["stride_h"], ct.attrs["pad_h"]) == (9, 9, 2, 0)
    assert ct.output_bytes == 4 * 9 * 9 * 4


def test_parse_type() -> None:
    assert parse_type("pred[3,<=5]{1,0}")[0] == TensorMeta((3, 5), "bool")
    t, end = parse_type("((f32[1]{0}, s64[]), token[]) tuple(a)")
    assert t == ((TensorMeta((1,), "float32"), TensorMeta((), "int64")), None)
    assert end == len("((f32[1]{0}, s64[]), token[])")
    assert parse_type("u16[2]")[0].dtype == "int16"  # an integer label (it had been float16)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("HloModule m\ncomp {\n  x = f32[1] parameter(0)\n}\n", "no ENTRY computation"),
        ("HloModule m\nENTRY e {\n  x = f32[1] parameter(0)\n  garbage here\n}\n",
         "line 4: expected 'name = type opcode(operands)'"),
        ("HloModule m\nENTRY e {\n  x = f32[1 parameter(0)\n}\n", "line 3: expected a type"),
        ("HloModule m\nENTRY e {\n  x = q9[1] parameter(0)\n}\n",
         "line 3: unknown element type 'q9'"),
        ("HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n  y = f32[2] add(x, w)\n}\n",
         "line 4: operand 'w' of 'y' is not defined"),
        ("HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n", "not closed"),
        ("HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n"
         "  y = f32[2] fusion(x), calls=nope\n}\n",
         "line 4: unknown computation 'nope'"),
        ("HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n  y = f32[2] add(x, x\n}\n",
         "line 4: unbalanced parentheses"),
        # these three had been read without a word (the second ENTRY as an empty graph)
        ("HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n  x = f32[2] add(x, x)\n}\n",
         "line 4: instruction 'x' is defined again (first on line 3)"),
        ("HloModule m\nENTRY x {\n}\nENTRY e {\n  x = f32[2] parameter(0)\n}\n",
         "line 4: a second ENTRY computation ('e')"),
        ("HloModule m\nENTRY e {\n  ROOT x = f32[2] parameter(0)\n"
         "  ROOT y = f32[2] add(x, x)\n}\n", "line 4: a second ROOT in computation 'e'"),
        # a negative dimension in a tuple's element had been accepted (its numel summed with
        # the other elements' could still come out >= 0), as had f32[-2,-3] (numel 6)
        ("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n"
         "  ROOT y = (f32[2,-3], f32[4]) custom-call(x)\n}\n",
         "line 4: negative dimension -3 in f32[2,-3]"),
        ("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n"
         "  ROOT y = ((f32[4]{0}, s32[-1]), f32[4]) tuple(x)\n}\n",
         "line 4: negative dimension -1 in s32[-1]"),
        ("HloModule m\nENTRY e {\n  x = f32[-2,-3] parameter(0)\n}\n",
         "line 3: negative dimension -2 in f32[-2,-3]"),
        ("HloModule m\nENTRY e {\n  x = f32[2,<=-3] parameter(0)\n}\n",
         "line 3: negative dimension -3 in f32[2,<=-3]"),
    ],
)  # fmt: skip
def test_bad_hlo_one_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as e:
        from_hlo_text(text, where="f.hlo")
    assert message in str(e.value) and str(e.value).startswith("f.hlo: ")
    assert "\n" not in str(e.value)


def test_convert_hlo_txt(tmp_path) -> None:
    src = tmp_path / "model.hlo.txt"
    src.write_text(OLD_STYLE)
    out = tmp_path / "model.json"
    res = CliRunner().invoke(main, ["convert", str(src), str(out), "--json"])
    assert res.exit_code == 0, res.output
    assert read_graph(out).num_ops == 4
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  oops\n}\n")
    res = CliRunner().invoke(main, ["convert", str(bad), str(tmp_path / "x.json")])
    assert res.exit_code == 2 and f"{bad}: line 3:" in res.output
    assert not (tmp_path / "x.json").exists()


COND = """HloModule m
t {
  p = f32[64,64]{1,0} parameter(0)
  ROOT d = f32[64,64]{1,0} dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
f {
  p = f32[64,64]{1,0} parameter(0)
  ROOT n = f32[64,64]{1,0} negate(p)
}
ENTRY main {
  pr = pred[] parameter(0)
  x = f32[64,64]{1,0} parameter(1)
  ROOT c = f32[64,64]{1,0} conditional(pr, x, x), true_computation=t, false_computation=f
}
"""


def test_a_conditional_costs_its_costliest_branch() -> None:
    # the branches are named by true_/false_computation, not calls=: it had 0 FLOPs; x, passed
    # twice, is read once
    c = from_hlo_text(COND)["c"]
    assert c.kind == "fused" and c.attrs["flops"] == 2 * 64**3
    assert c.attrs["bytes"] == 1 + 64 * 64 * 4 + 64 * 64 * 4
    indexed = COND.replace("true_computation=t, false_computation=f", "branch_computations={f, t}")
    assert from_hlo_text(indexed)["c"].attrs["flops"] == 2 * 64**3


def test_a_shape_past_2_62_in_a_called_computation_names_the_file_and_line(
    tmp_path: Path,
) -> None:
    # the error of a computation a call maps (the shape rules' GraphError) had come out
    # without the file or the line of the call
    from opsched.errors import OpschedError
    from opsched.importers.hlo import read_hlo

    text = (
        "HloModule m\n\n"
        "relu {\n"
        "  a = f32[4] parameter(0)\n"
        "  ROOT r = f32[99999999999999999999] negate(a)\n}\n\n"
        "ENTRY main {\n"
        "  p = f32[4] parameter(0)\n"
        "  ROOT c = f32[4] call(p), to_apply=relu\n}\n"
    )
    path = tmp_path / "big.hlo"
    path.write_text(text)
    with pytest.raises(OpschedError) as e:
        read_hlo(path)
    assert str(e.value).startswith(f"{path}: line 10: ")  # the call
    assert "99999999999999999999" in str(e.value)


WHILE = """HloModule w
body {
  p = (f32[4], f32[4]) parameter(0)
  a = f32[4] get-tuple-element(p), index=0
  b = f32[4] get-tuple-element(p), index=1
  s = f32[4] add(a, b)
  ROOT t = (f32[4], f32[4]) tuple(s, b)
}
cond {
  p = (f32[4], f32[4]) parameter(0)
  ROOT c = pred[] constant(true)
}
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] exponential(x)
  z = f32[4] negate(x)
  t = (f32[4], f32[4]) tuple(y, z)
  w = (f32[4], f32[4]) while(t), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=0
}
"""


def test_a_while_depends_on_the_elements_of_its_tuple_operand() -> None:
    # a while's loop state is a tuple, and the tuple had been an op-less value with no
    # producer: the while depended on nothing, so y and z could be scheduled after it, and it
    # was priced without reading its 2 x 16 bytes of state
    g = from_hlo_text(WHILE)
    w = g["w"]
    assert set(w.deps) == {"y", "z"}
    assert w.attrs["bytes"] == 32 + 32 and w.attrs["flops"] == 8  # one body's add of 4
    assert g["r"].deps == ("w",) and g["r"].output and w.output


NESTED = """HloModule n
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] exponential(x)
  z = f32[4] negate(x)
  t1 = (f32[4], f32[4]) tuple(y, z)
  t2 = ((f32[4], f32[4]), f32[4]) tuple(t1, x)
  g0 = (f32[4], f32[4]) get-tuple-element(t2), index=0
  g1 = f32[4] get-tuple-element(g0), index=1
  r = f32[4] abs(g1)
  ROOT out = ((f32[4], f32[4]), f32[4]) tuple(t1, r)
}
"""


def test_nested_tuples_keep_their_edges_and_outputs() -> None:
    # g1 is z (element 1 of element 0 of t2): it had become a view of an op-less value, so r
    # lost its edge to z; the ROOT's inner tuple had marked neither y nor z an output
    g = from_hlo_text(NESTED)
    assert g.names == ["x", "y", "z", "r"]
    assert g["r"].deps == ("z",)
    assert [op.name for op in g.ops if op.output] == ["y", "z", "r"]


def test_control_predecessors_are_deps() -> None:
    text = WHILE.replace("z = f32[4] negate(x)", "z = f32[4] negate(x), control-predecessors={y}")
    assert from_hlo_text(text)["z"].deps == ("x", "y")
    old = text.replace("control-predecessors={y}", "control-predecessors={%y}")
    assert from_hlo_text(old)["z"].deps == ("x", "y")


def test_index_comments_of_long_tuples_are_skipped() -> None:
    # XLA writes /*index=5*/ before the sixth element of a tuple type and of an operand list
    six = ", ".join(["f32[4]{0}"] * 5) + ", /*index=5*/f32[4]{0}"
    text = (
        "HloModule c\nENTRY e {\n  x = f32[4]{0} parameter(0)\n  y = f32[4]{0} negate(x)\n"
        f"  ROOT t = ({six}) tuple(x, x, x, x, x, /*index=5*/y)\n}}\n"
    )
    g = from_hlo_text(text)
    assert g.names == ["x", "y"] and g["y"].output and g["x"].output
    quoted = text.replace("negate(x)", 'negate(x), metadata={op_name="a/*b*/c"}')
    assert from_hlo_text(quoted)["y"].attrs["hlo_op"] == "negate"


_GTE = "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  t = (f32[4]) tuple(x)\n  ROOT "


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # these had come out as IndexError / ValueError tracebacks
        (_GTE + "g = f32[4] get-tuple-element(t), index=3\n}\n",
         "line 5: get-tuple-element 'g': index 3 of 't', a tuple of 1 elements"),
        (_GTE + "g = f32[4] get-tuple-element(t), index=abc\n}\n",
         "line 5: get-tuple-element 'g' needs an index=N, got 'abc'"),
        (_GTE + "g = f32[4] get-tuple-element(), index=0\n}\n",
         "line 5: get-tuple-element 'g' takes one operand, got 0"),
        (_GTE + "g = f32[4] get-tuple-element(x), index=0\n}\n",
         "line 5: get-tuple-element 'g': operand 'x' is not a tuple"),
        (_GTE + "g = f32[4] negate(x), control-predecessors={q}\n}\n",
         "line 5: control predecessor 'q' of 'g' is not defined before it"),
        ("HloModule m\nENTRY e {\n  x = f32[?,4] parameter(0)\n}\n",
         "line 3: unbounded dynamic dimension in f32[?,4]"),
    ],
)  # fmt: skip
def test_bad_tuple_access_one_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as e:
        from_hlo_text(text, where="f.hlo")
    assert message in str(e.value) and str(e.value).startswith("f.hlo: ")
    assert "\n" not in str(e.value)


def test_tokens_order_side_effects_and_outfeeds_are_ops() -> None:
    # an op whose result is only a token (outfeed) had been dropped as persistent bytes,
    # and with it the order its token gives
    g = from_hlo_text(
        "HloModule t\nENTRY e {\n  x = f32[4] parameter(0)\n  y = f32[4] negate(x)\n"
        "  tok = token[] after-all()\n"
        "  o1 = token[] outfeed(x, tok), outfeed_shape=f32[4]\n"
        "  o2 = token[] outfeed(y, o1), outfeed_shape=f32[4]\n"
        "  j = token[] after-all(o1, o2)\n"
        "  o3 = token[] outfeed(x, j), outfeed_shape=f32[4]\n"
        "  ROOT r = f32[4] abs(y)\n}\n"
    )
    assert g.names == ["x", "y", "o1", "o2", "o3", "r"]
    assert [g[n].deps for n in ("o1", "o2", "o3")] == [("x",), ("y", "o1"), ("x", "o1", "o2")]
    assert g["o2"].output_bytes == 0 and g["o2"].attrs["bytes"] == 2 * 16
    assert "unmapped" not in g.attrs


def test_a_tuple_parameter_of_mixed_dtypes_counts_all_its_bytes() -> None:
    # (f32[1], s8[3]) holds 7 bytes; counted as 7 // 4 float32s it had come out as 4
    g = from_hlo_text(
        "HloModule p\nENTRY e {\n  p = (f32[1], s8[3]) parameter(0)\n"
        "  ROOT g = s8[3] get-tuple-element(p), index=1\n}\n"
    )
    assert g["p"].output_bytes == 7 and g["g"].deps == ("p",)


def test_a_computation_on_another_execution_thread() -> None:
    # XLA closes a computation of another thread with '}, execution_thread="host"': that line
    # had been read as an instruction ("expected 'name = type opcode(operands)'")
    g = from_hlo_text(
        "HloModule h\nhost {\n  a = f32[4] parameter(0)\n  ROOT m = f32[4] multiply(a, a)\n"
        '}, execution_thread="host"\n\nENTRY e {\n  x = f32[4] parameter(0)\n'
        "  ROOT c = f32[4] call(x), to_apply=host\n}\n"
    )
    assert g.names == ["x", "c"] and g["c"].attrs["flops"] == 8 and g["c"].deps == ("x",)


def test_packed_4_bit_layouts_count_half_a_byte_an_element() -> None:
    # E(4) in a layout packs two s4 elements to a byte: 9 of them take 5 bytes; without
    # it XLA stores one to a byte. Both had been counted at one byte an element
    assert parse_type("s4[9]{0:E(4)}")[0].nbytes == 5
    assert parse_type("s4[9]{0}")[0].nbytes == 9
    g = from_hlo_text(
        "HloModule q\nENTRY e {\n  w = s4[3,5]{1,0:E(4)} parameter(0)\n"
        "  ROOT c = f32[3,5]{1,0} convert(w)\n}\n"
    )
    assert g["w"].output_bytes == 8 and g["c"].output_bytes == 60


def test_newer_small_element_types_are_read() -> None:
    # XLA's 2-bit and 1-bit integers and its MX floating-point types (4, 6 and 8 bits) had
    # been refused as unknown element types; a byte an element unless a layout packs them
    for prim in ("s2", "u2", "s1", "u1", "f4e2m1fn", "f6e2m3fn", "f8e8m0fnu", "f8e4m3fn"):
        assert parse_type(f"{prim}[6]{{0}}")[0].nbytes == 6, prim
    assert parse_type("f4e2m1fn[9]{0:E(4)}")[0].nbytes == 5
    assert parse_type("u2[8]{0:E(2)}")[0].nbytes == 2
    assert parse_type("f8e5m2[4]")[0].dtype == "float8"
    g = from_hlo_text(
        "HloModule q\nENTRY e {\n  w = f4e2m1fn[32,16]{1,0} parameter(0)\n"
        "  ROOT c = bf16[32,16]{1,0} convert(w)\n}\n"
    )
    assert g["w"].output_bytes == 512 and g["c"].output_bytes == 1024
    # complex128 counted at 16 bytes (it had been float64's 8); 16-bit and unsigned integers
    # under integer labels (they had fallen back to the float of their width)
    metas = [parse_type(f"{t}[4]")[0] for t in ("c128", "c64", "s16", "u16", "u32", "u64")]
    assert [(m.dtype, m.nbytes) for m in metas] == [
        ("complex128", 64), ("complex64", 32), ("int16", 8), ("int16", 8), ("int32", 16),
        ("int64", 32)]  # fmt: skip
    with pytest.raises(ValueError, match="unknown element type 'f9x'"):
        parse_type("f9x[2]")


def test_an_async_copy_moves_its_data_once() -> None:
    # copy-start returns (destination, source, context) and copy-done the destination: the
    # source was counted again as new memory and copy-done as a second copy of it all
    g = from_hlo_text(
        "HloModule c\nENTRY e {\n  p = f32[8] parameter(0)\n"
        "  s = (f32[8], f32[8], u32[]) copy-start(p)\n  d = f32[8] copy-done(s)\n"
        "  ROOT n = f32[8] negate(d)\n}\n"
    )
    assert (g["s"].kind, g["s"].output_bytes, g["s"].attrs["numel"]) == ("copy", 36, 9)
    assert (g["d"].kind, g["d"].output_bytes) == ("view", 0)
    assert set(g["n"].deps) == {"d", "s"}
    # a collective's start passes its operand through as the tuple's first element
    g = from_hlo_text(
        "HloModule a\nENTRY e {\n  p = f32[4] parameter(0)\n"
        "  s = (f32[4], f32[16]) all-gather-start(p), dimensions={0}\n"
        "  ROOT d = f32[16] all-gather-done(s)\n}\n"
    )
    assert (g["s"].output_bytes, g["s"].attrs["numel"], g["d"].output_bytes) == (64, 16, 0)


def test_opcodes_xla_prints_are_mapped() -> None:
    """``shift-right-arithmetic`` is arithmetic, ``opt-barrier`` (XLA's spelling) passes its
    tuple through and ``async-update`` is a view of its start: none of them allocates a copy
    or is warned as unknown."""
    text = """HloModule m
ENTRY e {
  x = s32[4]{0} parameter(0)
  y = s32[4]{0} parameter(1)
  a = s32[4]{0} shift-right-arithmetic(x, y)
  s = f32[] parameter(2)
  t = (s32[4]{0}, f32[]) tuple(a, s)
  ob = (s32[4]{0}, f32[]) opt-barrier(t)
  g1 = f32[] get-tuple-element(ob), index=1
  st = ((f32[]), f32[], u32[]) async-start(g1), calls=c
  up = ((f32[]), f32[], u32[]) async-update(st)
  dn = f32[] async-done(up)
  ROOT r = f32[] negate(dn)
}
c {
  p = f32[] parameter(0)
  ROOT n = f32[] negate(p)
}
"""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = from_hlo_text(text)
    assert "unmapped" not in g.attrs
    assert (g["a"].kind, g["a"].output_bytes) == ("elementwise", 16) and g["a"].attrs["flops"]
    assert (g["ob"].kind, g["ob"].output_bytes, g["ob"].deps) == ("view", 0, ("a", "s"))
    # the element read through the barrier keeps what the barrier held (both elements)
    assert set(g["g1"].deps) == {"ob", "a", "s"}
    assert (g["up"].kind, g["up"].output_bytes) == ("view", 0)
    assert (g["dn"].kind, g["dn"].output_bytes) == ("view", 0)
    assert g["st"].output_bytes == 8  # its f32[] result and u32[] context, not the operand
    assert "st" in g["r"].deps

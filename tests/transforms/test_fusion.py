"""Fusion pass on hand-worked graphs: legality, limits, bytes and durations."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.demo import seed_graph
from opsched.errors import GraphError, ProblemError
from opsched.heuristics import greedy
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.transforms import derive_deps, rename_buffers
from opsched.transforms.fusion import fuse
from opsched.validate import validate
from opsched.zoo.generators import random_network

F32 = 4


def ew(name: str, deps: tuple[str, ...] = (), numel: int = 100, dur: float = 1,
       fn: str = "relu", **kw: Any) -> Op:  # fmt: skip
    attrs = {"numel": numel, "arity": max(1, len(deps)), "fn": fn}
    return Op(name, dur, deps=deps, kind="elementwise", attrs=attrs,
              output_bytes=numel * F32, **kw)  # fmt: skip


def inp(name: str, numel: int = 100) -> Op:
    return Op(name, 1, kind="input", attrs={"numel": numel}, output_bytes=numel * F32)


def test_elementwise_chain_2n_accesses_become_2() -> None:
    # x -> e0 -> ... -> e4, unary, 100 float32 each: 5 ops x (read + write) x 400 B = 4000 B;
    # fused: one read of x and one write = 800 B
    ops = [inp("x")] + [ew(f"e{i}", (f"e{i - 1}" if i else "x",)) for i in range(5)]
    g = OpGraph(tuple(ops))
    f, rep = fuse(g)
    assert f.names == ["x", "e0+e1+e2+e3+e4"]
    op = f["e0+e1+e2+e3+e4"]
    assert op.kind == "fused" and op.deps == ("x",)
    assert op.attrs["bytes"] == 800 and op.attrs["flops"] == 500 and op.attrs["numel"] == 100
    assert op.attrs["fused_from"] == ["e0", "e1", "e2", "e3", "e4"]
    assert rep.bytes_before - rep.bytes_after == rep.bytes_saved == 3200
    assert rep.intermediate_bytes == 4 * 400
    assert (rep.ops_before, rep.ops_after) == (6, 2)
    assert rep.by_pattern() == {"elementwise-chain": 1}
    # duration rule: each member has flops 100, bytes 800 (weight 900); the first and the
    # last lose 400 B, the three inner ones 800 B: (500 + 3 * 100 + 500) / 900 = 1.444 -> 2
    assert op.duration == 2
    assert repr(rep) == "<FusionReport ops 6 -> 2 (1 fused ops), saved 3200 B>"


def test_report_of_a_large_graph_echoes_one_line() -> None:
    # 2,000 chains of 3 fusable ops: the dataclass repr listed all 2,000 groups (~500 kB)
    ops = []
    for c in range(2000):
        ops += [inp(f"x{c}"), ew(f"a{c}", (f"x{c}",)), ew(f"b{c}", (f"a{c}",)),
                ew(f"c{c}", (f"b{c}",))]  # fmt: skip
    _, rep = fuse(OpGraph(tuple(ops)))
    assert len(rep.groups) == 2000
    # per chain: a, b, c each read and write 400 B (2400 B); fused, one read and one write
    # (800 B): 1600 B saved, 3.2 MB over 2000 chains
    assert repr(rep) == "<FusionReport ops 8000 -> 4000 (2000 fused ops), saved 3200000 B>"


def test_durations_stay_fractional_for_float_graphs() -> None:
    g = OpGraph((inp("x"), ew("a", ("x",), dur=1.5), ew("b", ("a",), dur=1.5)))
    f, _ = fuse(g)
    # a: (100 + 400) / 900 * 1.5, b the same
    assert f["a+b"].duration == pytest.approx(2 * 1.5 * 500 / 900)


def test_conv_bn_relu() -> None:
    shape = {"N": 1, "C": 4, "H": 8, "W": 8, "K": 8, "R": 3, "S": 3, "pad_h": 1, "pad_w": 1}
    out = 8 * 8 * 8  # N K P Q
    g = OpGraph(
        (
            inp("x", 4 * 64),
            Op("conv", 10, deps=("x",), kind="conv2d", attrs=shape, output_bytes=out * F32,
               workspace_bytes=64, demands={"units": 1, "sm": 40}),
            Op("bn", 2, deps=("conv",), kind="batchnorm", attrs={"numel": out},
               output_bytes=out * F32),
            ew("relu", ("bn",), numel=out, dur=2, output=True),
        )
    )  # fmt: skip
    f, rep = fuse(g)
    op = f["conv+bn+relu"]
    conv_bytes = F32 * (4 * 64 + 8 * 4 * 9 + out)  # x, weights, y
    assert op.attrs["bytes"] == conv_bytes  # bn and relu traffic vanishes entirely
    assert op.attrs["flops"] == 2 * 8 * 4 * 9 * 64 + 2 * out + out
    assert rep.bytes_saved == 4 * out * F32
    assert op.output and op.output_bytes == out * F32 and op.workspace_bytes == 64
    assert op.demands == {"units": 1, "sm": 40}
    assert rep.by_pattern() == {"conv2d+batchnorm+relu": 1}


def test_gemm_bias_activation_keeps_the_outside_inputs() -> None:
    mm = {"M": 16, "N": 32, "K": 8}
    g = OpGraph(
        (
            inp("a", 16 * 8),
            inp("bias", 16 * 32),
            Op("gemm", 4, deps=("a",), kind="matmul", attrs=mm, output_bytes=512 * F32),
            ew("add", ("gemm", "bias"), numel=512, fn="add"),
            ew("gelu", ("add",), numel=512, fn="gelu"),
            ew("tail", ("gelu",), numel=512, output=True),
        )
    )
    f, rep = fuse(g, max_ops=3)
    assert f.names == ["a", "bias", "gemm+add+gelu", "tail"]
    assert f["gemm+add+gelu"].deps == ("a", "bias")
    assert f["tail"].deps == ("gemm+add+gelu",)  # consumers are renamed
    gemm_bytes = F32 * (16 * 8 + 8 * 32 + 512)
    add_bytes, gelu_bytes = F32 * 512 * 3, F32 * 512 * 2
    saved = 2 * (2 * 512 * F32)
    assert f["gemm+add+gelu"].attrs["bytes"] == gemm_bytes + add_bytes + gelu_bytes - saved
    assert rep.by_pattern() == {"matmul+add+gelu": 1}


def test_no_fusion_across_a_shared_or_output_intermediate() -> None:
    g = OpGraph(
        (
            inp("x"),
            ew("a", ("x",)),
            ew("b", ("a",)),
            ew("side", ("a",), output=True),  # a has two consumers
            ew("c", ("b",), output=True),  # a graph output...
            ew("d", ("c",), output=True),  # ...so c cannot be fused into d
        )
    )
    f, rep = fuse(g)
    assert sorted(f.names) == ["a", "b+c", "d", "side", "x"]
    assert rep.groups[0].members == ("b", "c")


def test_numel_mismatch_and_non_epilogue_consumers_stop_a_group() -> None:
    mm = {"M": 10, "N": 10, "K": 10}
    g = OpGraph(
        (
            inp("x"),
            ew("a", ("x",)),
            Op("m", 1, deps=("a",), kind="matmul", attrs=mm),  # not an epilogue
            ew("b", ("m",), numel=50),  # 50 != 100 elements
        )
    )
    f, rep = fuse(g)
    assert f.names == g.names and rep.groups == [] and rep.bytes_saved == 0
    assert f is g


def test_limits() -> None:
    ops = [inp("x")] + [ew(f"e{i}", (f"e{i - 1}" if i else "x",)) for i in range(10)]
    g = OpGraph(tuple(ops))
    _, rep = fuse(g, max_ops=4)
    assert [len(grp.members) for grp in rep.groups] == [4, 4, 2]
    # max_bytes: a chain of k unary ops moves 800 B whatever k, a binary op more
    _, rep = fuse(g, max_bytes=800)
    assert [len(grp.members) for grp in rep.groups] == [8, 2]  # max_ops 8 still applies
    _, rep = fuse(g, max_bytes=799)
    assert rep.groups == []
    _, rep = fuse(g, max_ops=1)
    assert rep.groups == []
    with pytest.raises(ProblemError):
        fuse(g, max_ops=0)
    with pytest.raises(ProblemError):
        fuse(g, max_bytes=-1)


def test_uncosted_ops_are_left_alone() -> None:
    g = seed_graph()  # kinds without shapes
    f, rep = fuse(g)
    assert f is g and rep.uncosted == 7 and rep.ops_after == 7


def test_fused_network_schedules_validly_and_is_a_fixed_point() -> None:
    g = random_network(120, seed=5)
    f, rep = fuse(g)
    assert rep.ops_after < rep.ops_before and rep.bytes_saved > 0
    assert rep.work_after <= rep.work_before
    # every original op is in exactly one op of the fused graph
    covered = [m for op in f.ops for m in op.attrs.get("fused_from", [op.name])]
    assert sorted(covered) == sorted(g.names)
    assert math.isclose(
        sum(op.output_bytes for op in f.ops) + rep.intermediate_bytes,
        sum(op.output_bytes for op in g.ops),
    )
    p = Problem(f, Machine(units=2))
    assert validate(p, greedy(p)).valid
    _, again = fuse(f)
    assert again.groups == []


def test_cli_fuse(tmp_path) -> None:  # type: ignore[no-untyped-def]
    src = tmp_path / "net.json"
    src.write_text(json.dumps(random_network(30, seed=1).to_dict()))
    out = tmp_path / "fused.json"
    r = CliRunner().invoke(main, ["fuse", str(src), "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["ops_after"] < doc["ops_before"] == 30
    assert len(json.loads(out.read_text())["ops"]) == doc["ops_after"]
    bad = tmp_path / "fused.txt"
    r = CliRunner().invoke(main, ["fuse", str(src), "-o", str(bad)])
    assert r.exit_code == 2 and not bad.exists()
    r = CliRunner().invoke(main, ["fuse", str(tmp_path / "missing.json"), "-o", str(out)])
    assert r.exit_code == 2 and "no such file" in r.output


def test_new_inputs_false_keeps_a_residual_add_separate() -> None:
    g = OpGraph(
        (
            inp("x"),
            inp("w"),
            ew("branch", ("x",), dur=5),  # a parallel branch
            ew("a", ("x",)),
            ew("add", ("a", "branch"), fn="add"),  # residual: a new input from the branch
            ew("scale", ("add", "w"), fn="mul"),  # a graph input (weight) is fine
            ew("relu", ("scale",), output=True),
            ew("side", ("branch",), output=True),  # so the branch cannot absorb the add
        )
    )
    f, _ = fuse(g)
    assert "a+add+scale+relu" in f  # the default fuses through the residual add
    f, rep = fuse(g, new_inputs=False)
    assert [grp.members for grp in rep.groups] == [("add", "scale", "relu")]
    assert f["add+scale+relu"].deps == ("a", "branch", "w")


def test_a_zero_duration_member_adds_no_demand_or_workspace() -> None:
    # e runs over an empty interval, so it holds neither its dma nor its workspace; fused
    # into h it had made the problem infeasible (dma 5 > 2, and 1000 B of workspace)
    from opsched.problem import Machine, Problem
    from opsched.solver import solve_brute_force

    ew = {"kind": "elementwise", "attrs": {"numel": 100}}
    g = OpGraph((
        Op("h", 2, output_bytes=400, **ew),
        Op("e", 0, deps=("h",), output_bytes=400, workspace_bytes=1000,
           demands={"units": 1, "dma": 5}, output=True, **ew),
    ), resources={"dma": 2})  # fmt: skip
    f, _ = fuse(g)
    (op,) = f.ops
    assert (op.duration, dict(op.demands), op.workspace_bytes) == (2.0, {"units": 1}, 0)
    for graph in (g, f):
        s = solve_brute_force(Problem(graph, Machine(units=1, memory_cap=800)))
        assert (s.status.value, s.makespan, s.peak_memory) == ("OPTIMAL", 2.0, 400)


def test_an_in_place_chain_still_reads_its_buffer() -> None:
    # W writes x; A and B update x in place (x = relu(x); x = neg(x)); C reads x. The fused
    # A+B reads the x that W wrote: with that read dropped, deriving the RAW edges again (or
    # renaming buffers) let A+B run before W
    def op(name: str, reads: tuple[str, ...], writes: tuple[str, ...], kind: str) -> Op:
        return Op(name, 1, kind=kind, attrs={"numel": 16}, output_bytes=64,
                  reads=reads, writes=writes)  # fmt: skip

    g = derive_deps(OpGraph((op("W", (), ("x",), "copy"),
                             op("A", ("x",), ("x",), "elementwise"),
                             op("B", ("x",), ("x",), "elementwise"),
                             op("C", ("x",), ("y",), "copy"))))  # fmt: skip
    f, _ = fuse(g)
    assert [(o.name, o.deps, o.reads, o.writes) for o in f.ops] == [
        ("W", (), (), ("x",)),
        ("A+B", ("W",), ("x",), ("x",)),
        ("C", ("A+B",), ("x",), ("y",)),
    ]
    want = [("W", ()), ("A+B", ("W",)), ("C", ("A+B",))]
    assert [(o.name, o.deps) for o in derive_deps(f, kinds=("RAW",)).ops] == want
    assert [(o.name, o.deps) for o in rename_buffers(f)[0].ops] == want


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"dtype": "half"}, "unknown dtype 'half'"),
        ({"stride_h": 0}, "stride must be >= 1"),
        ({"R": 9, "S": 9}, "window 9x9 does not fit the 4x4 input"),
    ],
)
def test_wrong_attrs_are_refused_not_left_unfused(attrs: dict[str, Any], message: str) -> None:
    # the conv's shape is given but wrong: cost apply refuses it, and fuse had counted it as
    # "without a known cost" and written the graph unfused, exit 0
    shape = {"N": 1, "C": 8, "H": 4, "W": 4, "K": 8, "R": 1, "S": 1} | attrs
    g = OpGraph((Op("conv", 4, kind="conv2d", attrs=shape, output_bytes=512),
                 ew("relu", ("conv",), numel=128)))  # fmt: skip
    with pytest.raises(GraphError, match=f"op 'conv': .*{message}"):
        fuse(g)
    # a shape left out is still "no known cost": the op stays as it is
    partial = {k: v for k, v in shape.items() if k != "K"}
    g = OpGraph((Op("conv", 4, kind="conv2d", attrs=partial, output_bytes=512),
                 ew("relu", ("conv",), numel=128)))  # fmt: skip
    f, rep = fuse(g)
    assert f is g and rep.uncosted == 1


def test_cli_fuse_refuses_a_wrong_dtype_in_one_line(tmp_path: Path) -> None:
    ops = [{"name": "a", "duration": 1, "kind": "elementwise",
            "attrs": {"numel": 4, "dtype": "half"}},
           {"name": "b", "duration": 1, "deps": ["a"], "kind": "elementwise",
            "attrs": {"numel": 4}}]  # fmt: skip
    src, out = tmp_path / "g.json", tmp_path / "f.json"
    src.write_text(json.dumps({"format": "opsched-graph/1", "ops": ops}))
    res = CliRunner().invoke(main, ["fuse", str(src), "-o", str(out)])
    assert res.exit_code != 0 and not out.exists()
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.output
    assert "g.json" in lines[0] and "op 'a'" in lines[0] and "unknown dtype 'half'" in lines[0]


def test_an_outside_tensor_two_members_read_is_read_once() -> None:
    # a = exp(x); b = a + x: the fused kernel reads x once and writes b (800 B); x's second
    # read had been counted too (1,200 B), against the rule of one read per group input
    g = OpGraph((inp("x"), ew("a", ("x",), fn="exp", dur=9), ew("b", ("a", "x"), fn="add", dur=12)))
    f, rep = fuse(g)
    op = f["a+b"]
    assert op.attrs["bytes"] == 800 and rep.bytes_saved == 2000 - 800
    # duration: a (100 flops, 800 B) loses its write, 400 B; b (200 flops, 1,200 B) its reads
    # of a and x, 800 B: 9 * 500 / 900 + 12 * 600 / 1400 = 10.14 -> 11 (it had been 14)
    assert op.duration == 11
    # a byte limit of exactly that traffic lets the group form
    assert [len(grp.members) for grp in fuse(g, max_bytes=800)[1].groups] == [2]

"""The torch importer: hand-counted FLOPs and bytes, both captures, views, errors, .pt2."""

from __future__ import annotations

import dataclasses
import sys
import warnings
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from click.testing import CliRunner  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import opsched  # noqa: E402
from opsched.cli import main  # noqa: E402
from opsched.errors import InputError, ProblemError  # noqa: E402
from opsched.importers import from_torch, read_graph  # noqa: E402
from opsched.importers._build import ImporterWarning  # noqa: E402


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x: Any) -> Any:
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.fc(x.flatten(1)).softmax(-1)


class Block(nn.Module):
    """A pre-norm transformer block built from a config (no weights downloaded)."""

    def __init__(self, d: int, heads: int, ff: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x: Any) -> Any:
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


def kinds_of(g: opsched.OpGraph) -> dict[str, int]:
    out: dict[str, int] = {}
    for op in g.ops:
        out[op.kind or ""] = out.get(op.kind or "", 0) + 1
    return out


@pytest.fixture(scope="module")
def cnn() -> opsched.OpGraph:
    torch.manual_seed(0)
    return from_torch(SmallCNN().eval(), (torch.randn(2, 3, 8, 8),))


def test_cnn_ops_flops_bytes(cnn: opsched.OpGraph) -> None:
    assert cnn.attrs["capture"] == "torch.export"
    assert [op.kind for op in cnn.ops] == [
        "input", "conv2d", "batchnorm", "elementwise", "pool", "view", "matmul", "softmax",
    ]  # fmt: skip
    conv = cnn["conv2d"]
    # 2 images x 8 filters x 8x8 outputs, each 3 channels x 3x3 taps, 2 FLOPs per MAC
    assert conv.attrs["flops"] == 2 * 2 * 8 * 8 * 8 * 3 * 3 * 3 == 55296
    assert conv.output_bytes == 2 * 8 * 8 * 8 * 4
    assert (conv.attrs["pad_h"], conv.attrs["stride_h"]) == (1, 1)
    assert cnn["max_pool2d"].output_bytes == 2 * 8 * 4 * 4 * 4
    fc = cnn["linear"]
    assert (fc.attrs["M"], fc.attrs["N"], fc.attrs["K"]) == (2, 10, 128)
    assert fc.attrs["flops"] == 2 * 2 * 10 * 128
    assert cnn["softmax"].attrs["rows"] == 2 and cnn["softmax"].attrs["cols"] == 10
    assert cnn["softmax"].output and cnn["x"].output_bytes == 2 * 3 * 8 * 8 * 4
    # weights are not ops: conv 8*27+8, bn 4*8 floats + an int64 counter, fc 128*10+10
    assert cnn.persistent_bytes == (224 + 32 + 1290) * 4 + 8
    assert cnn["conv2d"].attrs["aten"] == "aten.conv2d.default"


def test_view_keeps_its_base_alive(cnn: opsched.OpGraph) -> None:
    flat = cnn["flatten"]
    assert flat.kind == "view" and flat.output_bytes == 0 and flat.attrs["flops"] == 0
    # the linear reads the pool's memory through the view, so it depends on both
    assert set(cnn["linear"].deps) == {"flatten", "max_pool2d"}


def test_schedule_of_import_validates(cnn: opsched.OpGraph) -> None:
    g = cnn.replace_ops([dataclasses.replace(op, duration=1.0) for op in cnn.ops])
    problem = opsched.Problem(g, opsched.Machine(units=2))
    sched = opsched.greedy(problem)
    rep = opsched.validate(problem, sched)
    assert rep.valid and sched.makespan == 8  # a chain of 8 unit ops
    # worked by hand: x [0,2), conv [1,3), bn [2,4), relu [3,5), pool [4,7) (read by the
    # linear through the view), linear [6,8), softmax [7,8): the peak is two 4096-byte maps
    assert sched.peak_memory == rep.peak_memory == cnn.persistent_bytes + 2 * 4096


def test_mlp_dtype_override() -> None:
    mlp = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 16)).eval()
    x = torch.randn(8, 64)
    g32, g16 = from_torch(mlp, (x,), name="mlp"), from_torch(mlp, x, dtype="float16")
    assert g32.name == "mlp" and [op.kind for op in g32.ops] == [
        "input", "matmul", "elementwise", "matmul",
    ]  # fmt: skip
    assert [op.attrs["flops"] for op in g32.ops] == [0, 2 * 8 * 32 * 64, 8 * 32, 2 * 8 * 16 * 32]
    assert g32.ops[3].deps == (g32.ops[2].name,)
    assert g16.persistent_bytes * 2 == g32.persistent_bytes == (64 * 32 + 32 + 32 * 16 + 16) * 4
    assert [op.output_bytes * 2 for op in g16.ops] == [op.output_bytes for op in g32.ops]
    assert g16.ops[1].attrs["dtype"] == "float16"
    assert g16.ops[1].attrs["bytes"] * 2 == g32.ops[1].attrs["bytes"]


def test_transformer_block_from_config() -> None:
    b, s, d, h, ff = 2, 16, 64, 4, 256
    g = from_torch(Block(d, h, ff).eval(), (torch.randn(b, s, d),))
    k = kinds_of(g)
    assert k["matmul"] == 4 and k["attention"] == 1 and k["layernorm"] == 2
    att = next(op for op in g.ops if op.kind == "attention")
    assert (att.attrs["B"], att.attrs["Sq"], att.attrs["Skv"], att.attrs["D"]) == (b * h, s, s, 16)
    up = next(op for op in g.ops if op.kind == "matmul" and op.attrs["N"] == ff)
    assert up.attrs["flops"] == 2 * b * s * d * ff and up.output_bytes == b * s * ff * 4
    assert sum(op.output for op in g.ops) == 1
    assert "unmapped" not in g.attrs


def test_module_never_seen() -> None:
    """nn.TransformerEncoderLayer: a library module this importer was not written against."""
    b, s, d, ff = 3, 10, 32, 64
    layer = nn.TransformerEncoderLayer(d, 4, ff, batch_first=True).eval()
    g = from_torch(layer, (torch.randn(b, s, d),))
    k = kinds_of(g)
    assert k["matmul"] == 4 and k["attention"] == 1 and k["layernorm"] == 2
    assert k["elementwise"] == 3  # relu and the two residual adds
    flops = sorted(op.attrs["flops"] for op in g.ops if op.kind == "matmul")
    tokens = b * s
    assert flops == sorted([2 * tokens * d * 3 * d, 2 * tokens * d * d] + [2 * tokens * d * ff] * 2)
    params = sum(p.numel() for p in layer.parameters()) * 4
    assert g.persistent_bytes == params


def test_fallback_symbolic_trace_matches_export(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    net, x = SmallCNN().eval(), torch.randn(2, 3, 8, 8)
    ref = from_torch(net, (x,))

    def refuse(*a: object, **k: object) -> None:
        raise RuntimeError("export refused\nsecond line")

    monkeypatch.setattr(torch.export, "export", refuse)
    g = from_torch(net, (x,))
    assert g.attrs["capture"] == "fx.symbolic_trace"
    assert g.attrs["export_error"] == "RuntimeError: export refused"
    assert [op.kind for op in g.ops] == [op.kind for op in ref.ops]
    assert [op.attrs["flops"] for op in g.ops] == [op.attrs["flops"] for op in ref.ops]
    assert [op.output_bytes for op in g.ops] == [op.output_bytes for op in ref.ops]
    assert g.persistent_bytes == ref.persistent_bytes


def test_unknown_op_is_generic_and_warned() -> None:
    class Odd(nn.Module):
        def forward(self, x: Any) -> Any:
            return torch.special.bessel_j0(x) + 1

    with pytest.warns(ImporterWarning, match=r"aten.special_bessel_j0.default x1"):
        g = from_torch(Odd(), (torch.randn(4, 5),))
    op = g.ops[1]
    assert op.kind == "elementwise" and op.attrs["aten"] == "aten.special_bessel_j0.default"
    assert op.attrs["numel"] == 20 and g.attrs["unmapped"] == {"aten.special_bessel_j0.default": 1}


def test_capture_failure_is_one_line() -> None:
    class Branchy(nn.Module):
        def forward(self, x: Any) -> Any:
            if x.sum() > 0:  # data-dependent control flow: neither capture can follow it
                return x * 2
            return x

    with pytest.raises(InputError) as e, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from_torch(Branchy(), (torch.ones(3),))
    msg = str(e.value)
    assert "\n" not in msg and "torch.export failed" in msg and "symbolic_trace failed" in msg
    with pytest.raises(InputError, match=r"expected a torch\.nn\.Module"):
        from_torch(lambda x: x, (torch.ones(1),))


def test_missing_torch_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ProblemError, match=r"pip install torch==2\.13\.0"):
        from_torch(object(), ())


def test_pt2_archive_read_and_convert(tmp_path, cnn: opsched.OpGraph) -> None:
    torch.manual_seed(0)
    path = tmp_path / "cnn.pt2"
    torch.export.save(torch.export.export(SmallCNN().eval(), (torch.randn(2, 3, 8, 8),)), path)
    g = read_graph(path)
    assert g.name == "cnn" and [op.attrs["flops"] for op in g.ops] == [
        op.attrs["flops"] for op in cnn.ops
    ]
    out = tmp_path / "cnn.json"
    res = CliRunner().invoke(main, ["convert", str(path), str(out)])
    assert res.exit_code == 0, res.output
    assert opsched.read_graph(out).num_ops == 8
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(b"not a zip")
    res = CliRunner().invoke(main, ["convert", str(bad), str(tmp_path / "b.json")])
    assert res.exit_code == 2 and "bad.pt2" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "b.json").exists()


class Mutates(nn.Module):
    """relu's result y is read (v, a view; z) before ``y.add_(1)`` and after it."""

    def forward(self, x: Any) -> Any:
        y = x.relu()
        v = y[:2]
        z = y * 3
        y.add_(1)
        return v * 2, y * 4, z


@pytest.mark.parametrize("capture", ["torch.export", "fx.symbolic_trace"])
def test_an_in_place_write_is_ordered_after_earlier_reads_and_before_later_ones(
    capture: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # add_ had depended on relu only: z's read of the old y could run after the write, and the
    # view v (both captures) and, under symbolic_trace, y itself (read through relu's node)
    # could be read before the write they must see
    if capture != "torch.export":
        monkeypatch.setattr(torch.export, "export", lambda *a, **k: 1 / 0)
    g = from_torch(Mutates(), (torch.randn(4),))
    assert g.attrs["capture"] == capture
    view, times3, add_, times2, times4 = (op.name for op in g.ops[2:])
    assert (g[times3].kind, g[add_].kind, g[add_].output_bytes) == ("elementwise",) * 2 + (0,)
    assert set(g[add_].deps) == {"relu", view, times3}
    assert add_ in g[times2].deps and add_ in g[times4].deps
    assert add_ not in g[times3].deps

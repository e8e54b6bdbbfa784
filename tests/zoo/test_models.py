"""The model zoo against the published figures: parameters, multiply-adds, layer counts, shapes.

Sources of the published numbers (cited once here, used below):

- torchvision model docs (weights metadata ``num_params`` / ``GFLOPS``, the latter being
  multiply-adds): ResNet-50 25,557,032 / 4.09; Inception-v3 27,161,264 / 5.71 (with the
  auxiliary head); SqueezeNet 1.1 1,235,496 / 0.35.
- Keras ``NASNetMobile``: 5,326,716 parameters of which 36,738 non-trainable (batch-norm
  moving averages), so 5,289,978 trainable; the NASNet paper (Table 2): 5.3M and 564M
  multiply-adds for NASNet-A (4 @ 1056).
- RandWire paper (Table 2, small regime, WS(4, 0.75)): 583M multiply-adds, 5.6M parameters.
- Hugging Face ``bert-large-uncased``: 335,141,888 parameters; ``gpt2``: 124,439,808.
- U-Net paper: "In total the network has 23 convolutional layers"; 572x572 in, 388x388 out.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from opsched.errors import ProblemError
from opsched.heuristics import greedy
from opsched.ir.graph import OpGraph
from opsched.ir.kinds import KINDS, bytes_min, dtype_bytes, flops, output_numel
from opsched.problem import Machine, Problem
from opsched.validate import validate
from opsched.zoo.models import FLOPS_PER_TICK, MODELS, build
from opsched.zoo.models.randwire import ws_dag

NAMES = list(MODELS)


@pytest.fixture(scope="module")
def graphs() -> dict[str, OpGraph]:
    return {name: build(name) for name in NAMES}


def macs(g: OpGraph) -> float:
    """Multiply-adds of the convolutions and matrix products (how the figures are counted)."""
    return sum(op.attrs["flops"] for op in g.ops if op.kind in ("conv2d", "matmul")) / 2


def count(g: OpGraph, kind: str, pred=lambda op: True) -> int:
    return sum(1 for op in g.ops if op.kind == kind and pred(op))


# ------------------------------------------------------------------ every model
@pytest.mark.parametrize("name", NAMES)
def test_ops_follow_the_vocabulary(graphs: dict[str, OpGraph], name: str) -> None:
    g = graphs[name]
    assert set(MODELS) == {
        "inception_v3",
        "randwire",
        "nasnet_a_mobile",
        "squeezenet1_1",
        "resnet50",
        "bert_large_layer",
        "gpt2_block",
        "unet",
    }
    for op in g.ops:
        assert op.kind in KINDS, op.name
        assert all(key in op.attrs for key in KINDS[op.kind]), op.name
        assert op.attrs["dtype"] == "float32"
        # the stored flops / bytes are the vocabulary's formulas on the shape attrs
        shape_only = {k: v for k, v in op.attrs.items() if k not in ("flops", "bytes")}
        assert op.attrs["flops"] == flops(op.kind, shape_only), op.name
        assert op.attrs["bytes"] == bytes_min(op.kind, shape_only), op.name
        numel = output_numel(op.kind, shape_only)
        assert numel == math.prod(op.attrs["out_shape"]), op.name
        # a view aliases its input's memory (docs/importers.md): no bytes of its own
        assert op.output_bytes == (0 if op.kind == "view" else numel * 4), op.name
        assert numel > 0, op.name
        assert op.duration == max(1, math.ceil(op.attrs["flops"] / FLOPS_PER_TICK)) >= 1
        assert op.demands == {"units": 1}
    assert sum(op.attrs["params"] for op in g.ops) == g.attrs["params"]
    assert g.persistent_bytes == 4 * g.attrs["params"]
    assert g.attrs["flops"] == sum(op.attrs["flops"] for op in g.ops)
    # one graph input, one graph output, everything reachable: a connected network
    assert [op.name for op in g.ops if not op.deps] == ["input"]
    # one graph output (squeezenet's is a view: the op it aliases is kept to the end too)
    sinks = [op for op in g.ops if op.output and op.name not in {d for o in g.ops for d in o.deps}]
    assert len(sinks) == 1
    if sinks[0].kind == "view":
        assert all(g[d].output for d in sinks[0].deps)
    assert OpGraph.from_dict(g.to_dict()).to_dict() == g.to_dict()


@pytest.mark.parametrize("name", NAMES)
def test_a_schedule_of_every_model_passes_the_validator(
    graphs: dict[str, OpGraph], name: str
) -> None:
    g = graphs[name]
    p = Problem(g, Machine(units=4))
    s = greedy(p, priority="b-level")
    report = validate(p, s)
    assert report.valid, report.summary()
    # the critical path bounds the makespan from below; the work on 4 units too
    assert s.makespan >= max(g.work / 4, 1)


@pytest.mark.parametrize("name", NAMES)
def test_dtype_and_batch_scale_the_sizes(graphs: dict[str, OpGraph], name: str) -> None:
    g = graphs[name]
    half = build(name, dtype="float16")
    assert [op.output_bytes * 2 for op in half.ops] == [op.output_bytes for op in g.ops]
    assert half.persistent_bytes * 2 == g.persistent_bytes
    assert all(op.attrs["dtype"] == "float16" and dtype_bytes(op.attrs) == 2 for op in half.ops)
    two = build(name, batch=2)
    assert two.attrs["params"] == g.attrs["params"]
    assert [op.name for op in two.ops] == [op.name for op in g.ops]
    # every activation (attention scores included) holds one slice per batch element
    assert [op.output_bytes for op in two.ops] == [2 * op.output_bytes for op in g.ops]


# ------------------------------------------------------------------ published figures
def test_resnet50(graphs: dict[str, OpGraph]) -> None:
    g = graphs["resnet50"]
    assert g.attrs["params"] == 25_557_032
    assert macs(g) == pytest.approx(4.09e9, rel=0.005)
    # 50 layers: 49 convolutions on the main path + fc; plus 4 projection shortcuts
    down = count(g, "conv2d", lambda op: "downsample" in op.name)
    assert (count(g, "conv2d") - down + count(g, "matmul"), down) == (50, 4)
    assert (count(g, "batchnorm"), count(g, "elementwise", lambda op: op.attrs["fn"] == "add")) == (
        53,
        16,
    )
    assert g["layer4.2.relu"].attrs["out_shape"] == [1, 2048, 7, 7]
    assert g["layer1.2.relu"].attrs["out_shape"] == [1, 256, 56, 56]
    assert g.num_ops == 176


def test_inception_v3(graphs: dict[str, OpGraph]) -> None:
    g = graphs["inception_v3"]
    aux = (768 * 128 + 2 * 128) + (128 * 768 * 25 + 2 * 768) + (768 * 1000 + 1000)
    assert aux == 3_326_696
    assert g.attrs["params"] == 27_161_264 - aux
    assert macs(g) == pytest.approx(5.71e9, rel=0.005)
    # 5 stem convs, 3x7 (A), 4 (B), 4x10 (C), 6 (D), 2x9 (E) = 94 basic convs
    assert count(g, "conv2d") == count(g, "batchnorm") == 94
    assert count(g, "copy") == 11
    assert g["Mixed_5d.concat"].attrs["out_shape"] == [1, 288, 35, 35]
    assert g["Mixed_6e.concat"].attrs["out_shape"] == [1, 768, 17, 17]
    assert g["Mixed_7c.concat"].attrs["out_shape"] == [1, 2048, 8, 8]


def test_squeezenet1_1(graphs: dict[str, OpGraph]) -> None:
    g = graphs["squeezenet1_1"]
    assert g.attrs["params"] == 1_235_496
    assert macs(g) == pytest.approx(0.35e9, rel=0.01)
    assert (count(g, "conv2d"), count(g, "copy")) == (26, 8)  # 1 + 8 fires x 3 + classifier
    assert g["fire9.concat"].attrs["out_shape"] == [1, 512, 13, 13]
    assert g.ops[-1].attrs["out_shape"] == [1, 1000]


def test_nasnet_a_mobile(graphs: dict[str, OpGraph]) -> None:
    g = graphs["nasnet_a_mobile"]
    assert g.attrs["params"] == 5_326_716 - 36_738
    assert macs(g) == pytest.approx(564e6, rel=0.005)
    # 16 cells (2 stem + 12 normal + 2 reduction) x 5 separable branches x 2 = 160 depthwise
    depthwise = count(g, "conv2d", lambda op: op.attrs["groups"] == op.attrs["C"] > 1)
    assert depthwise == 160
    # + 160 pointwise + 16 cell 1x1 + conv0 + previous-input adjustments: 4 factorised
    # reductions (2 convs each) and 11 plain 1x1s = 356
    assert count(g, "conv2d") == 160 + 160 + 16 + 1 + 4 * 2 + 11
    assert g["stem_0.concat"].attrs["out_shape"] == [1, 44, 56, 56]
    assert g["stem_1.concat"].attrs["out_shape"] == [1, 88, 28, 28]
    assert g["cell_3.concat"].attrs["out_shape"] == [1, 264, 28, 28]
    assert g["reduction_1.concat"].attrs["out_shape"] == [1, 704, 7, 7]
    assert g["cell_11.concat"].attrs["out_shape"] == [1, 1056, 7, 7]


def test_randwire_small_regime() -> None:
    params, mas = [], []
    for seed in range(5):
        g = build("randwire", seed=seed)
        params.append(g.attrs["params"])
        mas.append(macs(g))
        # 3 stages of 32 nodes: one depthwise + one pointwise each, + 2 stem convs + classifier
        assert count(g, "conv2d") == 3 * 32 * 2 + 3
        assert g["stage5.output"].attrs["out_shape"] == [1, 312, 7, 7]
    assert sum(params) / 5 == pytest.approx(5.6e6, rel=0.03)
    assert sum(mas) / 5 == pytest.approx(583e6, rel=0.03)


def test_randwire_is_seeded_and_matches_its_stage_graphs() -> None:
    a, b, c = build("randwire", seed=7), build("randwire", seed=7), build("randwire", seed=8)
    assert a.to_dict() == b.to_dict()
    assert a.attrs["stages"] != c.attrs["stages"]
    for stage, info in a.attrs["stages"].items():
        # node v's first op (its aggregation, or its ReLU if it has one input) reads exactly
        # the last ops of its predecessors in the drawn DAG; sources read the stage input
        for v in range(info["nodes"]):
            first = next(op for op in a.ops if op.name.startswith(f"{stage}.node{v}."))
            preds = {f"{stage}.node{u}.bn" for u, w in info["edges"] if w == v}
            if preds:
                assert set(first.deps) == preds, (stage, v)
            else:
                assert first.name == f"{stage}.node{v}.relu" and len(first.deps) == 1
                assert a[f"{stage}.node{v}.depthwise"].attrs["stride_h"] == 2


def test_randwire_refuses_a_negative_seed() -> None:
    # random.Random(-4) is random.Random(4): seed -4 had built seed 4's network while
    # recording -4, so a sweep over signed seeds held each network twice
    four = build("randwire", seed=4)
    assert build("randwire", seed=np.int64(4)).attrs["stages"] == four.attrs["stages"]
    assert four.attrs["stages"] != build("randwire", seed=3).attrs["stages"]
    for bad in (-4, True, 1.5):
        with pytest.raises(ProblemError, match="seed must be an integer >= 0"):
            build("randwire", seed=bad)  # type: ignore[arg-type]


def test_ws_dag_lattice_and_rewiring() -> None:
    # p = 0 keeps the ring lattice: i joined to i +- 1, i +- 2 (mod 8)
    lattice = ws_dag(8, 4, 0.0, random.Random(0))
    assert lattice == sorted(
        {(min(i, (i + j) % 8), max(i, (i + j) % 8)) for i in range(8) for j in (1, 2)}
    )
    for seed in range(20):
        edges = ws_dag(32, 4, 0.75, random.Random(seed))
        assert len(edges) == len(set(edges)) == 64 and all(u < v for u, v in edges)
        deg = [0] * 32
        for u, v in edges:
            deg[u] += 1
            deg[v] += 1
        assert min(deg) >= 2
    assert ws_dag(32, 4, 0.75, random.Random(1)) != lattice
    with pytest.raises(ProblemError, match="even k"):
        ws_dag(8, 3, 0.5, random.Random(0))


def test_transformer_layers_rebuild_the_published_totals(graphs: dict[str, OpGraph]) -> None:
    bert, gpt = graphs["bert_large_layer"], graphs["gpt2_block"]
    # BERT-large: 24 layers + word/position/type embeddings + embedding LN + pooler
    embeddings = (30522 + 512 + 2) * 1024 + 2 * 1024
    assert 24 * bert.attrs["params"] + embeddings + 1024 * 1024 + 1024 == 335_141_888
    # GPT-2 small: 12 blocks + token and position embeddings + final layer norm
    assert 12 * gpt.attrs["params"] + 50257 * 768 + 1024 * 768 + 2 * 768 == 124_439_808
    assert bert["attention.scores"].attrs["out_shape"] == [1, 16, 512, 512]
    assert gpt["attn.scores"].attrs["out_shape"] == [1, 12, 1024, 1024]
    # the FFN / MLP products: 2 * tokens * d * 4d each
    assert bert["ffn.intermediate"].attrs["flops"] == 2 * 512 * 1024 * 4096
    assert gpt["mlp.fc"].attrs["flops"] == 2 * 1024 * 768 * 3072
    assert (bert.num_ops, gpt.num_ops) == (20, 19)


def test_unet(graphs: dict[str, OpGraph]) -> None:
    g = graphs["unet"]
    assert count(g, "conv2d") + count(g, "conv2d_bwd_data") == 23
    assert g.ops[-1].attrs["out_shape"] == [1, 2, 388, 388]
    assert g["bottom.relu2"].attrs["out_shape"] == [1, 1024, 28, 28]
    # the crops of the paper's Figure 1: 64 x 568 -> 392, 512 x 64 -> 56
    assert g["up1.crop"].attrs["out_shape"] == [1, 64, 392, 392]
    assert g["up4.crop"].attrs["out_shape"] == [1, 512, 56, 56]
    # 3x3 conv layers with bias, up-convs 2x2 with bias, the final 1x1 (2 classes)
    c3 = lambda a, b: 9 * a * b + b  # noqa: E731
    up = lambda a, b: 4 * a * b + b  # noqa: E731
    down = c3(1, 64) + c3(64, 64) + c3(64, 128) + c3(128, 128) + c3(128, 256) + c3(256, 256)
    down += c3(256, 512) + c3(512, 512) + c3(512, 1024) + c3(1024, 1024)
    ups = sum(up(2 * w, w) + c3(2 * w, w) + c3(w, w) for w in (512, 256, 128, 64))
    assert g.attrs["params"] == down + ups + 64 * 2 + 2 == 31_030_658


# ------------------------------------------------------------------ errors
def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ProblemError, match="unknown model 'vgg'; known: inception_v3, randwire"):
        build("vgg")
    with pytest.raises(ProblemError, match="batch"):
        build("resnet50", batch=0)
    with pytest.raises(ProblemError, match="dtype"):
        build("resnet50", dtype="float13")

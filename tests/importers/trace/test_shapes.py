"""Op kinds from recorded shapes: hand-worked cases."""

from __future__ import annotations

import pytest

from opsched.importers.trace.shapes import infer_kind, shape_text
from opsched.ir import kinds as K


def test_matmul_family() -> None:
    assert infer_kind("aten::mm", [[32, 1000], [1000, 2048]]) == (
        "matmul",
        {"M": 32, "N": 2048, "K": 1000, "dtype": "float32"},
    )
    kind, a = infer_kind("aten::bmm", [[1024, 96, 647], [1024, 647, 30]])
    assert (kind, a["B"], a["M"], a["N"], a["K"]) == ("matmul", 1024, 96, 30, 647)
    # linear on [batch, seq, K] activations: M = batch * seq
    kind, a = infer_kind(
        "aten::linear", [[4, 128, 512], [2048, 512], [2048]], ["c10::BFloat16"] * 3
    )
    assert (a["M"], a["N"], a["K"], a["dtype"]) == (512, 2048, 512, "bfloat16")
    # mismatched inner dimension: no kind
    assert infer_kind("aten::mm", [[3, 4], [5, 6]]) == (None, {})


def test_conv_from_concrete_inputs() -> None:
    dims = [[8, 64, 56, 56], [128, 64, 3, 3], [], [], [], [], []]
    concrete = ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"]
    kind, a = infer_kind("aten::conv2d", dims, ["float"] * 2, concrete)
    assert kind == "conv2d" and (a["stride_h"], a["pad_h"]) == (2, 1)
    assert K.conv_out_hw(a) == (28, 28)
    # 2 * N * K * C * R * S * P * Q, worked by hand
    assert K.flops(kind, a) == 2 * 8 * 128 * 64 * 3 * 3 * 28 * 28


@pytest.mark.parametrize(
    ("w", "h", "hint_hw", "stride", "pad"),
    [
        ((64, 3, 7, 7), 224, 112, 2, 3),
        ((512, 256, 1, 1), 56, 28, 2, 0),
        ((64, 64, 3, 3), 56, 56, 1, 1),
        ((64, 64, 1, 1), 56, 56, 1, 0),
    ],
)
def test_conv_stride_from_next_op(w: tuple, h: int, hint_hw: int, stride: int, pad: int) -> None:
    x = [32, w[1], h, h]
    kind, a = infer_kind(
        "aten::cudnn_convolution", [x, list(w)], out_hint=[32, w[0], hint_hw, hint_hw]
    )
    assert kind == "conv2d" and (a["stride_h"], a["pad_h"]) == (stride, pad)
    # a hint for another tensor (wrong channel count) is ignored: no kind
    assert infer_kind("aten::cudnn_convolution", [x, list(w)], out_hint=[32, 7, 5, 5])[0] is None


def test_conv_backward_parts() -> None:
    dims = [[32, 512, 7, 7], [32, 2048, 7, 7], [2048, 512, 1, 1]]
    kind, a = infer_kind("aten::cudnn_convolution_backward", dims)
    assert kind == "fused" and [p["kind"] for p in a["parts"]] == [
        "conv2d_bwd_data",
        "conv2d_bwd_filter",
    ]
    one = 2 * 32 * 2048 * 512 * 7 * 7  # the 1x1 conv's FLOPs, each half the same
    assert a["flops"] == 2 * one
    kind, a = infer_kind("aten::cudnn_convolution_backward", dims, parts={"filter"})
    assert a["flops"] == one and a["numel"] == 2048 * 512
    assert "conv2d_bwd_filter" in shape_text("aten::cudnn_convolution_backward", kind, a, dims)


def test_norms_softmax_elementwise_copy() -> None:
    kind, a = infer_kind("aten::native_layer_norm", [[1024, 512], [], [512], [512], []])
    assert (kind, a["rows"], a["cols"]) == ("layernorm", 1024, 512)
    kind, a = infer_kind("aten::_log_softmax", [[32, 1000], [], []])
    assert (kind, a["rows"], a["cols"]) == ("softmax", 32, 1000)
    kind, a = infer_kind("aten::add_", [[32, 256, 56, 56], [32, 256, 56, 56], []])
    assert (kind, a["numel"], a["arity"]) == ("elementwise", 32 * 256 * 56 * 56, 2)
    kind, a = infer_kind("aten::cudnn_batch_norm", [[32, 64, 112, 112], [64], [64]])
    assert (kind, a["numel"], a["channels"]) == ("batchnorm", 32 * 64 * 112 * 112, 64)
    kind, a = infer_kind("aten::copy_", [[951, 1024], [951, 1024], []], ["int", "int", "Bool"])
    assert (kind, a["numel"], a["dtype"]) == ("copy", 951 * 1024, "int32")
    kind, a = infer_kind(
        "aten::_scaled_dot_product_flash_attention",
        [[2, 8, 128, 64], [2, 8, 256, 64], [2, 8, 256, 64]],
    )
    assert (kind, a["B"], a["Sq"], a["Skv"], a["D"]) == ("attention", 16, 128, 256, 64)


def test_unknown_or_shapeless_ops_get_no_kind() -> None:
    assert infer_kind("aten::sum", [[1024, 100], [], [], []]) == (None, {})
    assert infer_kind("aten::max_pool2d", [[32, 64, 112, 112], [], [], [], [], []]) == (None, {})
    assert infer_kind("fbgemm::permute_sparse_features", [[4, 5]]) == (None, {})
    kind, a = infer_kind(
        "aten::max_pool2d",
        [[32, 64, 112, 112], [], [], [], [], []],
        concrete=["", "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", "False"],
    )
    assert kind == "pool" and K.output_numel(kind, a) == 32 * 64 * 56 * 56


@pytest.mark.parametrize(
    ("name", "dims", "b", "s"),
    [("aten::scaled_dot_product_attention", [8, 16, 512, 64], 128, 512),
     ("aten::_cudnn_attention_forward", [8, 16, 512, 64], 128, 512),
     ("aten::_efficient_attention_forward", [16, 64, 4, 64], 64, 64),
     ("aten::_flash_attention_forward", [16, 64, 4, 64], 64, 64)],
)  # fmt: skip
def test_attention_layouts_as_recorded_on_the_h200(name: str, dims: list, b: int, s: int) -> None:
    # input dims of the shipped H200 traces: SDPA and the cuDNN kernel take
    # (batch, heads, seq, dim), the memory-efficient / flash kernels (batch, seq, heads, dim)
    kind, a = infer_kind(name, [dims] * 3)
    assert (kind, a["B"], a["Sq"], a["Skv"], a["D"]) == ("attention", b, s, s, 64)

"""Lower bounds on convolutions and cached elementwise ops, a cap on large row-wise ops, and
a graph priced in another dtype than it was built in: the sweeps of a review, hand-worked."""

from __future__ import annotations

import numpy as np
import pytest

from opsched.cost import apply, load_profile
from opsched.cost.limits import STREAMING_CAP, STREAMING_CAP_FROM_US
from opsched.cost.specs import known_gpus, load_specs
from opsched.ir import kinds
from opsched.zoo.models import build

CONVS = [
    # 3x3 stride 1 (Winograd may save 4x), 1x1, strided 7x7: large enough to be compute-bound
    dict(N=32, C=2048, H=28, W=28, K=2048, R=3, S=3, pad_h=1, pad_w=1),
    dict(N=256, C=1024, H=14, W=14, K=2048, R=1, S=1, stride_h=2, stride_w=2),
    dict(N=256, C=1024, H=14, W=14, K=512, R=1, S=1),
    dict(N=256, C=3, H=224, W=224, K=64, R=7, S=7, pad_h=3, pad_w=3, stride_h=2, stride_w=2),
]


def _fastest_peak(spec, dtype: str) -> float:
    """TFLOPS of the fastest arithmetic a library could use for ``dtype`` on ``spec``: tensor
    cores of that dtype, TF32 for float32, the P100's half2 units for float16, else FP32."""
    p = spec.peaks
    best = p["fp32"]
    if dtype == "float32":
        best = max(best, p.get("tf32", 0.0))
    elif dtype == "float16":
        best = max(best, p.get("fp16", 0.0))
    elif dtype == "bfloat16":
        best = max(best, p.get("bf16", 0.0))
    return best


@pytest.mark.parametrize("gpu", known_gpus())
def test_no_convolution_beats_its_fastest_algorithm(gpu):
    # before: a 3x3 backward-filter pass of 1.9 TFLOP at 775 TFLOPS on a V100 in float16, and
    # 1x1 convolutions (which no fast algorithm helps) under their direct roofline
    p = load_profile(gpu)
    spec = load_specs()[p.gpu]
    for dtype in ("float32", "float16", "bfloat16"):
        for kind in ("conv2d", "conv2d_bwd_data", "conv2d_bwd_filter"):
            for a in CONVS:
                op = a | {"dtype": dtype}
                saving = 4.0 if a["R"] > 1 and a.get("stride_h", 1) == 1 else 1.0
                least = kinds.flops(kind, op) / (_fastest_peak(spec, dtype) * 1e6) / saving
                t = p.predict(kind, op, allow_tf32=True)
                assert t >= 0.9 * least * (1 - 1e-9), (kind, dtype, a, t, least)


def test_a_v100_float16_3x3_filter_gradient_at_most_4x_its_tensor_core_roofline():
    p = load_profile("V100-SXM2")
    op = CONVS[0] | {"dtype": "float16"}
    flops = 2 * 32 * 2048 * 2048 * 9 * 28 * 28  # 1.894 TFLOP
    tol = 1 - 1e-9
    assert p.predict("conv2d_bwd_filter", op) >= 0.9 * flops / 125e12 * 1e6 / 4 * tol
    # bfloat16 on a V100 is FP32 arithmetic (no bf16 tensor cores): 15.7 TFLOPS
    assert p.predict("conv2d_bwd_filter", op | {"dtype": "bfloat16"}) >= (
        0.9 * flops / 15.7e12 * 1e6 / 4 * tol
    )


def test_a_convolution_streaming_from_dram_is_not_faster_than_it():
    # 1x1 backward data over 256 x 64 x 56 x 56 -> 256 channels, float16: 514 MB to move
    p = load_profile("V100-SXM2")
    op = dict(N=256, C=256, H=56, W=56, K=64, R=1, S=1, dtype="float16")
    moved = 2 * (256 * 64 * 56 * 56 + 256 * 256 * 56 * 56 + 64 * 256)
    assert p.predict("conv2d_bwd_data", op) >= 0.9 * moved / 900e9 * 1e6 * (1 - 1e-9)  # 514 us


@pytest.mark.parametrize("gpu", ["V100-PCIe", "T4", "P4", "A40"])
def test_an_elementwise_op_larger_than_l2_streams_what_l2_cannot_hold(gpu):
    # a 2^22 float32 ReLU moves 32 MiB; the V100-PCIe's curve priced it at 25.9 us, 0.69 of
    # its DRAM time, though its L2 holds 6 MiB of it at most
    p = load_profile(gpu)
    l2_mib = {"V100-PCIe": 6, "T4": 4, "P4": 2, "A40": 6}[gpu]
    op = dict(numel=2**22, arity=1, fn="relu", dtype="float32")
    least = (32 - l2_mib) * 2**20 / (p.spec.mem_bw_gbps * 1e9) * 1e6
    assert p.predict("elementwise", op) >= least * (1 - 1e-9)


@pytest.mark.parametrize("gpu", known_gpus())
def test_a_large_row_wise_op_is_at_most_eight_times_its_roofline(gpu):
    # the A100-SXM4-80GB's float16 layernorm curve, beyond its data, priced 256 x 65,536 at 34
    # times its roofline (1,137 us; 128 us in float32); these are 4x larger (H200: 56 us)
    p = load_profile(gpu)
    for kind, op in [("layernorm", dict(rows=1024, cols=65536)), ("softmax", dict(rows=4096,
                     cols=32768)), ("rmsnorm", dict(rows=256, cols=262144))]:  # fmt: skip
        for dtype in ("float32", "float16"):
            a = op | {"dtype": dtype}
            roof = p.roofline(kind, a)
            assert roof >= STREAMING_CAP_FROM_US
            assert p.predict(kind, a) <= STREAMING_CAP * roof * (1 + 1e-9), (kind, dtype)


@pytest.mark.parametrize("gpu", known_gpus())
def test_a_small_row_wise_kernel_is_capped_at_eight_times_twenty_us(gpu):
    # under a 20 us roofline the cap counts 20 us: the L4's float16 layernorm backward over
    # 32 x 32,768 (14 us of roofline) was priced at 483 us, the same op over 64 rows at 224
    p = load_profile(gpu)
    for kind in ("layernorm", "softmax", "rmsnorm"):
        for rows in (1, 32, 64):
            a = dict(rows=rows, cols=32768, dtype="float16", fn="backward")
            assert p.predict(kind, a) <= STREAMING_CAP * max(
                p.roofline(kind, a), STREAMING_CAP_FROM_US
            ) * (1 + 1e-9)


@pytest.mark.parametrize("gpu", known_gpus())
def test_a_softmax_below_one_wave_costs_what_one_row_per_sm_does(gpu):
    # below one row per SM every row has its own thread block, so fewer rows take the same
    # time: the pooled softmax curve had priced one 4,096-wide float16 row at 16.3 us on the
    # A100-SXM4-80GB and 256 of them at 3.0 (the norms keep their fill term: ROW_FAMILIES)
    p = load_profile(gpu)
    sm = p.spec.sm_count
    for kind in ("softmax",):
        for dtype in ("float32", "float16"):
            for cols in (64, 1000, 4096):
                wave = p.predict(kind, dict(rows=sm, cols=cols, dtype=dtype))
                for rows in (1, 2, max(1, sm // 2)):
                    small = p.predict(kind, dict(rows=rows, cols=cols, dtype=dtype))
                    assert small <= wave * (1 + 1e-9), (kind, dtype, cols, rows)


def test_a_small_softmax_is_not_priced_far_above_a_larger_one():
    # the case the sweep found, by hand: A100-SXM4-80GB, float16, 4,096 columns
    p = load_profile("A100-SXM4-80GB")
    price = {r: p.predict("softmax", dict(rows=r, cols=4096, dtype="float16"))
             for r in (1, 256)}  # fmt: skip
    assert price[1] <= 2.0 * price[256], price


def test_a_graph_priced_in_another_dtype_than_it_was_built_in():
    # the zoo states each op's bytes in the dtype it was built in; applied in float16, a
    # float32 ResNet-50 kept those and was priced at 71.4 ms against 45.0 ms (batch 256)
    g32, g16 = build("resnet50", batch=4), build("resnet50", batch=4, dtype="float16")
    a, b = apply(g32, "A100-SXM4-80GB", "float16"), apply(g16, "A100-SXM4-80GB", "float16")
    da = np.array([op.duration for op in a.ops])
    db = np.array([op.duration for op in b.ops])
    assert np.allclose(da, db, rtol=1e-12)
    assert [op.output_bytes for op in a.ops] == [op.output_bytes for op in b.ops]
    assert sum(da) < sum(op.duration for op in apply(g32, "A100-SXM4-80GB", None).ops)


def test_apply_in_another_dtype_converts_the_weights_too() -> None:
    # a float32 build applied in float16 kept float32 weights (persistent bytes) and said
    # float32, twice the weights of the same network built in float16
    a = apply(build("resnet50", batch=8), "A100-SXM4-80GB", "float16")
    b = build("resnet50", batch=8, dtype="float16")
    assert a.persistent_bytes == b.persistent_bytes == build("resnet50").persistent_bytes // 2
    assert a.attrs["dtype"] == "float16"


def test_apply_keeps_the_bytes_of_several_outputs_and_of_in_place_ops() -> None:
    from opsched.ir import Op, OpGraph

    # a layer norm that also writes its mean and inverse deviation (2048 x 64 + 2 x 2048
    # floats): apply had kept the first output only; an in-place add allocates nothing
    g = OpGraph(
        (
            Op("x", 0, output_bytes=2048 * 64 * 4, kind="input", attrs={"numel": 2048 * 64}),
            Op("ln", 1, deps=("x",), output_bytes=(2048 * 64 + 2 * 2048) * 4, kind="layernorm",
               attrs={"rows": 2048, "cols": 64, "dtype": "float32"}),
            Op("add_", 1, deps=("ln",), output_bytes=0, kind="elementwise",
               attrs={"numel": 2048 * 64, "arity": 2, "dtype": "float32", "aliases": True}),
        )
    )  # fmt: skip
    a = apply(g, "H200")
    h = apply(g, "H200", "float16")
    assert [o.output_bytes for o in a.ops] == [2048 * 64 * 4, (2048 * 64 + 4096) * 4, 0]
    assert h["ln"].output_bytes == (2048 * 64 + 4096) * 2 and h["add_"].output_bytes == 0

"""Prices held to the physics: the roofline bound, bfloat16 without its tensor cores, the
traffic a profiled elementwise op really moves, and the rows a timing table cannot say."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from opsched.cost import apply, load_profile, resolve_gpu
from opsched.cost.aten import aten_kind
from opsched.cost.data import canonical_rows
from opsched.cost.features import family_of
from opsched.cost.limits import STREAMING_ROOFLINE_US, twin_bounds
from opsched.cost.mathmode import FP16_FP32_MATH, math_dtype
from opsched.cost.specs import known_gpus, load_specs
from opsched.errors import GraphError, InputError
from opsched.ir import Op, OpGraph

GEMMS = [{"M": m, "N": m, "K": m} for m in (512, 2048, 8192, 16384)] + [
    {"B": 64, "M": 1024, "N": 1024, "K": 4096},
    {"M": 1, "N": 65536, "K": 65536},
]


@pytest.mark.parametrize("gpu", known_gpus())
def test_no_gemm_is_priced_below_its_roofline(gpu):
    # the A100-SXM4-80GB's float32 curve rests on 25 profiler rows; extrapolated, it priced
    # an 8192-cube FP32 GEMM at 0.44 of its FP32 roofline (24.8 ms against 56.4)
    p = load_profile(gpu)
    for dtype in ("float32", "float16", "bfloat16"):
        for tf32 in (False, True):
            ops = [g | {"dtype": dtype} for g in GEMMS]
            t = p.predict_many(["matmul"] * len(ops), ops, allow_tf32=tf32)
            dt = [math_dtype("matmul", a, p.spec, tf32) for a in ops]
            roof = [p.roofline("matmul", a | {"dtype": d}) for a, d in zip(ops, dt, strict=True)]
            assert np.all(t >= np.array(roof) * (1 - 1e-9)), (dtype, tf32, t / roof)


def test_the_a100_fp32_gemm_runs_at_most_at_the_fp32_peak():
    p = load_profile("A100-SXM4-80GB")
    mm = {"M": 8192, "N": 8192, "K": 8192, "dtype": "float32"}
    fp32_roof = 2 * 8192**3 / 19.5e12 * 1e6  # us at the 19.5 TFLOPS FP32 SIMT peak
    assert p.predict("matmul", mm) >= fp32_roof * (1 - 1e-9)
    assert p.predict("matmul", mm, allow_tf32=True) < fp32_roof / 2  # TF32: 156 TFLOPS


@pytest.mark.parametrize("gpu", known_gpus())
def test_a_streaming_elementwise_kernel_is_not_faster_than_dram(gpu):
    p = load_profile(gpu)
    for dtype in ("float32", "float16"):
        for arity in (1, 2):
            op = {"numel": 2**28, "arity": arity, "fn": "relu" if arity == 1 else "add",
                  "dtype": dtype}  # fmt: skip
            roof = p.roofline("elementwise", op)
            assert roof >= STREAMING_ROOFLINE_US
            assert p.predict("elementwise", op) >= roof * (1 - 1e-9)


@pytest.mark.parametrize("gpu", ["V100-SXM2", "V100-PCIe", "T4", "P100-PCIe", "P4", "M40"])
def test_bfloat16_gemm_without_bf16_tensor_cores_runs_fp32_math(gpu):
    # bfloat16 tensor cores came with Ampere: before it, no bf16 GEMM runs on the fp16 ones
    p = load_profile(gpu)
    mm = {"M": 4096, "N": 4096, "K": 4096}
    assert math_dtype("matmul", mm | {"dtype": "bfloat16"}, p.spec) == FP16_FP32_MATH
    fp32_peak_us = 2 * 4096**3 / (p.spec.peaks["fp32"] * 1e6)
    bf16 = p.predict("matmul", mm | {"dtype": "bfloat16"})
    assert bf16 >= fp32_peak_us * (1 - 1e-9)
    if p.spec.half_tensor_cores:  # V100, T4: float16 on tensor cores is far faster
        assert p.predict("matmul", mm | {"dtype": "float16"}) < bf16 / 2


def test_bfloat16_keeps_its_tensor_cores_from_ampere_on():
    s = load_specs()
    mm = {"M": 64, "N": 64, "K": 64, "dtype": "bfloat16"}
    assert math_dtype("matmul", mm, s["A100-SXM4-80GB"]) == "bfloat16"
    assert s["T4"].peak_tflops("bfloat16") == s["T4"].peaks["fp32"]


@pytest.mark.parametrize(
    ("name", "dims", "types", "arity"),
    [
        ("aten::clamp_min", [[32, 64, 112, 112], [], [32, 64, 112, 112]],
         ["float", "Int", "float"], 1),  # clamp_min.out: the third tensor is written
        ("aten::copy_", [[8, 1024], [8, 1024], []], ["float", "float", "Bool"], 1),
        ("aten::add", [[32, 256, 56, 56], [256, 1, 1]], ["float", "float"], 1),  # a bias
        ("aten::add_", [[32, 256, 56, 56], [32, 256, 56, 56], []], ["float", "float", "Int"], 2),
        ("aten::where", [[64, 64], [64, 64], [64, 64]], ["bool", "float", "float"], 3),
    ],
)  # fmt: skip
def test_profiled_elementwise_arity_counts_full_size_operands(name, dims, types, arity):
    kind, attrs = aten_kind(name, dims, types)
    assert kind == "elementwise" and attrs["arity"] == arity


def _deepbench_gemm(dtypes: list[str], m: list[float] | None = None) -> pd.DataFrame:
    n = len(dtypes)
    return pd.DataFrame({"gpu": ["Tesla T4"] * n, "dtype": dtypes, "M": m or [512] * n,
                         "N": [512] * n, "K": [512] * n, "time_us": [100.0] * n})  # fmt: skip


def test_deepbench_dtypes_are_read_in_any_spelling():
    df = _deepbench_gemm(["fp16", "float16", "FP16", "half", "bfloat16", "fp32", "float", "int8"])
    got = [r["attrs"]["dtype"] for r in canonical_rows(df, "deepbench_gemm")]
    # T4: bfloat16 is a GEMM without its tensor cores, priced as half storage, FP32 math
    assert got == ["float16"] * 4 + [FP16_FP32_MATH, "float32", "float32", "int8"]
    # collected rows: "tf32" (any case) is float32 with TF32 allowed, on a GPU that has it
    a100 = _deepbench_gemm(["tf32", "TF32", "fp32"]).assign(gpu="NVIDIA A100-SXM4-80GB")
    got = [r["attrs"]["dtype"] for r in canonical_rows(a100, "deepbench_gemm")]
    assert got == ["tf32", "tf32", "float32"]


def test_an_unknown_dtype_or_an_impossible_size_names_its_row():
    with pytest.raises(InputError, match=r"data row 2: unknown dtype 'fp64'"):
        canonical_rows(_deepbench_gemm(["fp32", "fp64"]), "deepbench_gemm")
    with pytest.raises(InputError, match=r"data row 3: size 1e\+30 is not an integer"):
        canonical_rows(_deepbench_gemm(["fp32"] * 3, [512, 512, 1e30]), "deepbench_gemm")
    with pytest.raises(InputError, match=r"data row 1: size -4"):
        canonical_rows(_deepbench_gemm(["fp32"], [-4]), "deepbench_gemm")


def test_a_neusight_op_without_a_rule_is_left_out_not_guessed():
    df = pd.DataFrame({"gpu": ["Tesla T4"] * 3, "op": ["relu", "fancy_op", "addu"],
                       "B": [64] * 3, "H_dim": [1024] * 3,
                       "measured_time_us": [10.0] * 3})  # fmt: skip
    recs = canonical_rows(df, "neusight")
    assert [r["row"] for r in recs] == [0, 2]
    assert [r["attrs"]["arity"] for r in recs] == [1, 1]  # "addu": a scalar add
    # to price (not to fit), it is read as the profiler's aten::fancy_op: the catch-all
    priced = canonical_rows(df.drop(columns="measured_time_us"), "neusight", timed=False)
    assert [(r["row"], r["kind"]) for r in priced] == [(0, "elementwise"), (1, "opaque"),
                                                       (2, "elementwise")]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "key"),
    [("NVIDIA A100 40GB PCIe", "A100-PCIe-40GB"), ("NVIDIA H100 80GB PCIe", "H100-PCIe"),
     ("Tesla V100-PCIE-32GB", "V100-PCIe"), ("Tesla V100 32GB PCIe", "V100-PCIe")],
)  # fmt: skip
def test_pcie_boards_named_with_their_memory_size(name, key):
    assert resolve_gpu(name) == key


@pytest.mark.parametrize("name", ["NVIDIA H20", "Tesla M4", "Tesla P4000"])
def test_a_shorter_model_number_is_not_a_longer_ones_prefix(name):
    with pytest.raises(InputError, match="unknown GPU"):
        resolve_gpu(name)


def test_a_tick_too_small_for_a_float_is_refused_with_the_op():
    g = OpGraph([Op("mm", 0.0, kind="matmul", attrs={"M": 512, "N": 512, "K": 512})])
    with pytest.raises(GraphError, match=r"op 'mm'.*ticks long"):
        apply(g, "T4", tick_us=1e-320)
    assert apply(g, "T4", tick_us=1.0).ops[0].duration >= 1


def test_predict_prices_a_table_of_shapes_without_times(tmp_path):
    from click.testing import CliRunner

    from opsched.cli import main

    shapes = tmp_path / "shapes.csv"
    shapes.write_text("gpu,N,C,H,W,K,R,S,pad_h,pad_w,stride_h,stride_w\n"
                      "T4,8,64,56,56,64,3,3,1,1,1,1\n")  # fmt: skip
    out = tmp_path / "priced.csv"
    r = CliRunner().invoke(main, ["cost", "predict", "-i", str(shapes), "-o", str(out)])
    assert r.exit_code == 0, r.output
    priced = pd.read_csv(out)
    p = load_profile("T4")
    conv = {"N": 8, "C": 64, "H": 56, "W": 56, "K": 64, "R": 3, "S": 3, "pad_h": 1, "pad_w": 1}
    for col, kind in (("predicted_time_us", "conv2d"),
                      ("predicted_bwd_data_time_us", "conv2d_bwd_data")):  # fmt: skip
        # DeepBench's method (back-to-back library calls) and its math mode (TF32 off)
        want = p.predict(kind, conv | {"stride_h": 1, "stride_w": 1}, "wallclock", False)
        assert priced[col][0] == pytest.approx(want, rel=1e-9)
    scored = CliRunner().invoke(main, ["cost", "evaluate", str(shapes)])
    assert scored.exit_code == 2 and "no timing column" in scored.output
    assert str(shapes) in scored.output


HALF_CASES = [
    ("matmul", {"M": 333, "N": 100, "K": 4096}),
    ("matmul", {"B": 16, "M": 128, "N": 128, "K": 64}),
    ("conv2d", {"N": 8, "C": 3, "H": 224, "W": 224, "K": 64, "R": 7, "S": 7, "stride_h": 2,
                "stride_w": 2, "pad_h": 3, "pad_w": 3}),
    ("elementwise", {"numel": 2**24, "arity": 2, "fn": "add"}),
    ("elementwise", {"numel": 2**20, "arity": 1, "fn": "gelu"}),
    ("softmax", {"rows": 4096, "cols": 1000}),
    ("layernorm", {"rows": 8192, "cols": 1024}),
]  # fmt: skip


@pytest.mark.parametrize("gpu", known_gpus())
@pytest.mark.parametrize("method", ["kernel", "events"])
def test_a_half_op_costs_at_most_its_float32_twin_where_the_twin_is_measured(gpu, method):
    # the V100-SXM2 priced a 2^24-element float16 add at 3.4 times its float32 one: its half
    # curve is the pooled one, its float32 curve its own
    p = load_profile(gpu)
    kinds = [k for k, _ in HALF_CASES]
    fams = [family_of(k, a) for k, a in HALF_CASES]
    fp32 = p.predict_many(kinds, [a | {"dtype": "float32"} for _, a in HALF_CASES], method,
                          allow_tf32=False)  # fmt: skip
    bounded = [twin_bounds(p.curve(f, "float16", method), p.curve(f, "float32", method), f)
               for f in fams]  # fmt: skip
    for dt in ("float16", "bfloat16"):
        half = p.predict_many(kinds, [a | {"dtype": dt} for _, a in HALF_CASES], method)
        assert np.all((half <= fp32 * (1 + 1e-9)) | ~np.array(bounded)), (dt, half / fp32)
    if gpu == "V100-SXM2":
        assert bounded[fams.index("elementwise_binary")]


def test_batched_matmuls_count_every_leading_dim_as_batch() -> None:
    bf = ["c10::BFloat16"] * 2
    # a 4-D bmm [B, H, M, K] x [B, H, K, N] had been read as B=2, M=16, K=4096
    kind, a = aten_kind("aten::bmm", [[2, 16, 4096, 64], [2, 16, 64, 4096]], bf)
    assert kind == "matmul" and (a["B"], a["M"], a["N"], a["K"]) == (32, 4096, 4096, 64)
    kind, a = aten_kind("aten::bmm", [[1024, 96, 647], [1024, 647, 30]], ["float"] * 2)
    assert (a["B"], a["M"], a["N"], a["K"]) == (1024, 96, 30, 647)  # the 3-D case as before
    # matmul of a batch of rows and one matrix is one GEMM over all the rows
    kind, a = aten_kind("aten::matmul", [[8, 128, 768], [768, 3072]], bf)
    assert "B" not in a and (a["M"], a["N"], a["K"]) == (8 * 128, 3072, 768)


def test_an_embedding_lookup_moves_the_rows_it_gathers() -> None:
    # priced as an opaque op by its inputs' bytes, a 50,000 x 1,024 table cost the same
    # for 128 lookups as for 131,072
    from opsched.cost import load_profile

    types = ["c10::BFloat16", "long int", "Int", "Bool", "Bool"]
    small = aten_kind("aten::embedding", [[50000, 1024], [1, 128], [], [], []], types)
    big = aten_kind("aten::embedding", [[50000, 1024], [1024, 128], [], [], []], types)
    assert small == ("embedding", {"tokens": 128, "dim": 1024, "dtype": "bfloat16"})
    p = load_profile("H200")
    assert p.predict(*big) > 20 * p.predict(*small)


def test_matmul_batches_broadcast_as_torch_does() -> None:
    f = ["float"] * 2
    # [1, 16] and [8, 16] broadcast to 128 GEMMs (it had taken the first operand's 16)
    assert aten_kind("aten::matmul", [[1, 16, 128, 64], [8, 16, 64, 128]], f)[1]["B"] == 128
    assert aten_kind("aten::matmul", [[16, 128, 64], [8, 16, 64, 128]], f)[1]["B"] == 128
    # one matrix times a batch: the batch is the second operand's (N had been its K)
    kind, a = aten_kind("aten::matmul", [[128, 64], [8, 64, 32]], f)
    assert kind == "matmul"
    assert (a["B"], a["M"], a["N"], a["K"]) == (8, 128, 32, 64)


@pytest.mark.parametrize("gpu", ["T4", "A100-SXM4-80GB", "A40"])
def test_float8_without_fp8_tensor_cores_is_no_faster_than_float16(gpu):
    # int8 tensor cores run no floats: before Ada/Hopper an fp8 GEMM is fp16 work at best.
    # 8192^3 is compute-bound at either peak: 2 * 8192^3 FLOPs = 1.1 TFLOP, so on the A100
    # 3,524 us at 312 TFLOPS (fp16), not 1,762 us at 624 TOPS (int8)
    p = load_profile(gpu)
    assert "fp8" not in p.spec.peaks and p.spec.peaks["int8"] > p.spec.peaks["fp16"]
    mm = {"M": 8192, "N": 8192, "K": 8192}
    fp16_peak_us = 2 * 8192**3 / (p.spec.peaks["fp16"] * 1e6)
    assert p.roofline("matmul", mm | {"dtype": "float8"}) == pytest.approx(fp16_peak_us)
    assert p.predict("matmul", mm | {"dtype": "float8"}) >= fp16_peak_us * (1 - 1e-9)


def test_float8_keeps_its_tensor_cores_on_hopper():
    p = load_profile("H100-SXM5")
    mm = {"M": 8192, "N": 8192, "K": 8192, "dtype": "float8"}
    assert p.roofline("matmul", mm) == pytest.approx(2 * 8192**3 / (1978.9 * 1e6))


@pytest.mark.parametrize("gpu", ["T4", "A100-SXM4-80GB", "H100-SXM5"])
def test_an_op_of_no_output_element_costs_no_more_than_a_call(gpu):
    # PyTorch returns an empty result without a kernel; the conv curve had priced a batch of
    # 0 above a batch of 1 (T4: 192 us against 88; per call 368 against 272)
    p = load_profile(gpu)
    conv = {"N": 0, "C": 64, "H": 56, "W": 56, "K": 64, "R": 3, "S": 3, "stride_h": 1,
            "stride_w": 1, "pad_h": 1, "pad_w": 1}  # fmt: skip
    relu0 = {"numel": 0, "arity": 1, "fn": "relu"}
    for method in ("kernel", "events"):
        empty = p.predict("conv2d", conv, method=method)
        assert empty <= p.predict("conv2d", {**conv, "N": 1}, method=method)
        assert empty == p.predict("elementwise", relu0, method=method)
    assert p.predict("conv2d", conv) == p.kernel_floor
    assert p.predict("matmul", {"M": 0, "N": 64, "K": 64}) == p.kernel_floor

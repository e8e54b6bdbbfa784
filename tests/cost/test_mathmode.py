"""TF32 math mode: the rule, the data mapping (kernel names / source), prediction and apply."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from opsched.cost import apply, load_profile
from opsched.cost.data import canonical_rows
from opsched.cost.fitdata import load_fit_data, shape_key
from opsched.cost.mathmode import (
    CONV_KINDS,
    PYTORCH_DEFAULT,
    kernel_math_mode,
    math_dtype,
    mode_of,
)
from opsched.cost.specs import load_specs, parse_specs_csv
from opsched.datasets import dataset_path
from opsched.ir import Op, OpGraph

DEEPBENCH_GEMM = dataset_path("kernel-timings") / "deepbench_gemm.csv"

CONV = {"N": 32, "C": 256, "H": 28, "W": 28, "K": 256, "R": 3, "S": 3, "pad_h": 1, "pad_w": 1}
MM = {"M": 8192, "N": 8192, "K": 8192}


def test_rule_follows_pytorch_defaults_and_needs_tf32_hardware():
    specs = load_specs()
    a100, h100, v100, t4 = (specs[k] for k in ("A100-PCIe-40GB", "H100-SXM5", "V100-SXM2", "T4"))
    assert PYTORCH_DEFAULT == (False, True) == mode_of(None)
    for spec in (a100, h100):
        assert math_dtype("conv2d_bwd_filter", CONV, spec) == "tf32"
        assert math_dtype("matmul", MM, spec) == "float32"
        assert math_dtype("matmul", MM, spec, allow_tf32=True) == "tf32"
        assert math_dtype("conv2d", CONV, spec, allow_tf32=False) == "float32"
        assert math_dtype("softmax", {"rows": 4, "cols": 4}, spec, allow_tf32=True) == "float32"
        assert math_dtype("matmul", MM | {"dtype": "float16"}, spec, True) == "float16"
    for spec in (v100, t4):  # no TF32 tensor cores before Ampere
        assert math_dtype("conv2d", CONV, spec, allow_tf32=True) == "float32"


def test_kernel_names_decide_the_mode():
    assert kernel_math_mode("cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4") == (True, True)
    assert kernel_math_mode("sm80_xmma_gemm_tf32f32_tf32f32_f32_tn_n") == (True, True)
    assert kernel_math_mode("volta_sgemm_128x32_nn") == (False, False)
    assert kernel_math_mode("void at::native::vectorized_elementwise_kernel") is None
    assert kernel_math_mode(float("nan")) is None


def _profiler_rows(gpu: str, kernels: str) -> pd.DataFrame:
    dims = "[[4096, 64], [64, 2798]]"
    return pd.DataFrame({"gpu": [gpu], "op": ["aten::mm"], "input_dims": [dims],
                         "input_types": ['["float", "float"]'], "gpu_time_us": [101.0],
                         "kernels": [kernels]})  # fmt: skip


def test_profiler_rows_take_the_mode_their_kernels_show():
    tc = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x64_16x6_tn_align4>"
    dt = lambda df: canonical_rows(df, "profiler_ops")[0]["attrs"]["dtype"]  # noqa: E731
    assert dt(_profiler_rows("NVIDIA A100-SXM4-80GB", tc)) == "tf32"
    assert dt(_profiler_rows("NVIDIA A100-SXM4-80GB", "ampere_sgemm_128x64_nn")) == "float32"
    # no kernel names: the source's mode (HTA ran TF32 matmuls); Volta has no TF32 at all
    assert dt(_profiler_rows("NVIDIA A100-SXM4-80GB", "")) == "tf32"
    assert dt(_profiler_rows("Tesla V100-SXM2-16GB", tc)) == "float32"
    neusight = pd.DataFrame({"gpu": ["NVIDIA A100-PCIE-40GB"], "op": ["linear"], "B": [1],
                             "M": [512], "N": [512], "K": [512], "H_dim": [0], "Cin": [0],
                             "measured_time_us": [60.0]})  # fmt: skip
    assert canonical_rows(neusight, "neusight")[0]["attrs"]["dtype"] == "float32"  # TF32 off


def test_collected_rows_keep_their_dtype_and_the_mode_their_kernel_shows():
    """Rows of ``opsched cost collect`` (NeuSight schema) in half precision or with TF32
    convolutions, as timed on the H200 (``opsched_h200.csv.gz``)."""
    conv = {"gpu": "NVIDIA H200", "op": "conv", "B": 8, "Cin": 64, "Cout": 64, "kernel": 3,
            "H": 56, "W": 56, "stride": 1, "pad": 1, "H_dim": 0,
            "measured_time_us": 60.0}  # fmt: skip
    tf32 = "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x32"
    simt = "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize32x32x8_ffma_"
    rows = pd.DataFrame(
        [conv | {"dtype": "float32", "main_kernel": tf32},
         conv | {"dtype": "float32", "main_kernel": simt},
         conv | {"dtype": "float32"},  # no kernel name: NeuSight's mode, TF32 off
         conv | {"dtype": "bfloat16", "main_kernel": tf32},
         conv | {"dtype": "float64"},  # not a dtype of the schema: left out
         conv | {"dtype": None}]  # blank: NeuSight's float32
    )  # fmt: skip
    got = [r["attrs"]["dtype"] for r in canonical_rows(rows, "neusight")]
    assert got == ["tf32", "float32", "float32", "bfloat16", "float32"]
    no_column = rows.drop(columns=["dtype", "main_kernel"]).head(1)
    assert [r["attrs"]["dtype"] for r in canonical_rows(no_column, "neusight")] == ["float32"]


def test_tf32_shape_groups_with_its_float32_shape():
    a = {"M": 4, "N": 5, "K": 6}
    assert shape_key("matmul", a | {"dtype": "tf32"}) == shape_key(
        "matmul", a | {"dtype": "float32"}
    )
    assert shape_key("matmul", a | {"dtype": "float16"}) != shape_key("matmul", a)


def test_a100_trace_gemms_respect_the_tf32_roofline():
    """With the FP32 SIMT peak a third of the A100 trace's fp32 GEMMs beat the roofline (up to
    6x); with the mode read from their kernels none does (the least ratio is 1.22)."""
    fd = load_fit_data(files=["hta_ops.csv.gz"]).families["matmul"]
    s = fd.gpu == "A100-SXM4-40GB"
    assert s.sum() > 1000
    ratio = fd.t[s] / fd.roof[s]
    assert ratio.min() >= 1.0
    assert np.median(ratio) > 3.0


@pytest.mark.parametrize("gpu", ["A100-SXM4-80GB", "H100-SXM5", "L4", "H200"])
def test_tf32_price_never_exceeds_fp32_and_beats_it_on_large_gemms(gpu: str):
    p = load_profile(gpu)
    shapes = [CONV | {"N": n, "C": c, "K": c} for n in (1, 8, 64) for c in (16, 128, 512)]
    for kind in ("conv2d", "conv2d_bwd_data", "conv2d_bwd_filter"):
        fp32 = p.predict_many([kind] * len(shapes), shapes, allow_tf32=False)
        tf32 = p.predict_many([kind] * len(shapes), shapes, allow_tf32=True)
        default = p.predict_many([kind] * len(shapes), shapes)  # PyTorch: cuDNN TF32 on
        assert np.all(tf32 <= fp32) and np.array_equal(default, tf32)
    big = p.predict("matmul", MM, allow_tf32=True)
    fp32_mm = p.predict("matmul", MM)  # PyTorch >= 1.12: matmuls stay FP32 by default
    assert fp32_mm == p.predict("matmul", MM, allow_tf32=False)
    assert big < 0.8 * fp32_mm


def test_volta_ignores_the_option_and_apply_records_it():
    v = load_profile("V100-PCIe")
    assert v.predict("conv2d", CONV, allow_tf32=True) == v.predict("conv2d", CONV, allow_tf32=False)
    g = OpGraph((Op("c", kind="conv2d", attrs=CONV), Op("m", deps=("c",), kind="matmul",
                                                        attrs=MM)))  # fmt: skip
    on, off, dflt = (
        apply(g, "A100-SXM4-80GB", "float32", allow_tf32=a) for a in (True, False, None)
    )
    assert dflt.attrs["cost_model"]["allow_tf32"] is None and on.attrs["cost_model"]["allow_tf32"]
    assert dflt["c"].duration == on["c"].duration <= off["c"].duration
    assert dflt["m"].duration == off["m"].duration > on["m"].duration
    assert dflt["c"].attrs["dtype"] == "float32"  # the op's own dtype is kept


def test_half_gemms_before_volta_are_fp32_math():
    """Before Volta no tensor cores: float16 GEMMs / convs multiply-accumulate in FP32 (the
    P100's 18.7 TFLOPS of half2 arithmetic accumulates in half precision, which PyTorch does
    not ask for), so they take the FP32 peak and the fp32 curve; elementwise ops keep float16."""
    specs = load_specs()
    half = MM | {"dtype": "float16"}
    for key in ("P100-PCIe", "P4", "GTX-1080-Ti", "M40"):
        assert not specs[key].half_tensor_cores
        for kind in ("matmul", "attention", "conv2d", "conv2d_bwd_data", "conv2d_bwd_filter"):
            assert math_dtype(kind, half, specs[key]) == "float16_fp32math"
        assert math_dtype("elementwise", {"numel": 8, "dtype": "float16"}, specs[key]) == "float16"
        assert specs[key].peak_tflops("float16_fp32math") == specs[key].peaks["fp32"]
    for key in ("V100-PCIe", "T4", "A100-SXM4-80GB", "H200"):
        assert specs[key].half_tensor_cores
        assert math_dtype("matmul", half, specs[key]) == "float16"
    # the two stay one shape for the k-fold groups, as tf32 does with float32
    assert shape_key("matmul", half) == shape_key("matmul", MM | {"dtype": "float16_fp32math"})


def test_deepbench_pseudo_half_rows_are_fp32_math():
    """DeepBench's P100 "half" rows say "16 bit inputs, 32 bit multiplication, 32 bit
    addition": priced at the FP32 peak, fitted as the P100's own half curve, a class of their
    own for the trees."""
    fd = load_fit_data(files=["deepbench_gemm.csv"]).families["matmul"]
    p100 = fd.gpu == "P100-PCIe"
    assert p100.sum() == 320 and set(fd.cls[p100]) == {"fp32", "half"}
    assert set(fd.tree_cls()[p100]) == {"fp32", "half_fp32math"}
    assert set(fd.tree_cls()[fd.gpu == "T4"]) == {"fp32", "half", "int8"}
    # at the FP32 peak no pseudo-half GEMM beats its roofline, and the large ones come
    # within 2x of it
    pseudo = p100 & (fd.tree_cls() == "half_fp32math")
    assert (fd.t[pseudo] >= fd.roof[pseudo]).all() and (fd.t[pseudo] < 2 * fd.roof[pseudo]).any()
    df = pd.read_csv(DEEPBENCH_GEMM)
    rows = canonical_rows(df[df.gpu == "NVIDIA Tesla P100"], "deepbench_gemm")
    assert sorted({r["attrs"]["dtype"] for r in rows}) == ["float16_fp32math", "float32"]


@pytest.mark.parametrize("gpu", ["P4", "GTX-1080-Ti", "M40", "P100-PCIe"])
def test_half_gemms_before_volta_cost_about_their_fp32_time(gpu: str):
    """Without tensor cores a float16 GEMM is FP32 arithmetic on half the bytes: a GPU that
    never timed one prices it with its own fp32 curve, not with the tensor-core half curve of
    other GPUs (which had priced the P4's 8192^3 GEMM at a quarter of its float32 time). The
    P100 has DeepBench's pseudo-half timings, measured at a median 0.8x its float32 ones for
    the same convolution (0.6-1.0x between quartiles)."""
    p = load_profile(gpu)
    for n in (1024, 4096, 8192):
        mm = {"M": n, "N": n, "K": n}
        fp32, half = p.predict("matmul", mm), p.predict("matmul", mm | {"dtype": "float16"})
        assert 0.5 * fp32 < half <= 1.1 * fp32, (n, fp32, half)


def test_pascal_int8_peak_is_dp4a():
    """Compute capability 6.1 has DP4A (4x the FP32 rate); the table gives it only for the P4
    ("22 (dp4a)" at 5.5 TFLOPS), so the others get the same rule; sm_60 and Maxwell have none."""
    head = "gpu,variant,arch,sm_count,mem_bw_GBps,fp32_tflops,int8_tc_tops_dense\n"
    rows = (
        "GTX 1080 Ti,PCIe,Pascal sm_61,28,484,11.3,\nP4,PCIe,Pascal sm_61,20,192,5.5,22 (dp4a)\n"
        "P100,PCIe 16GB,Pascal sm_60,56,732,9.3,\nTesla M40,PCIe,Maxwell sm_52,24,288,7.0,\n"
    )
    s = parse_specs_csv(head + rows)
    assert s["GTX-1080-Ti"].peak_tflops("int8") == pytest.approx(45.2)
    assert s["P4"].peak_tflops("int8") == 22.0
    assert "int8" not in s["P100-PCIe"].peaks and "int8" not in s["M40"].peaks
    assert load_specs()["Titan-Xp"].peak_tflops("int8") == pytest.approx(4 * 12.1)
    # Volta too: its tensor cores take fp16 only, so int8 is DP4A, not the 125 TFLOPS of fp16
    assert load_specs()["V100-SXM2"].peak_tflops("int8") == pytest.approx(4 * 15.7)
    from opsched.cost import load_profile
    from opsched.ir import Op

    n = 8192
    op = Op("g", 0, kind="matmul", attrs={"M": n, "N": n, "K": n, "dtype": "int8"})
    assert load_profile("V100-SXM2").predict(op) >= 2 * n**3 / (4 * 15.7e12) * 1e6 * 0.999


def test_collected_deepbench_rows_take_each_timings_mode_from_its_kernel() -> None:
    """A DeepBench-schema row timed by ``opsched cost collect`` names the longest kernel of
    each direction: with TF32 allowed cuDNN still picks FP32 SIMT engines for some shapes."""
    row = {"gpu": "NVIDIA H200", "N": 8, "C": 64, "H": 56, "W": 56, "K": 64, "R": 3, "S": 3,
           "pad_h": 1, "pad_w": 1, "stride_h": 1, "stride_w": 1, "fwd_time_us": 50.0,
           "bwd_data_time_us": 60.0, "bwd_filter_time_us": 70.0}  # fmt: skip
    kernels = {"fwd_kernel": "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc",
               "bwd_data_kernel": "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3>",
               "bwd_filter_kernel": "void cudnn::ops::nchwToNhwcKernel<float>"}  # fmt: skip
    df = pd.DataFrame([{**row, "dtype": "tf32", **kernels}, {**row, "dtype": "fp32"},
                       {**row, "dtype": "bf16"}])  # fmt: skip
    got = {(r["row"], r["kind"]): r["attrs"]["dtype"] for r in canonical_rows(df, "deepbench_conv")}
    assert got[(0, "conv2d")] == "tf32"
    assert got[(0, "conv2d_bwd_data")] == "float32"  # an FP32 SIMT engine
    assert got[(0, "conv2d_bwd_filter")] == "tf32"  # a layout kernel says nothing: TF32 allowed
    assert {got[(1, k)] for k in CONV_KINDS} == {"float32"}
    assert {got[(2, k)] for k in CONV_KINDS} == {"bfloat16"}
    gemm = pd.DataFrame({"gpu": ["NVIDIA H200"] * 2, "M": [64] * 2, "N": [64] * 2, "K": [64] * 2,
                         "transA": ["N"] * 2, "transB": ["N"] * 2, "time_us": [5.0] * 2,
                         "dtype": ["tf32", "tf32"],
                         "kernel": ["sm90_xmma_gemm_f32f32_tf32f32_f32_nn",
                                    "ampere_sgemm_64x64_nn"]})  # fmt: skip
    got_gemm = [r["attrs"]["dtype"] for r in canonical_rows(gemm, "deepbench_gemm")]
    assert got_gemm == ["tf32", "float32"]

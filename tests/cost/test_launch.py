"""Kernel rows without an op are priced from their launch (opsched.cost.launch)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from opsched.cost.data import NO_OP, read_table
from opsched.cost.evaluate import predict_table
from opsched.cost.launch import CHUNK, launch_kind
from opsched.cost.profile import load_profile
from opsched.datasets import dataset_path

ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
       "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
       "at::detail::Array<char*, 3>)")  # fmt: skip
NEG_HALF = ("void at::native::vectorized_elementwise_kernel<4, at::native::neg_kernel_cuda("
            "at::TensorIteratorBase&)::{lambda(c10::Half)#1}, at::detail::Array<char*, 2> >"
            "(int, at::detail::Array<char*, 2>)")  # fmt: skip
COPY = ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::"
        "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(double)#1}>"
        "(at::TensorIteratorBase&)::{lambda(int)#1}>(int)")  # fmt: skip
ADAM = ("void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float, "
        "float, float, float, float, float, adamMode_t, float>(int, int volatile*)")  # fmt: skip
REDUCE = ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::"
          "func_wrapper_t<float, at::native::sum_functor<float, float, float> >, unsigned int, "
          "float, 4> >(float)")  # fmt: skip


def test_elementwise_launches_give_elements_operands_and_type() -> None:
    # 4 elements per thread: 16 blocks of 128 threads are 8,192 elements; 3 pointers are
    # two inputs and the output
    assert launch_kind(ADD, "[16, 1, 1]", "[128, 1, 1]") == (
        "elementwise",
        {"numel": 8192, "arity": 2, "dtype": "float32"},
    )
    assert launch_kind(NEG_HALF, "[3, 1, 1]", "[64, 1, 1]") == (
        "elementwise",
        {"numel": 768, "arity": 1, "dtype": "float16"},
    )
    # the strided path: nt * vt = 256 elements per block, whatever the block size reads
    assert launch_kind(COPY, "[10, 1, 1]", "[128, 1, 1]") == (
        "elementwise",
        {"numel": 2560, "arity": 1, "dtype": "float64"},
    )


def test_an_optimizer_step_is_chunks_of_its_tensor_lists() -> None:
    kind, attrs = launch_kind(ADAM, "[320, 1, 1]", "[512, 1, 1]")  # type: ignore[misc]
    assert kind == "elementwise" and attrs["numel"] == 320 * CHUNK == 20_971_520
    # four lists read, three written back (not the gradient), 4 bytes each
    assert attrs["bytes"] == 4 * 20_971_520 * 7 and attrs["arity"] == 4


@pytest.mark.parametrize(
    ("kernel", "grid", "block"),
    [(REDUCE, "[1, 1, 1]", "[512, 1, 1]"), ("volta_sgemm_128x32_nt", "[4, 3, 12]", "[256, 1, 1]"),
     (ADD, "", "[128, 1, 1]"), (ADD, "[0, 1, 1]", "[128, 1, 1]"), (ADD, "[16]", "not json")],
)  # fmt: skip
def test_no_rule_or_no_launch_gives_none(kernel: str, grid: str, block: str) -> None:
    assert launch_kind(kernel, grid, block) is None


def test_the_rule_matches_the_linked_rows_of_the_shipped_tables() -> None:
    # where an op is linked, its largest input holds the elements the launch covers
    df = read_table(dataset_path("kernel-timings") / "hta_kernels.csv.gz")
    rows = df[df["op"].notna() & df["kernel"].str.contains("vectorized_elementwise_kernel")]
    ratios = []
    for r in rows.itertuples():
        got = launch_kind(r.kernel, r.grid, r.block)
        dims = json.loads(r.op_input_dims) if isinstance(r.op_input_dims, str) else []
        sizes = [int(np.prod(d)) for d in dims if isinstance(d, list) and d]
        if got is None or not sizes or json.loads(r.grid)[0] < 8:
            continue
        ratios.append(max(sizes) / got[1]["numel"])
    assert len(ratios) > 1000
    q10, q50, q90 = np.percentile(ratios, [10, 50, 90])
    assert q10 >= 0.99 and q50 <= 1.0 and q90 <= 1.0


def test_predict_prices_a_kernel_without_an_op_whole() -> None:
    gpu = "NVIDIA A100-SXM4-80GB"
    df = pd.DataFrame({
        "gpu": [gpu] * 3, "kernel": [ADD, REDUCE, ADD], "kernel_dur_us": [5.0, 6.0, 5.0],
        "op": [None, None, "aten::add"], "op_instance": [None, None, 7],
        "op_input_dims": [None, None, "[[8192], [8192]]"],
        "op_input_types": [None, None, '["float", "float"]'],
        "grid": ["[16, 1, 1]", "[1, 1, 1]", "[16, 1, 1]"], "block": ["[128, 1, 1]"] * 3,
    })  # fmt: skip
    out = predict_table(df, None, "t")
    p = out["predicted_time_us"].to_numpy()
    want = load_profile(gpu).predict_many(
        ["elementwise"], [{"numel": 8192, "arity": 2, "dtype": "float32"}], "cupti"
    )[0]
    assert p[0] == pytest.approx(want) and p[0] > 0
    assert np.isnan(p[1])  # a reduction's grid does not give its size
    assert out.attrs["_opsched"]["skipped"] == [(1, "op", NO_OP)]
    assert p[2] == pytest.approx(p[0], rel=0.05)  # the linked add of the same size
    assert out.attrs["_opsched"]["family"][0] == "elementwise_binary"


def test_foreach_functors_read_their_argument_lists_and_write_one() -> None:
    head = ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
            "(anonymous namespace)::")  # fmt: skip
    cases = {
        # in place x *= s: one list read, one written
        "TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarFunctor<"
        "float, 1, 1, 0>, std::multiplies<float>, float>(...)": (1, 2),
        # addcmul_: three lists read, the first written
        "TensorListMetadata<3>, at::native::(anonymous namespace)::PointwiseOpScalarFunctor<"
        "float, 3, 3, 0>, std::multiplies<float>, float>(...)": (3, 4),
        # a scalar list's metadata names its type before the depth
        "TensorListScalarListMetadata<float, 1>, at::native::(anonymous namespace)::"
        "BinaryOpScalarListFunctor<float, 1, 1, 0>, std::divides<float> >(...)": (1, 2),
    }
    for tail, (arity, per_element) in cases.items():
        kind, attrs = launch_kind(head + tail, "[10, 1, 1]", "[512, 1, 1]")  # type: ignore[misc]
        assert (kind, attrs["numel"], attrs["arity"]) == ("elementwise", 10 * CHUNK, arity)
        assert attrs["bytes"] == 4 * 10 * CHUNK * per_element


#: the same kernel as a PyTorch 2.11 build names it
NEW_ADD = ADD.replace("at::detail::Array<char*, 3>", "std::array<char*, 3ul>")


def test_a_newer_builds_vectorized_kernels_take_8_elements_a_thread() -> None:
    # PyTorch 2.11 spells the pointers std::array<char*, 3ul>: still two inputs and an output
    assert launch_kind(NEW_ADD, "[16, 1, 1]", "[128, 1, 1]") == (
        "elementwise",
        {"numel": 16384, "arity": 2, "dtype": "float32"},
    )
    # an unrolled kernel of the same build keeps 4 (the linked rows say so)
    unrolled = NEW_ADD.replace("vectorized_elementwise_kernel<4, ", "unrolled_elementwise_kernel<")
    assert launch_kind(unrolled, "[16, 1, 1]", "[128, 1, 1]")[1]["numel"] == 8192  # type: ignore[index]


def test_the_rule_matches_the_linked_kernels_of_a_pytorch_2_11_trace() -> None:
    from opsched.importers.trace import link_launches
    from opsched.importers.trace.events import load_trace

    t = load_trace(dataset_path("traces") / "resnet50_h200_torch2110_step.pt.trace.json.gz")
    ratios = []
    for la in link_launches(t):
        g = la.gpu
        if "vectorized_elementwise_kernel" not in g.name or la.leaf < 0 or (g.grid or [0])[0] < 8:
            continue
        dims = [d for d in (t.cpu_ops[la.leaf].dims or []) if isinstance(d, list) and d]
        got = launch_kind(g.name, g.grid, g.block)
        if dims and got is not None:
            ratios.append(max(int(np.prod(d)) for d in dims) / got[1]["numel"])
    assert len(ratios) > 100
    assert np.percentile(ratios, 10) >= 0.99 and np.percentile(ratios, 90) <= 1.0

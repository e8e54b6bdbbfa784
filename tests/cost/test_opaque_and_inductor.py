"""The catch-all for profiled ops no shape rule reads (``opaque``) is bounded by larger ones,
and TorchInductor's Triton kernels are read by the kind their names state."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from opsched.cost import known_gpus, load_profile
from opsched.cost.aten import aten_kind, inductor_kind
from opsched.cost.evaluate import predict_table
from opsched.cost.paddings import OPAQUE_PADS, opaque_paddings
from opsched.datasets import dataset_path
from opsched.importers.trace import import_trace


def _opaque(size: int) -> dict[str, object]:
    return {"flops": 0, "bytes": size, "numel": max(1, size // 4), "dtype": "float32"}


def test_opaque_paddings_raise_the_bytes_only() -> None:
    pads = opaque_paddings(_opaque(640) | {"flops": 99})
    assert [p and (p["bytes"], p["numel"], p["flops"]) for p in pads] == [
        (s, s // 4, 99) for s in OPAQUE_PADS
    ]
    got = opaque_paddings(_opaque(2**20))  # 1 MiB moved: only the 16 MiB padding is larger
    assert got[:2] == [None, None] and got[2] is not None and got[2]["bytes"] == 2**24
    assert opaque_paddings(_opaque(2**24)) == [None] * 3
    assert opaque_paddings(_opaque(64) | {"dtype": "float16"})[0]["numel"] == 2**15


@pytest.mark.parametrize("gpu", known_gpus())
def test_a_smaller_opaque_op_costs_at_most_a_larger_one(gpu: str) -> None:
    # the catch-all's curves climbed below their data: 112 us for 640 bytes on the H200,
    # 1,380 us for 64 bytes on the V100-SXM2, each above their 640 KB price
    p = load_profile(gpu)
    for small in (0, 64, 640, 6400):
        t = p.predict("opaque", _opaque(small))
        for size in OPAQUE_PADS:
            assert t <= p.predict("opaque", _opaque(size)) + 1e-9, (small, size)


def test_the_v100_and_h200_tiny_opaque_prices() -> None:
    assert load_profile("V100-SXM2").predict("opaque", _opaque(64)) < 20
    assert load_profile("H200").predict("opaque", _opaque(640)) < 20


def test_inductor_kernel_names() -> None:
    ts = [[16, 64, 1024], [1024], [16, 64, 1024]]  # x, a broadcast bias, the output
    assert inductor_kind("triton_poi_fused_add_relu_0", ts, "float16") == (
        "elementwise", {"numel": 2**20, "arity": 1, "dtype": "float16"})  # fmt: skip
    two = [[4096], [4096], [4096]]
    assert inductor_kind("triton_poi_fused_mul_1", two, "float32")[1]["arity"] == 2
    assert inductor_kind("triton_per_fused_sum_1", [[8, 512], [8]], "float32") == (
        "reduce", {"numel": 4096, "out_numel": 8, "dtype": "float32"})  # fmt: skip
    assert inductor_kind("triton_tem_fused_mm_0", two, "float32") is None  # a GEMM template
    assert inductor_kind("triton_poi_fused_0", [[]], "float32") is None
    # through the profiler rule, with the recorded scalars
    got = aten_kind("triton_red_fused_sum_view_0", [[16, 64, 256], [1, 256, 8], [], []],
                    ["float", "float", "Scalar", "Scalar"])  # fmt: skip
    assert got == ("reduce", {"numel": 262144, "out_numel": 2048, "dtype": "float32"})


def test_the_compiled_models_triton_kernels_are_priced_as_their_kinds() -> None:
    # held out (an H200 trace of a torch.compile'd model, never fitted): its six Triton
    # kernels, two steps, had been opaque ops at 17-35 us against 1.1-3.7 us measured
    rows = import_trace(dataset_path("traces") / "h200_torch211_step.pt.trace.json.gz").rows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred = predict_table(rows, None, "compiled")
    sel = rows["op"].str.startswith("triton_").to_numpy()
    assert sel.sum() == 12
    fam = set(pred.attrs["_opsched"]["family"][sel])
    assert fam == {"elementwise_unary", "reduce"}
    ratio = pred["predicted_time_us"].to_numpy()[sel] / rows["gpu_time_us"].to_numpy()[sel]
    assert np.all(ratio < 4.0) and np.median(ratio) < 2.0

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
    # no bytes recorded (a collective, a cat without shapes): its size is unknown, not small
    assert opaque_paddings(_opaque(0)) == [None] * 3
    # four bytes an element whatever the dtype, as the fitted rows count them
    assert opaque_paddings(_opaque(64) | {"dtype": "float16"})[0]["numel"] == 2**14


@pytest.mark.parametrize("gpu", known_gpus())
def test_a_smaller_opaque_op_costs_at_most_a_larger_one(gpu: str) -> None:
    # the catch-all's curves climbed below their data: 112 us for 640 bytes on the H200,
    # 1,380 us for 64 bytes on the V100-SXM2, each above their 640 KB price
    p = load_profile(gpu)
    for small in (64, 640, 6400):
        t = p.predict("opaque", _opaque(small))
        for size in OPAQUE_PADS:
            assert t <= p.predict("opaque", _opaque(size)) + 1e-9, (small, size)


def test_the_v100_and_h200_tiny_opaque_prices() -> None:
    assert load_profile("V100-SXM2").predict("opaque", _opaque(64)) < 20
    assert load_profile("H200").predict("opaque", _opaque(640)) < 20


def test_inductor_kernel_names() -> None:
    # x, a broadcast bias, the output; the dtype is the largest tensor's
    dims, f16 = [[16, 64, 1024], [1024], [16, 64, 1024], []], ["c10::Half"] * 3 + ["Scalar"]
    assert inductor_kind("triton_poi_fused_add_relu_0", dims, f16) == (
        "elementwise", {"numel": 2**20, "arity": 1, "dtype": "float16"})  # fmt: skip
    two = [[4096], [4096], [4096]]
    assert inductor_kind("triton_poi_fused_mul_1", two, ["float"] * 3)[1]["arity"] == 2
    assert inductor_kind("triton_per_fused_sum_1", [[8, 512], [8]], ["float"] * 2) == (
        "reduce", {"numel": 4096, "out_numel": 8, "dtype": "float32"})  # fmt: skip
    # a 0-d tensor output (its dims [] but a tensor type): one value
    full = inductor_kind("triton_per_fused_sum_0", [[4096], []], ["float", "float"])
    assert full is not None and full[1]["out_numel"] == 1
    # scalar arguments (typed Int / Scalar, dims []) are not 0-d tensors
    rows = inductor_kind("triton_red_fused_sum_0", [[16, 64, 256], [16, 64], [], []],
                         ["float", "float", "Int", "Scalar"])  # fmt: skip
    assert rows is not None and rows[1]["out_numel"] == 1024
    # Inductor's names without the fused ops' names
    assert inductor_kind("triton_poi__0", [[8], [8]], ["float"] * 2) is not None
    # an int64 index first does not make the data int64; a table lookup has no rule
    mask = inductor_kind("triton_poi_fused_where_2", [[64], [64, 128], [64, 128]],
                         ["long int", "c10::BFloat16", "c10::BFloat16"])  # fmt: skip
    assert mask is not None and mask[1]["dtype"] == "bfloat16"
    lookup, types = [[16, 64], [50257, 768], [16, 64, 768]], ["long int", "float", "float"]
    assert inductor_kind("triton_poi_fused_embedding_0", lookup, types) is None
    # templates (GEMMs), hand-written Triton kernels and dims-less records have no rule
    assert inductor_kind("triton_tem_fused_mm_0", two, ["float"] * 3) is None
    assert inductor_kind("triton_per_token_quant", two, ["float"] * 3) is None
    assert inductor_kind("triton_poi_fused_0", [[]], ["Scalar"]) is None
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


def test_loss_and_average_pooling_backward_are_elementwise_writes() -> None:
    # one value of the gradient per target (the zeroing is a fill_ of its own), whether
    # the loss was reduced (a 0-d grad_output) or not (one per sample)
    types = ["float", "float", "long int", "", "Int", "Int", "float"]
    for grad in ([], [32]):
        nll = aten_kind("aten::nll_loss_backward", [grad, [32, 1000], [32], [], [], [], []],
                        types)  # fmt: skip
        assert nll == ("elementwise", {"numel": 32, "arity": 1, "dtype": "float32"})
    pool = aten_kind("aten::_adaptive_avg_pool2d_backward", [[16, 64, 1, 1], [16, 64, 7, 7]],
                     ["c10::Half", "c10::Half"])  # fmt: skip
    assert pool == ("elementwise", {"numel": 16 * 64 * 49, "arity": 1, "dtype": "float16"})
    # max pooling's backward scatters through its indices: no rule
    assert aten_kind("aten::max_pool2d_with_indices_backward",
                     [[16, 32, 16, 16], [16, 32, 32, 32], [], [], [], [], [], [16, 32, 16, 16]],
                     ["float", "float"] + [""] * 5 + ["long int"]) is None  # fmt: skip
    # the compiled model's (held out, H200): 1.6 and 4.3 us, priced 112 and 16 us as opaque
    rows = import_trace(dataset_path("traces") / "h200_torch211_step.pt.trace.json.gz").rows
    sel = rows["op"].isin(["aten::nll_loss_backward", "aten::_adaptive_avg_pool2d_backward"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred = predict_table(rows[sel], None, "compiled")
    ratio = pred["predicted_time_us"].to_numpy() / rows["gpu_time_us"][sel].to_numpy()
    assert len(ratio) == 4 and np.all((ratio > 0.4) & (ratio < 2.5))

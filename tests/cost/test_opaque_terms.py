"""The ``opaque`` catch-all knows an op's name, its kernel count and whether it is a
collective, and prices by them (docs/cost-model.md, thirty-eighth round)."""

from __future__ import annotations

import pandas as pd
import pytest

from opsched.cost import known_gpus, load_profile
from opsched.cost.data import canonical_rows
from opsched.cost.features import _opaque_terms, feature_matrix
from opsched.cost.fitdata import shape_key
from opsched.cost.sources import profiled_kind
from opsched.cost.specs import load_specs

NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"


def test_opaque_attrs_carry_the_name_the_kernel_count_and_collectives() -> None:
    kind, a = profiled_kind("fbgemm::permute_2D_sparse_data", [[96]], ["int"], "", "k1 | k2 | k3")
    assert kind == "opaque"
    assert (a["fn"], a["n_kernels"], a["comm"], a["bytes"]) == (
        "fbgemm::permute_2D_sparse_data", 3, 0, 96 * 4)  # fmt: skip
    # a table's own count wins over the names it lists (the HTA tables cut long lists short)
    assert profiled_kind("fb::x", [], [], "", "k1 | k2", n_kernels=6)[1]["n_kernels"] == 6
    assert profiled_kind("fb::x", [], [])[1]["n_kernels"] == 1  # no kernels recorded: one
    # a collective by its name or by an NCCL kernel, in any case
    assert profiled_kind("record_param_comms", [], [])[1]["comm"] == 1
    assert profiled_kind("c10d::_allgather_base_", [[8]], ["float"])[1]["comm"] == 1
    assert profiled_kind("my::op", [], [], "", f"void {NCCL}")[1]["comm"] == 1
    assert profiled_kind("my::op", [], [], "", "void reduce_kernel<512>")[1]["comm"] == 0


def test_a_profiler_row_gives_its_kernel_count() -> None:
    df = pd.DataFrame({
        "gpu": ["NVIDIA A100-SXM4-80GB"] * 2, "op": ["CompiledFunction", "record_param_comms"],
        "input_dims": ["[[], []]", "[[]]"], "input_types": ['["", ""]', '[""]'],
        "gpu_time_us": [295.0, 367.0], "n_kernels": [6, 1],
        "kernels": ["triton_poi_fused_0 | triton_per_fused_1", NCCL],
    })  # fmt: skip
    compiled, comm = (r["attrs"] for r in canonical_rows(df, "profiler_ops"))
    assert (compiled["n_kernels"], compiled["comm"], compiled["bytes"]) == (6, 0, 0)
    assert (comm["n_kernels"], comm["comm"]) == (1, 1)


def test_the_terms_and_the_fold_groups() -> None:
    unsized = {"flops": 0, "bytes": 0, "numel": 1, "n_kernels": 20, "comm": 1}
    assert _opaque_terms(unsized) == pytest.approx([0.0, 1.0, 2.995732, 1.0])
    sized = {"flops": 0, "bytes": 4096, "numel": 1024}  # no count, no flag: 1 kernel, not comm
    assert _opaque_terms(sized) == pytest.approx([6.931472, 0.0, 0.0, 0.0])
    assert _opaque_terms(unsized | {"flops": 10})[1] == 0.0  # FLOPs recorded: sized
    x = feature_matrix("opaque", [unsized, sized], load_specs()["H200"])
    assert x.shape == (2, 12) and x[:, -3].tolist() == [1.0, 0.0]
    # two ops of one size are two shapes of the catch-all, not one
    a = profiled_kind("aten::cat", [], [])[1]
    b = profiled_kind("aten::sum", [], [])[1]
    assert a["bytes"] == b["bytes"] == 0 and shape_key("opaque", a) != shape_key("opaque", b)


@pytest.mark.parametrize("gpu", known_gpus())
def test_shipped_prices_rise_with_kernels_and_for_collectives(gpu: str) -> None:
    # measured: a compiled graph of 315 kernels took 15.9 ms on the V100, one of 1 kernel
    # 5-300 us on the A100s; collectives without a size 17 us to 68 ms, non-collectives of
    # no size (cat, sum) 5-1,243 us
    p = load_profile(gpu)
    base = {"flops": 0, "bytes": 0, "numel": 1, "dtype": "float32", "fn": "x"}
    one = p.predict("opaque", base | {"n_kernels": 1, "comm": 0})
    many = p.predict("opaque", base | {"n_kernels": 300, "comm": 0})
    comm = p.predict("opaque", base | {"n_kernels": 1, "comm": 1})
    assert 50 * one < many and one < comm
    assert p.kernel_floor <= one < 100

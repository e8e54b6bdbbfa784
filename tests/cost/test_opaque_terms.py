"""The ``opaque`` catch-all knows an op's name, its kernel count and whether it is a
collective, and prices by them (docs/cost-model.md, thirty-eighth round)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from opsched.cost import apply, known_gpus, load_profile
from opsched.cost.data import canonical_rows
from opsched.cost.features import _opaque_terms, feature_matrix
from opsched.cost.fitdata import shape_key
from opsched.cost.sources import profiled_kind
from opsched.cost.specs import load_specs
from opsched.errors import GraphError, InputError
from opsched.ir import Op, OpGraph
from opsched.ir.kinds import check_sizes

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
    assert _opaque_terms(unsized) == pytest.approx([0.0, 1.0, 2.995732, 0.0, 1.0])
    sized = {"flops": 0, "bytes": 4096, "numel": 1024}  # no count, no flag: 1 kernel, not comm
    assert _opaque_terms(sized) == pytest.approx([6.931472, 0.0, 0.0, 0.0, 0.0])
    # the count's slope for a sized op is its own
    assert _opaque_terms(sized | {"n_kernels": 20})[2:4] == pytest.approx([0.0, 2.995732])
    assert _opaque_terms(unsized | {"flops": 10})[1] == 0.0  # FLOPs recorded: sized
    x = feature_matrix("opaque", [unsized, sized], load_specs()["H200"])
    assert x.shape == (2, 13) and x[:, -4].tolist() == [1.0, 0.0]
    # two ops of one size are two shapes of the catch-all, not one
    a = profiled_kind("aten::cat", [], [])[1]
    b = profiled_kind("aten::sum", [], [])[1]
    assert a["bytes"] == b["bytes"] == 0 and shape_key("opaque", a) != shape_key("opaque", b)


def test_the_comm_flag_is_checked_as_a_flag() -> None:
    check_sizes("opaque", {"comm": True, "n_kernels": 3})
    check_sizes("opaque", {"comm": 1.0})
    for bad in (7, -1, 0.5, "yes"):
        with pytest.raises(GraphError, match="comm"):
            check_sizes("opaque", {"comm": bad})


def test_a_kernel_table_counts_the_kernel_rows_of_each_op_instance() -> None:
    df = pd.DataFrame({
        "gpu": ["NVIDIA A100-SXM4-80GB"] * 4, "kernel": ["k0", "k1", "k2", "k3"],
        "kernel_dur_us": [5.0, 6.0, 7.0, 8.0], "op": ["fb::x"] * 3 + ["fb::y"],
        "op_instance": ["1:1:10", "1:1:10", "1:1:10", "1:1:20"],
        "op_input_dims": ["[[64]]"] * 4, "op_input_types": ['["float"]'] * 4,
    })  # fmt: skip
    counts = [r["attrs"]["n_kernels"] for r in canonical_rows(df, "profiler_kernels")]
    assert counts == [3, 3, 3, 1]


def test_an_imported_trace_op_keeps_its_own_kernel_count() -> None:
    # the importer lists at most four distinct kernel names, and counts them all
    names = [f"triton_poi_fused_{i}" for i in range(4)]
    op = Op(
        "g",
        0.0,
        attrs={
            "aten_op": "CompiledFunction",
            "input_dims": [[], []],
            "input_types": ["", ""],
            "kernels": names,
            "n_kernels": 315,
        },
    )
    with pytest.warns(UserWarning, match="without a kind"):
        costed = apply(OpGraph([op]), "V100-SXM2")
    assert costed.ops[0].attrs["n_kernels"] == 315 and costed.ops[0].attrs["comm"] == 0
    with pytest.warns(UserWarning, match="without a kind"):
        four = apply(OpGraph([Op("g", 0.0, attrs={**op.attrs, "n_kernels": 4})]), "V100-SXM2")
    assert costed.ops[0].duration > 20 * four.ops[0].duration


def test_the_v100_compiled_graphs_in_sample() -> None:
    # HTA's V100 trace: a forward graph of 315 kernels over 506 MB of inputs, 15.9 ms, and a
    # backward of 429 kernels without sizes, 28.5 ms; with one kernel-count slope for both,
    # the forward had been priced 359 ms
    p = load_profile("V100-SXM2")
    fwd = profiled_kind("CompiledFunction", [[126626755]], ["float"], n_kernels=315)[1]
    bwd = profiled_kind("CompiledFunctionBackward", [], [], n_kernels=429)[1]
    assert fwd["bytes"] == 506507020 and bwd["bytes"] == 0
    assert 15_900 / 3 < p.predict("opaque", fwd, method="cupti") < 15_900 * 3
    assert 28_500 / 1.5 < p.predict("opaque", bwd, method="cupti") < 28_500 * 1.5


@pytest.mark.parametrize("gpu", known_gpus())
def test_shipped_prices_rise_with_kernels_and_for_collectives(gpu: str) -> None:
    # measured: a compiled graph of 315 kernels took 15.9 ms on the V100, one of 1 kernel
    # 5-300 us on the A100s; collectives without a size 17 us to 47 ms, non-collectives of
    # no size (cat, sum) 4-1,243 us
    p = load_profile(gpu)
    base = {"flops": 0, "bytes": 0, "numel": 1, "dtype": "float32", "fn": "x"}
    one = p.predict("opaque", base | {"n_kernels": 1, "comm": 0})
    many = p.predict("opaque", base | {"n_kernels": 300, "comm": 0})
    comm = p.predict("opaque", base | {"n_kernels": 1, "comm": 1})
    assert 50 * one < many and one < comm and one < 100
    sized = base | {"bytes": 2**20, "numel": 2**18, "comm": 0}
    assert p.predict("opaque", sized | {"n_kernels": 6}) > p.predict("opaque", sized)


@pytest.mark.parametrize("cell", ["many", 2.5, -1])
def test_a_bad_kernel_count_cell_names_its_row(cell: object) -> None:
    df = pd.DataFrame({
        "gpu": ["NVIDIA A100-SXM4-80GB"] * 2, "op": ["fb::x"] * 2,
        "input_dims": ["[[64]]"] * 2, "input_types": ['["float"]'] * 2,
        "gpu_time_us": [5.0, 6.0], "n_kernels": [2, cell], "kernels": ["a", "b"],
    })  # fmt: skip
    with pytest.raises(InputError, match=r"data row 2: n_kernels .* is not a count"):
        canonical_rows(df, "profiler_ops")
    # a blank cell counts the listed kernels
    df["n_kernels"] = [float("nan"), 3]
    assert [r["attrs"]["n_kernels"] for r in canonical_rows(df, "profiler_ops")] == [1, 3]


def test_an_imported_op_count_of_any_integer_type_and_a_bad_one() -> None:
    names = ["k0", "k1"]
    base = {"aten_op": "fb::x", "input_dims": [[], []], "input_types": ["", ""],
            "kernels": names}  # fmt: skip
    for count in (315, 315.0, np.int64(315)):
        op = Op("g", 0.0, attrs=base | {"n_kernels": count})
        with pytest.warns(UserWarning, match="without a kind"):
            assert apply(OpGraph([op]), "V100-SXM2").ops[0].attrs["n_kernels"] == 315
    with pytest.raises(GraphError, match=r"op 'g'.*n_kernels 2\.5 is not a count"):
        apply(OpGraph([Op("g", 0.0, attrs=base | {"n_kernels": 2.5})]), "V100-SXM2")

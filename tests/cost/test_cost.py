"""Cost model: specs, data mapping, curve fit, profiles, apply, CLI (small inputs only)."""

from __future__ import annotations

import json
import math
import warnings
from importlib import resources

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.cost import apply, known_gpus, load_profile, resolve_gpu
from opsched.cost.aten import aten_kind
from opsched.cost.curve import fit_curve
from opsched.cost.data import canonical_rows, detect_schema
from opsched.cost.evaluate import errors, predict_table
from opsched.cost.export import profile_docs
from opsched.cost.fit import fit_model, load_fit_data, predict_family
from opsched.cost.heldout import crossval, fold_of, leave_one_gpu_out
from opsched.cost.profile import Profile
from opsched.cost.trees import TreeEnsemble
from opsched.errors import GraphError, InputError
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.validate import validate


def test_gpu_names_resolve_and_unknown_lists_known():
    assert resolve_gpu("A100 80GB (DGX, SXM4)") == "A100-SXM4-80GB"
    assert resolve_gpu("NVIDIA A100 80GB PCIe") == "A100-PCIe-80GB"
    assert resolve_gpu("NVIDIA A100-PG509-200") == "A100-SXM4-40GB"
    assert resolve_gpu("H100 (DGX, SXM5 80GB)") == "H100-SXM5"
    assert resolve_gpu("Tesla P4") == "P4"
    assert resolve_gpu("Nvidia TitanX Pascal") == "Titan-X-Pascal"
    with pytest.raises(InputError, match="known: V100-SXM2"):
        resolve_gpu("RTX 9090")
    assert {"L4", "A40", "H200", "H100-PCIe"} <= set(known_gpus())


def test_a_bare_model_name_says_which_variant_it_took():
    import warnings

    from opsched.cost import profile as prof

    prof._say_variant.cache_clear()
    with pytest.warns(UserWarning, match=r"'A100' taken as A100-SXM4-80GB \(it could also be "
                      r"A100-SXM4-40GB, A100-PCIe-40GB, A100-PCIe-80GB\)"):  # fmt: skip
        assert load_profile("A100").gpu == "A100-SXM4-80GB"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per name; a full name or single model: silent
        load_profile("A100")
        assert load_profile("NVIDIA A100 80GB PCIe").gpu == "A100-PCIe-80GB"
        assert load_profile("NVIDIA H200").gpu == "H200"
    with pytest.warns(UserWarning, match="'H100' taken as H100-SXM5 .*H100-PCIe"):
        load_profile("H100")


@pytest.mark.parametrize(
    ("name", "key"),
    [("NVIDIA L4", "L4"), ("Tesla T4 16GB", "T4"), ("Tesla M40 24GB", "M40"),
     ("NVIDIA H100 80GB HBM3", "H100-SXM5"), ("NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"),
     ("NVIDIA A40", "A40")],
)  # fmt: skip
def test_gpu_alias_with_memory_size_after_it(name, key):
    assert resolve_gpu(name) == key


@pytest.mark.parametrize("name", ["NVIDIA L40S", "NVIDIA L40", "Tesla P40", "NVIDIA RTX A4000"])
def test_longer_model_number_is_not_its_prefix(name):
    # "l4" inside "L40S" is another card (48 GB, 142 SMs), not an L4 to price silently
    with pytest.raises(InputError, match="unknown GPU"):
        resolve_gpu(name)


def test_roofline_picks_peak_by_dtype():
    p = load_profile("A100-SXM4-80GB")
    mm = {"M": 8192, "N": 8192, "K": 8192}
    fl = 2 * 8192**3
    assert p.roofline("matmul", mm | {"dtype": "float16"}) == pytest.approx(fl / 312e6)
    assert p.roofline("matmul", mm | {"dtype": "float32"}) == pytest.approx(fl / 19.5e6)
    assert p.roofline("matmul", mm | {"dtype": "tf32"}) == pytest.approx(fl / 156e6)
    # memory bound: 3 x 2^24 fp32 elements over 2039 GB/s
    ew = {"numel": 2**24, "arity": 2, "dtype": "float32"}
    assert p.roofline("elementwise", ew) == pytest.approx(3 * 4 * 2**24 / 2039e3)


def test_neusight_linear_columns_map_contracted_dim():
    df = pd.DataFrame({"gpu": ["Tesla T4"], "op": ["linear"], "dtype": ["float32"], "B": [1],
                       "M": [58], "N": [13], "K": [141], "Cin": [np.nan], "H_dim": [np.nan],
                       "measured_time_us": [54.5]})  # fmt: skip
    assert detect_schema(df.columns) == "neusight"
    (r,) = canonical_rows(df, "neusight")
    # x=[1,58,13] @ W[141,13]^T: M=58 rows, K=13 contracted, N=141 outputs
    assert r["attrs"] | {} == {"M": 58, "N": 141, "K": 13, "dtype": "float32"}
    assert r["method"] == "events"


def test_curve_recovers_overhead_and_slope():
    rng = np.random.default_rng(1)
    x = np.column_stack([np.ones(300), rng.uniform(-2, 7, 300)])
    t = np.where(np.arange(300) < 150, 25.0, 0.0) + np.exp(x @ np.array([1.0, 0.8]))
    slot = (np.arange(300) >= 150).astype(int)
    fit = fit_curve(x, t, slot, free=[True, False], ridge=1e-9)
    assert fit.beta == pytest.approx([1.0, 0.8], abs=1e-3)
    assert fit.overheads == pytest.approx([25.0, 0.0], abs=1e-2)


def test_small_fit_and_crossval_beat_roofline():
    data = load_fit_data(files=["deepbench_gemm.csv", "deepbench_conv.csv"])
    pred = crossval(data, k=3, trees=False)  # the trees path: see the profile test below
    for fam in ("matmul", "conv2d"):
        fd = data.families[fam]
        ape = np.median(np.abs(pred[fam] - fd.t) / fd.t)
        roof = np.median(np.abs(fd.roof - fd.t) / fd.t)
        assert ape < 0.5 * roof, fam
    docs = profile_docs(fit_model(data))
    h200 = Profile(docs["H200"])  # no timings: pooled curves through its specs
    assert h200.curves["matmul"]["half"]["source"] == "pooled"
    assert Profile(docs["T4"]).curves["matmul"]["half"]["source"] == "fitted"


def test_a_fit_of_some_families_prices_them_as_the_whole_fit_does():
    # the backward convolutions with and without the other families beside them: their
    # curves, overheads and trees are the same (the floors come from every family either way)
    data = load_fit_data(files=["deepbench_gemm.csv", "deepbench_conv.csv"])
    fams = ("conv2d_bwd_data", "conv2d_bwd_filter")
    whole = crossval(data, k=3, trees=False)
    part = crossval(data, k=3, trees=False, families=fams)
    assert set(part) == set(fams)
    for fam in fams:
        assert np.isfinite(part[fam]).all()
        assert part[fam] == pytest.approx(whole[fam], rel=1e-12), fam
    left = leave_one_gpu_out(data, ["T4"], trees=False, families=fams)["T4"]
    every = leave_one_gpu_out(data, ["T4"], trees=False)["T4"]
    t4 = data.families[fams[0]].gpu == "T4"
    assert t4.any() and set(left) == set(fams)
    assert left[fams[0]][t4] == pytest.approx(every[fams[0]][t4], rel=1e-12)
    model = fit_model(data, trees=False, families=["matmul"])
    assert {f for f, _ in model.pooled} == {"matmul"}
    assert model.floors == fit_model(data, trees=False).floors


def test_shipped_profiles_predict_sensibly():
    a100, h100 = load_profile("A100-SXM4-80GB"), load_profile("H100-SXM5")
    big = {"M": 8192, "N": 8192, "K": 8192, "dtype": "float16"}
    t = a100.predict("matmul", big)
    assert a100.roofline("matmul", big) <= t < 2.5 * a100.roofline("matmul", big)
    assert h100.predict("matmul", big) < t
    small = {"numel": 1024, "arity": 2, "dtype": "float16"}
    assert 1.0 < a100.predict("elementwise", small) < 20.0  # launch bound, not 0
    assert a100.predict("elementwise", small, method="events") > 15.0  # dispatch included
    att = {"B": 32, "Sq": 512, "Skv": 512, "D": 64, "dtype": "float16"}
    parts = a100.predict("matmul", {"B": 32, "M": 512, "N": 512, "K": 64, "dtype": "float16"})
    assert a100.predict("attention", att) > parts


def test_unseen_kind_falls_back_to_roofline_with_warning():
    # a profile that lacks the family altogether (no curve of any dtype class) prices its
    # ops (here a copy and a unary elementwise op) by the plain roofline, and says so
    doc = json.loads(resources.files("opsched.cost").joinpath("profiles/L4.json").read_text())
    doc["curves"].pop("elementwise_unary")
    p = Profile(doc, trees={})
    copy_attrs = {"numel": 1 << 20, "dtype": "float16"}
    relu_attrs = {"numel": 1 << 22, "dtype": "float16", "fn": "relu"}
    with pytest.warns(UserWarning, match="no calibration for 'elementwise_unary'.*roofline"):
        t = p.predict_many(["copy", "elementwise"], [copy_attrs, relu_attrs])
    assert t[0] == pytest.approx(max(p.roofline("copy", copy_attrs), p.kernel_floor))
    assert t[1] == pytest.approx(max(p.roofline("elementwise", relu_attrs), p.kernel_floor))
    assert t[1] > t[0] > 0
    with pytest.raises(GraphError, match="unknown op kind"):
        p.predict("frobnicate", {})


def test_copy_is_priced_by_the_calibrated_unary_curve_without_warning():
    # a copy reads and writes each element once: the unary elementwise curve (fitted on,
    # among others, the profiler's aten::copy_ rows) prices it, above its roofline
    p = load_profile("A100-SXM4-80GB")
    for n in (1 << 10, 1 << 20, 1 << 24):
        a = {"numel": n, "dtype": "float16"}
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            t = p.predict("copy", a)
        assert t == p.predict("elementwise", a | {"fn": "copy"})
        assert t > p.roofline("copy", a)
    # 2^24 half elements: 64 MB moved, 33 us at the 2 TB/s peak; real copies reach 50-80 %
    assert 35.0 < p.predict("copy", {"numel": 1 << 24, "dtype": "float16"}) < 70.0


def _graph() -> OpGraph:
    ops = [
        Op("x", kind="input", attrs={"numel": 4096 * 1024}),
        Op("w", kind="input", attrs={"numel": 1024 * 1024}),
        Op("v", deps=("x",), kind="view", attrs={"numel": 4096 * 1024}),
        Op("mm", deps=("v", "w"), kind="matmul", attrs={"M": 4096, "N": 1024, "K": 1024}),
        Op("act", deps=("mm",), kind="elementwise", attrs={"numel": 4096 * 1024, "fn": "gelu"}),
        Op("sm", deps=("act",), kind="softmax", attrs={"rows": 16, "cols": 1024}),
        Op("f", deps=("sm",), kind="fused", attrs={"flops": 10**6, "bytes": 10**6, "numel": 10},
           output=True),
    ]  # fmt: skip
    return OpGraph(tuple(ops), name="tiny")


def test_apply_fills_durations_bytes_and_sm_and_validates():
    g = apply(_graph(), "A100-SXM4-80GB", "float16")
    assert g.resources["sm"] == 108 and g.attrs["time_unit"] == "us"
    assert g["x"].duration == 0 and g["v"].duration == 0 and g["v"].output_bytes == 0
    assert g["x"].output_bytes == 4096 * 1024 * 2
    assert g["mm"].output_bytes == 4096 * 1024 * 2 and g["mm"].attrs["dtype"] == "float16"
    assert g["mm"].demands == {"units": 1, "sm": 108}  # 32 x 8 tiles fill the GPU
    assert g["sm"].demands["sm"] == 16  # one block per row
    assert all(op.duration > 0 for op in g.ops if op.kind not in ("input", "view"))
    from opsched.heuristics import greedy

    problem = Problem(g, Machine(units=2))
    assert validate(problem, greedy(problem)).valid
    ticks = apply(_graph(), "A100-SXM4-80GB", "float16", tick_us=5.0)
    assert all(float(op.duration).is_integer() for op in ticks.ops)
    assert ticks["mm"].duration == max(1, round(g["mm"].duration / 5.0))


def test_apply_errors_name_the_op():
    bad = OpGraph((Op("a", kind="matmul", attrs={"M": 2}),))
    with pytest.raises(GraphError, match="op 'a'"):
        apply(bad, "T4", "float32")
    with pytest.raises(InputError, match="unknown GPU"):
        apply(_graph(), "Voodoo2", "float32")


def test_predict_table_and_errors_deepbench_conv():
    df = pd.read_csv("datasets/kernel-timings/deepbench_conv.csv").head(40)
    out = predict_table(df)
    assert {"predicted_time_us", "predicted_bwd_data_time_us"} <= set(out.columns)
    e = errors(out)
    assert set(e.family) >= {"conv2d"} and (e.rows > 0).all()
    assert math.isfinite(float(e.median_ape.iloc[0]))


def test_cli_predict_evaluate_apply(tmp_path):
    df = pd.read_csv("datasets/kernel-timings/vidur_llm_ops.csv.gz", nrows=50)
    src = tmp_path / "rows.csv"
    df.to_csv(src, index=False)
    r = CliRunner().invoke(main, ["cost", "predict", "-i", str(src), "-o", str(tmp_path / "p.csv"),
                                  "--gpu", "H200"])  # fmt: skip
    assert r.exit_code == 0, r.output
    p = pd.read_csv(tmp_path / "p.csv")
    assert len(p) == 50 and (p.predicted_time_us > 0).all()
    r = CliRunner().invoke(main, ["cost", "evaluate", str(src), "--json"])
    assert r.exit_code == 0 and json.loads(r.output)[0]["gpu"] == "A100-SXM4-80GB"
    gpath = tmp_path / "g.json"
    gpath.write_text(json.dumps(_graph().to_dict()))
    out = tmp_path / "o.json"
    r = CliRunner().invoke(main, ["cost", "apply", str(gpath), "--gpu", "T4", "--dtype",
                                  "float16", "-o", str(out)])  # fmt: skip
    assert r.exit_code == 0 and json.loads(out.read_text())["resources"]["sm"] == 40
    r = CliRunner().invoke(main, ["cost", "apply", str(gpath), "--gpu", "nope", "-o",
                                  str(tmp_path / "x.json")])  # fmt: skip
    assert r.exit_code == 2 and "unknown GPU" in r.output and not (tmp_path / "x.json").exists()
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    r = CliRunner().invoke(main, ["cost", "evaluate", str(bad)])
    assert r.exit_code == 2 and "unknown timing schema" in r.output
    # a folder given for the table: said so, not "no such file" (it exists)
    for args in (["evaluate", str(tmp_path)], ["predict", "-i", str(tmp_path), "-o",
                                               str(tmp_path / "p.csv")]):  # fmt: skip
        r = CliRunner().invoke(main, ["cost", *args])
        assert r.exit_code == 2 and f"{tmp_path}: is a directory" in r.output, r.output
        assert "no such file" not in r.output


def test_aten_mapping_pool_reduce_and_conv_padding_from_output():
    kind, a = aten_kind("aten::max_pool2d_with_indices", [[32, 64, 112, 112], [], []], ["float"])
    assert kind == "pool" and a["mode"] == "max"
    # 3x3 window, stride 2, pad 1 over 112: (112 + 2 - 3) // 2 + 1 = 56
    from opsched.ir import kinds

    assert kinds.output_numel("pool", a) == 32 * 64 * 56 * 56
    _, g = aten_kind("aten::adaptive_avg_pool2d", [[8, 512, 7, 7], []], ["float"])
    assert kinds.output_numel("pool", g) == 8 * 512  # global pooling
    # mean with a dim list over NCHW: spatial mean, N*C values; no dim: one value
    _, r = aten_kind("aten::mean", [[32, 2048, 7, 7], [], [], []], ["float", "GenericList"])
    assert r["out_numel"] == 32 * 2048
    _, r = aten_kind("aten::sum", [[1, 4096], [], [], []], ["float", "", "Scalar", ""])
    assert r["out_numel"] == 1
    # stem conv: output 112 from 224 with a 7x7 window -> stride 2, pad 3 (from the data)
    text = "x=[32,3,224,224] w=[64,3,7,7] y=[32,64,112,112]"
    _, c = aten_kind("aten::cudnn_convolution", [[32, 3, 224, 224], [64, 3, 7, 7]], ["float"], text)
    assert (c["stride_h"], c["pad_h"]) == (2, 3)
    # 1x1 stride-2 projection 56 -> 28: no padding
    text = "x=[32,256,56,56] w=[512,256,1,1] y=[32,512,28,28]"
    _, c = aten_kind("aten::cudnn_convolution", [[32, 256, 56, 56], [512, 256, 1, 1]], [], text)
    assert (c["stride_h"], c["pad_h"]) == (2, 0)
    _, c = aten_kind("aten::cudnn_convolution", [[1, 8, 10, 10], [8, 8, 3, 3]],
                     ["float", "float"], "x=[1,8,10,10] w=[8,8,3,3] y=[1,8,8,8]")  # fmt: skip
    # an unpadded ("valid") 3x3 conv: 10 - 3 + 1 = 8 needs p = 0; the (R-1)/2 rule said 1
    assert c["pad_h"] == 0 and kinds.conv_out_hw(c) == (8, 8)
    _, b = aten_kind("aten::cudnn_batch_norm_backward", [[4, 8, 2, 2], [4, 8, 2, 2]], ["float"])
    assert b == {"numel": 128, "channels": 8, "fn": "backward", "dtype": "float32"}


def test_plain_elementwise_ops_are_not_opaque():
    # the profiler's logical_and (two bool operands and the out= tensor), sgn and logit had
    # fallen to the opaque catch-all, priced about 4x their 3-9 us
    kind, a = aten_kind("aten::logical_and", [[4096], [4096], [4096]], ["bool"] * 3)
    assert kind == "elementwise" and (a["numel"], a["arity"], a["dtype"]) == (4096, 2, "bool")
    kind, a = aten_kind("aten::sgn", [[4096]], ["float"])
    assert kind == "elementwise" and a["arity"] == 1
    kind, a = aten_kind("aten::logit_backward", [[2048, 1], [2048, 1], []], ["float"] * 2)
    assert kind == "elementwise" and a["arity"] == 2
    assert aten_kind("fbgemm::permute_sparse_features", [[300]], ["int"]) is None
    p = load_profile("A100-SXM4-80GB")
    t = p.predict("elementwise", {"numel": 4096, "arity": 2, "fn": "logical_and", "dtype": "bool"})
    assert 1.0 < t < 10.0  # measured 3-8 us on A100s


def test_norms_and_the_loss_are_reductions():
    # linalg_vector_norm / linalg_norm over [512, 8192] (17-20 us measured on an A100) and
    # nll_loss_forward had been priced by the opaque catch-all at 2.3-2.7x their time
    kind, a = aten_kind("aten::linalg_vector_norm", [[512, 8192], [], [], [], []],
                        ["float", "Scalar", "", "Scalar", ""])  # fmt: skip
    assert (kind, a["numel"], a["out_numel"]) == ("reduce", 512 * 8192, 1)
    # the dim of a norm is its third argument: a list there reduces some axes only
    _, a = aten_kind("aten::linalg_vector_norm", [[64, 128], [], [], [], []],
                     ["float", "Scalar", "GenericList", "Bool", ""])  # fmt: skip
    assert a["out_numel"] == 128
    kind, a = aten_kind("aten::nll_loss_forward", [[32, 1000], [32], [], [], []],
                        ["float", "long int", "", "Int", "Int"])  # fmt: skip
    assert (kind, a["numel"], a["out_numel"]) == ("reduce", 32, 1)
    # a one-int dim (typed Int, or Scalar in newer traces) is taken as the last axis
    for t in ("Int", "Scalar"):
        kind, a = aten_kind("aten::argmax", [[32, 1000], [], []], ["float", t, "Bool"])
        assert kind == "reduce" and a["out_numel"] == 32
    # max.dim as an HTA trace records it; prod(x, dtype) reduces everything
    _, a = aten_kind("aten::max", [[2, 2048, 1], [], []], ["float", "Scalar", "Scalar"])
    assert a["out_numel"] == 4096
    assert aten_kind("aten::prod", [[8, 4], []], ["float", "Int"])[1]["out_numel"] == 1
    # max of two tensors is the elementwise maximum, a 0-d or broadcast one too; max of one
    # tensor, or along a dim with its out= tensors listed, is a reduction
    for other in ([8, 4], [1], []):
        kind, a = aten_kind("aten::max", [[8, 4], other], ["float", "float"])
        assert (kind, a["fn"], a["numel"]) == ("elementwise", "maximum", 32)
    assert aten_kind("aten::max", [[8, 4], [8, 4]], ["float", "float"])[1]["arity"] == 2
    assert aten_kind("aten::max", [[8, 4]], ["float"])[0] == "reduce"
    kind, a = aten_kind("aten::max", [[8, 4], [], [], [8], [8]],
                        ["float", "Int", "Bool", "float", "long int"])  # fmt: skip
    assert (kind, a["out_numel"]) == ("reduce", 8)
    # the op torch's adaptive_avg_pool2d launches its kernel under: global, as that one
    kind, a = aten_kind("aten::_adaptive_avg_pool2d", [[32, 2048, 7, 7], []], ["float", ""])
    assert kind == "pool" and (a["R"], a["S"]) == (7, 7)
    assert a == aten_kind("aten::adaptive_avg_pool2d", [[32, 2048, 7, 7], []], ["float", ""])[1]
    p = load_profile("A100-SXM4-80GB")
    assert 8.0 < p.predict("reduce", {"numel": 512 * 8192, "out_numel": 1}) < 40.0


def test_neusight_names_of_the_elementwise_ops_the_profiler_rules_know():
    from types import SimpleNamespace

    from opsched.cost.sources import neusight_op

    def attrs(op: str) -> dict:
        return neusight_op(SimpleNamespace(op=op, B=4, H_dim=8))[1]

    # NeuSight's own names as before, a trailing "u" a scalar operand
    assert (attrs("add")["arity"], attrs("addu")["arity"], attrs("addu")["fn"]) == (2, 1, "add")
    assert (attrs("relu")["arity"], attrs("relu")["fn"]) == (1, "relu")  # not "rel" + u
    # others: one operand, two, three (where reads its condition and both sides)
    assert [attrs(op)["arity"] for op in ("softplus", "maximum", "where", "whereu")] == [1, 2, 3, 2]
    assert attrs("where")["numel"] == 32
    # to price, ops NeuSight's rules do not name are read as the profiler's ATen ops (they had
    # been left unpriced): a rule where one applies, else the catch-all sized by the row
    sum_ = SimpleNamespace(op="sum", B=4, H_dim=8, dtype="float16")
    assert neusight_op(sum_, other=True)[0] == "reduce"
    assert neusight_op(SimpleNamespace(op="layer_norm", B=4, H_dim=8), other=True) == (
        "layernorm", {"rows": 4, "cols": 8, "dtype": "float32"})  # fmt: skip
    zap = SimpleNamespace(op="zap", B=None, H_dim=None, bytes_min=4096)
    kind, a = neusight_op(zap, other=True)
    assert (kind, a["bytes"], a["fn"]) == ("opaque", 4096, "aten::zap")
    with pytest.raises(ValueError, match="no B x H_dim shape and no bytes_min for NeuSight op"):
        neusight_op(SimpleNamespace(op="zap", B=None, H_dim=None), other=True)
    # to fit, they are left out, not guessed
    with pytest.raises(ValueError, match="no rule for NeuSight op 'sum'"):
        neusight_op(sum_)
    with pytest.raises(ValueError, match="blank op"):
        neusight_op(SimpleNamespace(op=float("nan"), B=4, H_dim=8))


def test_cost_predict_prices_neusight_rows_of_other_ops_and_says_so(tmp_path):
    rows = pd.DataFrame({"gpu": "NVIDIA A100-PCIE-40GB", "op": ["relu", "sum", "zap"],
                         "dtype": "float32", "B": 127, "H_dim": 168, "Cin": None,
                         "measured_time_us": 30.0})  # fmt: skip
    src, dst = tmp_path / "in.csv", tmp_path / "out.csv"
    rows.to_csv(src, index=False)
    r = CliRunner().invoke(main, ["cost", "predict", "-i", str(src), "-o", str(dst)])
    assert r.exit_code == 0, r.output
    assert "2 rows of ops NeuSight's rules do not name, read as ATen ops: 'sum', 'zap'" in r.output
    pred = pd.read_csv(dst)["predicted_time_us"]
    assert pred.notna().all() and (pred > 5).all() and (pred < 200).all()


def test_folds_keep_a_shape_together():
    data = load_fit_data(files=["deepbench_gemm.csv"])
    fd, folds = data.families["matmul"], fold_of(data, k=5)["matmul"]
    for g in np.unique(fd.group)[:200]:
        assert len(set(folds[fd.group == g])) == 1
    assert len(set(folds)) == 5


def test_profiler_rows_without_a_shape_rule_are_opaque_and_sized_by_their_inputs():
    df = pd.DataFrame({
        "gpu": ["NVIDIA A100-SXM4-80GB"] * 2, "op": ["fbgemm::permute_2D_sparse_data"] * 2,
        "input_dims": ["[[96], [96, 4096], [34174], [], []]", "[[], []]"],
        "input_types": ['["int", "int", "long int", "", "Scalar"]', '["TensorList", "Scalar"]'],
        "gpu_time_us": [246.0, 6.0], "flops": [float("nan")] * 2,
        "bytes_min": [float("nan")] * 2,
    })  # fmt: skip
    sized, unsized = canonical_rows(df, "profiler_ops")
    assert sized["kind"] == unsized["kind"] == "opaque"
    assert sized["attrs"]["bytes"] == 96 * 4 + 96 * 4096 * 4 + 34174 * 8
    assert unsized["attrs"]["bytes"] == 0  # a list of tensors records no dims
    p = load_profile("A100-SXM4-80GB")
    big, small = (p.predict("opaque", r["attrs"]) for r in (sized, unsized))
    assert big >= p.roofline("opaque", sized["attrs"]) and big > small >= p.kernel_floor


def test_fused_ops_are_priced_by_their_parts_or_their_roofline():
    p = load_profile("A100-SXM4-80GB")
    conv = {"N": 8, "C": 64, "H": 56, "W": 56, "K": 64, "R": 3, "S": 3, "pad_h": 1, "pad_w": 1}
    parts = [{"kind": "conv2d_bwd_data"} | conv, {"kind": "conv2d_bwd_filter"} | conv]
    half = {"dtype": "float16"}
    want = p.predict("conv2d_bwd_data", conv | half) + p.predict("conv2d_bwd_filter", conv | half)
    bwd = {"flops": 1, "bytes": 1, "numel": 1, "parts": parts} | half  # what import-trace writes
    assert p.predict("fused", bwd) == pytest.approx(want)
    group = {"flops": 10**9, "bytes": 10**8, "numel": 10**6} | half  # what the fusion pass writes
    assert p.predict("fused", group) == pytest.approx(p.roofline("fused", group))
    tiny = {"flops": 10, "bytes": 10, "numel": 1} | half
    assert p.predict("fused", tiny) == p.kernel_floor > p.roofline("fused", tiny)


def test_reduce_features_flag_integer_inputs():
    # integer reductions run other kernels (on the A100-SXM4-80GB trace int32 sums of 33-360
    # thousand elements take 15-67 us where float ones of that size take 10-16 us)
    from opsched.cost.features import feature_matrix
    from opsched.cost.specs import load_specs

    spec = load_specs()["A100-SXM4-80GB"]
    rows = [{"numel": 65536, "out_numel": 1, "dtype": d} for d in ("int32", "float32", "int64")]
    x = feature_matrix("reduce", rows, spec)
    assert x[:, -1].tolist() == [1.0, 0.0, 1.0]
    p = load_profile("A100-SXM4-80GB")
    assert len(p.curves["reduce"]["fp32"]["beta"]) == x.shape[1]


def test_folds_of_one_family_do_not_depend_on_another_familys_rows():
    # each family draws its folds from its own generator: rows added to or removed from one
    # family (here the convolutions, sorted before matmul) leave the other's folds as they are
    both = load_fit_data(files=["deepbench_gemm.csv", "deepbench_conv.csv"])
    gemm = load_fit_data(files=["deepbench_gemm.csv"])
    assert "conv2d" in both.families and "conv2d" not in gemm.families
    assert np.array_equal(fold_of(both)["matmul"], fold_of(gemm)["matmul"])
    assert not np.array_equal(fold_of(both)["matmul"], fold_of(both, seed=1)["matmul"])


def test_folds_of_existing_shapes_stay_put_when_shapes_are_added():
    # a shape's fold depends on its key alone: the DeepBench GEMM shapes keep their folds when
    # the table grows by other shapes (here the first rows alone against the whole table)
    part = load_fit_data(files=["deepbench_gemm.csv"], limit=300)
    whole = load_fit_data(files=["deepbench_gemm.csv"])
    fp, fw = part.families["matmul"], whole.families["matmul"]
    assert set(fp.group) < set(fw.group)
    fold_p = dict(zip(fp.group, fold_of(part)["matmul"], strict=True))
    fold_w = dict(zip(fw.group, fold_of(whole)["matmul"], strict=True))
    assert all(fold_w[g] == f for g, f in fold_p.items())
    counts = np.bincount(fold_of(whole)["matmul"], minlength=5)
    assert counts.min() > 0.1 * counts.sum()  # every fold holds a fair share


def test_tree_ensemble_rejects_malformed_documents():
    doc = {"baseline": 0.0, "roots": [0], "feature": [0], "threshold": [0.0], "left": [5],
           "right": [0], "value": [1.0], "leaf": [0], "missing_left": [1]}  # fmt: skip
    with pytest.raises(InputError, match="out of range"):
        TreeEnsemble.from_dict(doc)
    with pytest.raises(InputError, match="malformed"):
        TreeEnsemble.from_dict({"baseline": 0.0})


def test_profile_reproduces_the_fitted_hybrid_and_trees_help_in_sample():
    data = load_fit_data(files=["deepbench_conv.csv"])
    model = fit_model(data)
    assert {"conv2d", "conv2d_bwd_data", "conv2d_bwd_filter"} <= set(model.trees)
    fd = data.families["conv2d"]
    sel = (fd.gpu == "T4") & (fd.method == "wallclock")
    fitted = predict_family(model, "conv2d", fd, sel)
    # The shipped form (JSON curves + JSON trees, numpy evaluation) predicts the same times.
    doc = json.loads(json.dumps(profile_docs(model)["T4"]))
    trees = {f: TreeEnsemble.from_dict(json.loads(json.dumps(e.to_dict())))
             for f, e in model.trees.items()}  # fmt: skip
    prof = Profile(doc, trees=trees)
    df = pd.read_csv("datasets/kernel-timings/deepbench_conv.csv")
    recs = [r for r in canonical_rows(df, "deepbench_conv") if r["target"] == "conv2d"
            and r["gpu"] == "T4" and r["time_us"] > 0]  # fmt: skip
    shipped = prof.predict_many([r["kind"] for r in recs], [r["attrs"] for r in recs],
                                "wallclock")  # fmt: skip
    assert shipped == pytest.approx(fitted, rel=1e-4)  # the JSON rounds beta to 6 decimals
    # In sample the trees must lower the curve's error (they were fitted on its residual).
    bare = Profile(doc, trees={})
    curve = bare.predict_many([r["kind"] for r in recs], [r["attrs"] for r in recs], "wallclock")
    t = fd.t[sel]
    assert np.median(np.abs(shipped - t) / t) < np.median(np.abs(curve - t) / t)


def test_profiler_timings_get_tree_corrections_only_for_convolution_backward():
    # The V100-SXM2 has its own convolution curves (the ResNet-50 profiler trace). Its
    # profiler-method (cupti) predictions are corrected by the trees for the backward
    # directions (boost.TREE_METHODS_BY_FAMILY) and are the curve alone for the forward one.
    from importlib import resources

    doc = json.loads(
        resources.files("opsched.cost").joinpath("profiles/V100-SXM2.json").read_text()
    )
    shipped, bare = load_profile("V100-SXM2"), Profile(doc, trees={})
    a = {"N": 32, "C": 64, "H": 56, "W": 56, "K": 64, "R": 3, "S": 3, "pad_h": 1, "pad_w": 1,
         "dtype": "float32"}  # fmt: skip
    for kind in ("conv2d_bwd_data", "conv2d_bwd_filter"):
        with_trees, curve = shipped.predict(kind, a, "cupti"), bare.predict(kind, a, "cupti")
        assert with_trees > 0 and abs(with_trees / curve - 1) > 1e-3
    assert shipped.predict("conv2d", a, "cupti") == pytest.approx(
        bare.predict("conv2d", a, "cupti")
    )


def test_profiler_convolution_backward_rows_are_priced_by_parts():
    dims = [[32, 2048, 7, 7], [32, 512, 7, 7], [2048, 512, 1, 1], [], [], []]
    kind, a = aten_kind("aten::convolution_backward", dims, ["float"] * 3)
    assert kind == "fused" and [p["kind"] for p in a["parts"]] == [
        "conv2d_bwd_data",
        "conv2d_bwd_filter",
    ]
    assert (a["parts"][0]["C"], a["parts"][0]["K"], a["parts"][0]["groups"]) == (512, 2048, 1)
    # 2 * N * K * C * R * S * P * Q per half
    assert a["flops"] == 2 * (2 * 32 * 2048 * 512 * 7 * 7)
    _, only = aten_kind("aten::convolution_backward", dims, ["float"] * 3,
                        kernel_names="sm90_xmma_wgrad_implicit_gemm_tf32f32")  # fmt: skip
    assert [p["kind"] for p in only["parts"]] == ["conv2d_bwd_filter"]
    # the older cudnn_convolution_backward takes (input, grad_output, weight); stride from H
    old_dims = [[8, 64, 56, 56], [8, 128, 28, 28], [128, 64, 3, 3]]
    _, old = aten_kind("aten::cudnn_convolution_backward", old_dims, ["float"] * 3)
    assert (old["parts"][0]["C"], old["parts"][0]["K"], old["parts"][0]["stride_h"]) == (64, 128, 2)
    rows = pd.DataFrame({"gpu": ["NVIDIA H200"], "op": ["aten::convolution_backward"],
                         "input_dims": [json.dumps(dims)], "input_types": ['["float"]'],
                         "gpu_time_us": [74.0],
                         "kernels": ["sm90_xmma_dgrad_implicit_gemm_f32f32_tf32f32"]})  # fmt: skip
    pred = predict_table(rows)
    (rec,) = canonical_rows(rows, "profiler_ops")
    assert [p["dtype"] for p in rec["attrs"]["parts"]] == ["tf32"]  # the kernel's math mode
    assert pred["predicted_time_us"].iloc[0] > 0


def test_cli_unknown_gpu_names_the_row_or_the_option(tmp_path):
    df = pd.read_csv("datasets/kernel-timings/deepbench_gemm.csv").head(3)
    df.loc[1, "gpu"] = "A10G"  # not in gpu_specs.csv
    src = tmp_path / "rows.csv"
    df.to_csv(src, index=False)
    out = tmp_path / "p.csv"
    for cmd in (["predict", "-i", str(src), "-o", str(out)], ["evaluate", str(src)]):
        r = CliRunner().invoke(main, ["cost", *cmd])
        assert r.exit_code == 2
        line = r.output.strip()
        assert f"{src}: data row 2: unknown GPU 'A10G'; known: " in line and "\n" not in line
        assert "Traceback" not in r.output and not out.exists()
    r = CliRunner().invoke(main, ["cost", "predict", "--gpu", "A10G", "-i", str(src), "-o",
                                  str(out)])  # fmt: skip
    assert r.exit_code == 2 and "--gpu: unknown GPU 'A10G'" in r.output and not out.exists()
    # the option overrides every row's column, the unknown one included
    r = CliRunner().invoke(main, ["cost", "predict", "--gpu", "T4", "-i", str(src), "-o",
                                  str(out)])  # fmt: skip
    assert r.exit_code == 0 and len(pd.read_csv(out)) == 3


def test_cli_rows_without_a_gpu_name_are_left_empty_or_refused(tmp_path):
    # a trace without device properties leaves the gpu cell blank (1,154 rows of the HTA
    # kernel table): those rows get no price unless --gpu names one; the rest are priced
    df = pd.read_csv("datasets/kernel-timings/deepbench_gemm.csv").head(4)
    df["gpu"] = df["gpu"].astype(object)
    df.loc[1, "gpu"], df.loc[3, "gpu"] = None, "  "
    src, out = tmp_path / "rows.csv", tmp_path / "p.csv"
    df.to_csv(src, index=False)
    r = CliRunner().invoke(main, ["cost", "predict", "-i", str(src), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "left empty: 2 rows without a GPU name, give --gpu to price them" in r.output
    p = pd.read_csv(out)
    assert p.predicted_time_us.isna().tolist() == [False, True, False, True]
    r = CliRunner().invoke(main, ["cost", "evaluate", str(src)])
    assert r.exit_code == 0 and "2 rows without a GPU name not scored" in r.output
    assert "matmul" in r.output
    r = CliRunner().invoke(main, ["cost", "predict", "--gpu", "T4", "-i", str(src), "-o",
                                  str(out)])  # fmt: skip
    assert r.exit_code == 0 and pd.read_csv(out).predicted_time_us.notna().all()
    df["gpu"] = None  # no row names its GPU: an error that asks for --gpu, no output
    df.to_csv(src, index=False)
    out.unlink()
    r = CliRunner().invoke(main, ["cost", "predict", "-i", str(src), "-o", str(out)])
    assert r.exit_code == 2 and "Traceback" not in r.output and not out.exists()
    assert f"{src}: no row names its GPU (the gpu column is blank): give --gpu" in r.output


def test_pooled_curves_get_tree_corrections_only_for_convolutions():
    # The L4 has no timings: every curve of it is the pooled one through its specs. The
    # convolutions' trees correct it (boost.POOLED_TREE_FAMILIES); a row-wise family's do not.
    from importlib import resources

    doc = json.loads(resources.files("opsched.cost").joinpath("profiles/L4.json").read_text())
    shipped, bare = load_profile("L4"), Profile(doc, trees={})
    a = {"N": 32, "C": 64, "H": 56, "W": 56, "K": 64, "R": 3, "S": 3, "pad_h": 1, "pad_w": 1,
         "dtype": "float32"}  # fmt: skip
    for kind in ("conv2d", "conv2d_bwd_data", "conv2d_bwd_filter"):
        assert shipped.curve(kind, "float32", "kernel")["source"] == "pooled"
        with_trees, curve = shipped.predict(kind, a), bare.predict(kind, a)
        assert with_trees > 0 and abs(with_trees / curve - 1) > 1e-3, kind
    sm = {"rows": 4096, "cols": 1024, "dtype": "float16"}
    assert shipped.curve("softmax", "float16", "kernel")["source"] == "pooled"
    assert shipped.predict("softmax", sm) == pytest.approx(bare.predict("softmax", sm))
    assert "softmax" in shipped.trees  # it has trees: they are not applied to a pooled curve


def test_left_out_gpus_get_the_convolution_trees_on_the_pooled_curve():
    # The T4 has no same-chip GPU: left out, it prices through the pooled curves. The fit's
    # path (fit._predict_rows) corrects the pooled convolution curve by the trees, and the
    # pooled GEMM curve not, as Profile.predict does.
    from opsched.cost.sibling import siblings
    from opsched.cost.specs import load_specs

    assert siblings("T4", load_specs()) == []
    data = load_fit_data(files=["deepbench_gemm.csv", "deepbench_conv.csv"])
    fams = ("matmul", "conv2d")
    trees = leave_one_gpu_out(data, ["T4"], trees=True, families=fams)["T4"]
    bare = leave_one_gpu_out(data, ["T4"], trees=False, families=fams)["T4"]
    for fam in fams:
        t4 = data.families[fam].gpu == "T4"
        assert t4.sum() > 50 and np.isfinite(trees[fam][t4]).all()
    conv = data.families["conv2d"].gpu == "T4"
    moved = np.abs(trees["conv2d"][conv] / bare["conv2d"][conv] - 1) > 1e-3
    assert moved.mean() > 0.5
    mm = data.families["matmul"].gpu == "T4"
    assert trees["matmul"][mm] == pytest.approx(bare["matmul"][mm], rel=1e-12)


def test_apply_prices_a_traced_gemm_in_the_math_its_kernels_show() -> None:
    # PyTorch's default prices a float32 GEMM at the FP32 peak, but the HTA A100 trace's
    # float32 mm ran TF32 tensor-op kernels: priced at FP32 its graph came to 2.17x the
    # measured kernel time (now 0.95x, bench_trace_vs_model.py's second table)
    from opsched.ir import Op, OpGraph

    shape = {"M": 1024, "N": 2048, "K": 4864, "dtype": "float32"}
    tf32 = ["void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>"]
    simt = ["ampere_sgemm_128x64_nn"]
    g = OpGraph((Op("plain", 1, kind="matmul", attrs=shape),
                 Op("traced", 1, kind="matmul", attrs=shape | {"kernels": tf32}),
                 Op("sgemm", 1, kind="matmul", attrs=shape | {"kernels": simt})))  # fmt: skip
    out = apply(g, "A100-SXM4-80GB")
    on = apply(g.replace_ops([g["plain"]]), "A100-SXM4-80GB", allow_tf32=True)["plain"]
    assert out["traced"].duration == pytest.approx(on.duration)
    assert out["traced"].duration < out["plain"].duration / 4  # TF32: 8x the FP32 peak
    assert out["sgemm"].duration == out["plain"].duration  # SIMT kernels: the default
    assert out["traced"].attrs["dtype"] == "float32" and out["traced"].attrs["math_mode"] == "tf32"
    assert "math_mode" not in out["plain"].attrs and "math_mode" not in out["sgemm"].attrs
    # an explicit setting prices every op by it, whatever its kernels show
    off = apply(g, "A100-SXM4-80GB", allow_tf32=False)
    assert off["traced"].duration == off["plain"].duration

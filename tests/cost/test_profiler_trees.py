"""A traced (``cupti``) forward convolution priced from a curve that saw no traced rows is
corrected by the sweeps' trees, read as kernel time (docs/cost-model.md, thirty-ninth
round); a curve fitted on the GPU's own traced rows prices them alone, as before."""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest

from opsched.cost import load_profile
from opsched.cost.boost import tree_method
from opsched.cost.fit import fit_model, fitted_on_traces, load_fit_data, predict_family
from opsched.cost.heldout import leave_one_gpu_out
from opsched.cost.profile import Profile
from opsched.errors import InputError

# ResNet-50's first layer in our H200's held-out step: 316.4 us measured (TF32)
LAYER = {"N": 32, "C": 3, "H": 224, "W": 224, "K": 64, "R": 7, "S": 7, "pad_h": 3,
         "pad_w": 3, "stride_h": 2, "stride_w": 2, "dtype": "tf32"}  # fmt: skip


def _curve(gpu: str) -> dict[str, object]:
    path = resources.files("opsched.cost") / "profiles" / f"{gpu}.json"
    return json.loads(path.read_text())["curves"]["conv2d"]["fp32"]


def test_the_rule() -> None:
    assert tree_method("conv2d", "cupti", False) == "kernel"
    assert tree_method("conv2d", "cupti", True) is None
    assert tree_method("conv2d", "events", True) == "events"
    assert tree_method("softmax", "cupti", False) == "kernel"
    assert tree_method("softmax", "cupti", True) is None
    # the backward directions fit their trees on traced rows too: read as themselves
    assert tree_method("conv2d_bwd_data", "cupti", True) == "cupti"
    # no trees read kernel time there (fused attention has none): none read a traced price
    assert tree_method("attention", "cupti", False) is None


def test_only_a_gpus_own_curve_is_flagged_by_its_traced_rows() -> None:
    assert fitted_on_traces({"shapes": {"call": 90, "profiler": 19}})
    assert fitted_on_traces({"profiler": True})
    assert not fitted_on_traces({"shapes": {"call": 90}})
    assert not fitted_on_traces({"source": "pooled"})
    # the shipped profiles: the V100-SXM2 was traced (ResNet-50), the H200's own curve not
    assert _curve("V100-SXM2").get("profiler") is True
    assert "profiler" not in _curve("H200") and _curve("H200")["source"] == "fitted"


def test_shipped_prices() -> None:
    h200 = load_profile("H200")
    traced, kernel = (h200.predict("conv2d", LAYER, method=m) for m in ("cupti", "kernel"))
    assert traced == pytest.approx(kernel)  # both the curve and the trees, as kernel time
    assert 316.4 / 1.5 < traced < 316.4 * 1.5  # was 152.6 us from the curve alone
    # the V100's curve was fitted on its trace's rows: its traced price is the curve's alone
    v100 = load_profile("V100-SXM2")
    fp32 = LAYER | {"dtype": "float32"}
    assert v100.predict("conv2d", fp32, method="cupti") != pytest.approx(
        v100.predict("conv2d", fp32, method="kernel"), rel=1e-3
    )


def test_the_fits_path_applies_the_rule_too() -> None:
    # leave-one-GPU-out (fit._predict_rows): the V100-SXM2 left out is priced through the
    # pooled convolution curve, unmarked, so its traced rows get the trees, read as kernel
    # time; the curve alone (trees=False) differs on most of them
    data = load_fit_data(files=["deepbench_conv.csv", "kineto_resnet50_v100_ops.csv.gz"])
    fam = ("conv2d",)
    trees = leave_one_gpu_out(data, ["V100-SXM2"], trees=True, families=fam)["V100-SXM2"]
    bare = leave_one_gpu_out(data, ["V100-SXM2"], trees=False, families=fam)["V100-SXM2"]
    fd = data.families["conv2d"]
    traced = (fd.gpu == "V100-SXM2") & (fd.method == "cupti")
    assert traced.sum() > 300
    moved = np.abs(trees["conv2d"][traced] / bare["conv2d"][traced] - 1) > 1e-3
    assert moved.mean() > 0.5
    # kept in, the V100's own curve is marked and its traced rows keep the curve alone
    model = fit_model(data, families=fam)
    assert fitted_on_traces(model.groups[("V100-SXM2", "conv2d", "fp32")])
    with_trees = predict_family(model, "conv2d", fd, traced)
    alone = predict_family(fit_model(data, trees=False, families=fam), "conv2d", fd, traced)
    assert with_trees == pytest.approx(alone, rel=1e-9)


def test_a_profile_flag_must_be_a_bool() -> None:
    doc = json.loads((resources.files("opsched.cost") / "profiles" / "V100-SXM2.json").read_text())
    doc["curves"]["conv2d"]["fp32"]["profiler"] = "false"
    with pytest.raises(InputError, match="'profiler' must be true or false"):
        Profile(doc)

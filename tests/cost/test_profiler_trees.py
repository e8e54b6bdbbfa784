"""A traced (``cupti``) forward convolution priced from a curve that saw no traced rows is
corrected by the sweeps' trees, read as kernel time (docs/cost-model.md, thirty-ninth
round); a curve fitted on the GPU's own traced rows prices them alone, as before."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from opsched.cost import load_profile
from opsched.cost.boost import tree_method
from opsched.cost.fit import profiler_flagged

# ResNet-50's first layer in our H200's held-out step: 316.4 us measured (TF32)
LAYER = {"N": 32, "C": 3, "H": 224, "W": 224, "K": 64, "R": 7, "S": 7, "pad_h": 3,
         "pad_w": 3, "stride_h": 2, "stride_w": 2, "dtype": "tf32"}  # fmt: skip


def _curve(gpu: str) -> dict[str, object]:
    path = resources.files("opsched.cost") / "profiles" / f"{gpu}.json"
    return json.loads(path.read_text())["curves"]["conv2d"]["fp32"]


def test_the_rule() -> None:
    assert tree_method("conv2d", "cupti", {"source": "fitted"}) == "kernel"
    assert tree_method("conv2d", "cupti", {"profiler": True}) is None
    assert tree_method("conv2d", "events", {"profiler": True}) == "events"
    assert tree_method("softmax", "cupti", {}) is None  # not measured there: curve alone
    # the backward directions fit their trees on traced rows too: read as themselves
    assert tree_method("conv2d_bwd_data", "cupti", {"profiler": True}) == "cupti"


def test_only_a_gpus_own_curve_is_flagged_by_its_traced_rows() -> None:
    assert profiler_flagged({"shapes": {"call": 90, "profiler": 19}})["profiler"] is True
    assert "profiler" not in profiler_flagged({"shapes": {"call": 90}})
    assert "profiler" not in profiler_flagged({"source": "pooled"})
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

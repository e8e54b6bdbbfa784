"""Convolution floors: a cuDNN call costs more than one kernel launch, however small."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.cost import apply, load_profile
from opsched.cost.export import profile_docs
from opsched.cost.fit import fit_model, predict_family
from opsched.cost.fitdata import FitData, load_fit_data
from opsched.cost.floor import (
    FAMILY_FLOOR_FAMILIES,
    FAMILY_FLOOR_METHODS,
    FAMILY_TINY_ROOFLINE_US,
    FLOOR_QUANTILE,
    fit_family_floors,
)
from opsched.cost.profile import Profile
from opsched.cost.specs import load_specs
from opsched.zoo.models import build
from tests.cost.helpers import profile_without, shipped_doc

GPUS = sorted(load_specs())
CONV_KINDS = ("conv2d", "conv2d_bwd_data", "conv2d_bwd_filter")
#: A 16-channel 3x3 convolution over 7 x 7, batch 1: far below any timed convolution.
SMALL = {"N": 1, "C": 16, "H": 7, "W": 7, "K": 16, "R": 3, "S": 3, "pad_h": 1, "pad_w": 1}
BIG = {"N": 64, "C": 256, "H": 56, "W": 56, "K": 256, "R": 3, "S": 3, "pad_h": 1, "pad_w": 1}


def _bare(gpu: str) -> Profile:
    """The shipped profile without its family floors (what it priced before them)."""
    return profile_without(gpu, "family_floors")


def test_family_floors_per_gpu_and_pooled():
    t = np.array([6.0, 7.0, 9.0, 8.0, 30.0, 2.0])
    roof = np.array([0.3, 0.5, 0.8, 0.9, 12.0, 0.2])
    gpu = np.array(["H"] * 5 + ["E"])
    method = np.array(["wallclock", "kernel", "cupti", "wallclock", "wallclock", "events"])
    floors = fit_family_floors({"conv2d": (t, roof, gpu, method)}, min_rows=3)
    # the four tiny rows timed without dispatch; the 12 us roofline and the events row do not
    assert floors == {"conv2d": {"*": 6.15, "H": 6.15}}
    assert floors["conv2d"]["H"] == pytest.approx(np.quantile([6, 7, 8, 9], FLOOR_QUANTILE))
    # too few rows: no floor at all (not a default), and families outside the list get none
    assert fit_family_floors({"conv2d": (t, roof, gpu, method)}) == {}
    assert fit_family_floors({"matmul": (t, roof, gpu, method)}, min_rows=3) == {}


def test_shipped_floors_come_from_the_h200_calls():
    docs = {g: shipped_doc(g) for g in ("H200", "H100-SXM5", "A100-SXM4-80GB")}
    for kind in CONV_KINDS:
        h200 = docs["H200"]["family_floors"][kind]
        # its DeepBench-shaped calls under 1 us of roofline, replayed in a CUDA graph, take
        # 5.8-8.5 us at the least (opsched_h200_deepbench_conv.csv.gz)
        assert h200["source"] == "fitted" and 5.0 <= h200["us"] <= 10.0
        assert docs["H100-SXM5"]["family_floors"][kind] == h200 | {"source": "architecture"}
        assert docs["A100-SXM4-80GB"]["family_floors"][kind]["source"] == "pooled"
        # well above the launch floor of any of them
        for d in docs.values():
            assert d["family_floors"][kind]["us"] >= 2 * d["kernel_floor"]["us"]


#: The tables that hold every timed backward convolution (the others have none: 1,949 rows of
#: bwd-data and 2,030 of bwd-filter in FIT_FILES, all of them here). Reading these three takes
#: about a second; all twelve, 75 s (most of it NeuSight's and Vidur's 360k rows).
CONV_BWD_FILES = (
    "deepbench_conv.csv", "kineto_resnet50_v100_ops.csv.gz", "opsched_h200_deepbench_conv.csv.gz",
)  # fmt: skip


@pytest.fixture(scope="module")
def conv_bwd() -> FitData:
    data = load_fit_data(files=CONV_BWD_FILES)
    assert {f: len(d.t) for f, d in data.families.items() if f.startswith("conv2d_bwd")} == {
        "conv2d_bwd_data": 1949, "conv2d_bwd_filter": 2030}  # fmt: skip
    return data


def test_shipped_floors_match_the_data(conv_bwd: FitData) -> None:
    f = conv_bwd.families["conv2d_bwd_data"]
    tiny = (f.gpu == "H200") & (f.roof < FAMILY_TINY_ROOFLINE_US)
    tiny &= np.isin(f.method, list(FAMILY_FLOOR_METHODS))
    assert tiny.sum() >= 40
    want = np.quantile(f.t[tiny], FLOOR_QUANTILE)
    assert load_profile("H200").family_floors["conv2d_bwd_data"] == pytest.approx(want, abs=1e-3)


@pytest.mark.parametrize("gpu", GPUS)
def test_small_convolutions_never_below_their_floor(gpu: str) -> None:
    p, bare = load_profile(gpu), _bare(gpu)
    assert set(p.family_floors) == FAMILY_FLOOR_FAMILIES
    for kind in CONV_KINDS:
        for dtype in ("float32", "float16"):
            small, big = SMALL | {"dtype": dtype}, BIG | {"dtype": dtype}
            assert p.predict(kind, small) == max(bare.predict(kind, small), p.family_floors[kind])
            assert p.predict(kind, big) == bare.predict(kind, big) > p.family_floors[kind]


def test_half_precision_small_convolutions_were_at_the_launch_floor():
    # the reason for the floors: the half-precision and backward curves, log-linear in the
    # roofline, fell to the 1.5 us launch floor below their data on the H200
    p, bare = load_profile("H200"), _bare("H200")
    for kind in CONV_KINDS:
        small = SMALL | {"dtype": "float16"}
        assert bare.predict(kind, small) == bare.kernel_floor < 2.0
        assert p.predict(kind, small) >= 5.0


def test_nasnet_half_precision_convolutions_priced_off_the_launch_floor():
    # NASNet-A mobile at batch 1 in float16 on the A100: 314 of its 356 convolutions were
    # priced at the 3 us launch floor
    g = apply(build("nasnet_a_mobile"), "A100-SXM4-80GB", "float16")
    p = load_profile("A100-SXM4-80GB")
    conv = np.array([o.duration for o in g.ops if o.kind == "conv2d"])
    assert len(conv) == 356
    assert (conv >= p.family_floors["conv2d"]).all()
    assert (conv <= p.kernel_floor).sum() == 0


def test_held_out_predictions_respect_the_family_floor(conv_bwd: FitData) -> None:
    data, fam = conv_bwd, "conv2d_bwd_filter"
    fd = data.families[fam]
    h200 = fd.gpu == "H200"
    # leave the H200 out: no GPU has tiny timings of this family, so no floor at all
    out = fit_model(data, {f: (d.gpu != "H200") for f, d in data.families.items()},
                    per_gpu=False, trees=False, families=[fam])  # fmt: skip
    assert fam not in out.family_floors
    model = fit_model(data, trees=False, families=[fam])
    assert model.family_floors[fam]["H200"] > 5.0
    pred = predict_family(model, fam, fd, h200)
    assert (pred >= model.family_floors[fam]["H200"]).all()
    docs = profile_docs(model)
    assert docs["H200"]["family_floors"][fam] == {
        "us": model.family_floors[fam]["H200"], "source": "fitted"}  # fmt: skip


def test_cost_show_lists_the_floors():
    r = CliRunner().invoke(main, ["cost", "show", "H100-SXM5"])
    assert r.exit_code == 0, r.output
    assert "family floors (us): conv2d 7.431, conv2d_bwd_data 6.593" in r.output
    r = CliRunner().invoke(main, ["cost", "show", "T4", "--json"])
    floors = json.loads(r.output)["family_floors_us"]
    assert floors == load_profile("T4").family_floors and floors["conv2d"] == 18.0

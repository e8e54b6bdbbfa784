"""Same-chip borrowing (opsched.cost.sibling): which curve a GPU without timings takes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.cost.export import profile_docs
from opsched.cost.fit import fit_model, load_fit_data
from opsched.cost.heldout import leave_one_gpu_out
from opsched.cost.profile import Profile, load_profile
from opsched.cost.sibling import (
    MIN_SIBLING_SHAPES,
    method_kind,
    pick_sibling,
    shape_counts,
    siblings,
)
from opsched.cost.specs import load_specs

SPECS = load_specs()


def test_siblings_share_architecture_and_sm_count():
    assert siblings("H200", SPECS) == ["H100-SXM5", "H100-PCIe"]  # the same SM count first
    assert siblings("A100-PCIe-80GB", SPECS) == ["A100-PCIe-40GB", "A100-SXM4-40GB",
                                                 "A100-SXM4-80GB"]  # fmt: skip
    # then the same architecture within SM_SPREAD: the Titan Xp's 30 SMs, not the P4's 20
    assert siblings("GTX-1080-Ti", SPECS) == ["Titan-X-Pascal", "Titan-Xp"]
    assert siblings("P4", SPECS) == siblings("L4", SPECS) == []
    assert siblings("H100-PCIe", SPECS) == ["H100-SXM5", "H200"]  # GH100 cut down: 114 SMs
    assert siblings("no such GPU", SPECS) == []


def test_shape_counts_per_kind_of_timing():
    group = np.array(["a", "a", "b", "c", "c"])
    methods = np.array(["events", "wallclock", "events", "cupti", "kernel"])
    assert shape_counts(group, methods) == {"call": 2, "kernel": 1, "profiler": 1}
    assert method_kind("wallclock") == "call" and method_kind("whatever") == "kernel"


def test_pick_sibling_needs_the_same_kind_of_timing_and_enough_shapes():
    n = MIN_SIBLING_SHAPES

    def curve(call: int, kernel: int, source: str = "fitted") -> dict:
        return {"source": source, "shapes": {"call": call, "kernel": kernel, "profiler": 3 * n}}

    groups = {("A100-PCIe-40GB", "matmul", "fp32"): curve(5 * n, 0),
              ("A100-SXM4-40GB", "matmul", "fp32"): curve(0, n),
              ("A100-SXM4-80GB", "matmul", "fp32"): curve(2 * n, 10 * n, source="donor"),
              ("T4", "matmul", "fp32"): curve(9 * n, 9 * n)}  # fmt: skip
    pick = lambda kind: pick_sibling("A100-PCIe-80GB", "matmul", "fp32", kind, groups, SPECS)  # noqa: E731
    # the T4 is another chip; a donor curve is not fitted
    assert pick("call")[0] == "A100-PCIe-40GB"
    assert pick("kernel")[0] == "A100-SXM4-40GB"
    assert pick("profiler")[0] == "A100-PCIe-40GB"  # a tie: the first name
    for g in ("A100-PCIe-40GB", "A100-SXM4-40GB"):
        groups[(g, "matmul", "fp32")]["shapes"]["profiler"] = 0
    assert pick("profiler")[0] == "A100-SXM4-40GB"  # no profiler curve: a sweep's kernel curve
    groups[("A100-SXM4-40GB", "matmul", "fp32")] = curve(0, n - 1)
    assert pick("kernel") is None
    assert pick_sibling("A100-PCIe-80GB", "bmm", "fp32", "call", groups, SPECS) is None
    # the nearest SM count wins over more shapes
    more = {("Titan-X-Pascal", "matmul", "fp32"): curve(n, 0),
            ("Titan-Xp", "matmul", "fp32"): curve(10 * n, 0)}  # fmt: skip
    assert pick_sibling("GTX-1080-Ti", "matmul", "fp32", "call", more, SPECS)[0] == "Titan-X-Pascal"
    del more[("Titan-X-Pascal", "matmul", "fp32")]
    assert pick_sibling("GTX-1080-Ti", "matmul", "fp32", "call", more, SPECS)[0] == "Titan-Xp"


@pytest.fixture(scope="module")
def gemm_data():
    return load_fit_data(files=["deepbench_gemm.csv"])


def test_fit_borrows_a_siblings_curve_for_its_kind_of_timing(gemm_data):
    train = {f: fd.gpu != "GTX-1080-Ti" for f, fd in gemm_data.families.items()}
    model = fit_model(gemm_data, train, trees=False)
    own = model.groups[("Titan-X-Pascal", "matmul", "fp32")]
    c = model.curve("GTX-1080-Ti", "matmul", "fp32", "wallclock")
    assert c["source"] == "sibling" and c["sibling"] == "Titan-X-Pascal"
    assert np.array_equal(c["beta"], own["beta"]) and c["overheads"] == own["overheads"]
    # DeepBench times calls: no sibling curve of kernel time, nor without a method
    for method in ("kernel", "cupti"):
        assert model.curve("GTX-1080-Ti", "matmul", "fp32", method)["source"] == "pooled"
    assert model.curve("GTX-1080-Ti", "matmul", "fp32")["source"] == "pooled"
    # the profile carries the borrowed curve, and prices with it for that kind only
    doc = profile_docs(model)["GTX-1080-Ti"]["curves"]["matmul"]["fp32"]
    assert doc["source"] == "pooled" and set(doc["siblings"]) == {"call"}
    assert doc["siblings"]["call"]["gpu"] == "Titan-X-Pascal"
    p = Profile(profile_docs(model)["GTX-1080-Ti"], trees={})
    borrowed = p.curve("matmul", "float32", "events")
    assert borrowed["sibling"] == "Titan-X-Pascal" and borrowed["source"] == "sibling"
    np.testing.assert_allclose(borrowed["beta"], own["beta"], atol=1e-6)  # rounded to 6 places
    assert borrowed["overheads"] == pytest.approx(own["overheads"], abs=1e-3)
    assert p.curve("matmul", "float32", "kernel")["source"] == "pooled"


def test_sibling_beats_the_pooled_curve_on_a_left_out_gpu(gemm_data):
    # DeepBench GEMMs of the GTX 1080 Ti, never seen: the Titan X (Pascal), the same GP102
    # chip, prices them better than the curve pooled over all GPUs (fitted on these GEMMs
    # alone, no trees: 16.5 % against 27.9 %)
    fd = gemm_data.families["matmul"]
    rows = (fd.gpu == "GTX-1080-Ti") & (fd.cls == "fp32")
    ape = {}
    for sibling in (True, False):
        pred = leave_one_gpu_out(gemm_data, ["GTX-1080-Ti"], trees=False, sibling=sibling)
        p = pred["GTX-1080-Ti"]["matmul"][rows]
        ape[sibling] = float(np.median(np.abs(p - fd.t[rows]) / fd.t[rows]))
    assert ape[True] < 0.2 and ape[True] < 0.75 * ape[False], ape


def test_shipped_profiles_borrow_from_the_same_chip():
    h100 = load_profile("H100-SXM5")  # fp32: no rows of its own; the H200 timed both kinds
    assert h100.curves["matmul"]["fp32"]["source"] == "pooled"
    for method in ("events", "kernel", "cupti"):
        assert h100.curve("matmul", "float32", method)["sibling"] == "H200"
    assert h100.curve("matmul", "float16", "kernel")["source"] == "fitted"  # its own (Vidur)
    a100 = load_profile("A100-PCIe-80GB")  # NeuSight timed only its convolutions here
    assert a100.curve("bmm", "float32", "events")["sibling"] == "A100-PCIe-40GB"
    assert a100.curve("conv2d", "float32", "events")["source"] == "fitted"
    # its float32 kernel time: no sibling swept it (the SXM4 boards' traces ran TF32 GEMMs)
    assert a100.curve("matmul", "float32", "kernel")["source"] == "pooled"
    assert a100.curve("matmul", "float16", "kernel")["sibling"] == "A100-SXM4-80GB"  # Vidur
    mm = {"M": 1024, "N": 1024, "K": 1024, "dtype": "float32"}
    assert a100.predict("matmul", mm, method="events") > a100.predict("matmul", mm)
    assert load_profile("L4").curve("matmul", "float32", "events")["source"] == "pooled"
    pcie = load_profile("H100-PCIe")
    assert pcie.curve("matmul", "float32", "events")["sibling"] == "H200"
    assert pcie.curve("matmul", "float16", "kernel")["sibling"] == "H100-SXM5"


def test_cli_show_says_where_each_curve_comes_from():
    r = CliRunner().invoke(main, ["cost", "show", "H100-SXM5"])
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.startswith("matmul") and " fp32 " in x)
    assert line.split()[1:3] == ["fp32", "pooled"] and line.split()[-3:] == ["H200"] * 3
    half = next(x for x in r.output.splitlines() if x.startswith("matmul") and " half " in x)
    assert half.split()[-3:] == ["own"] * 3
    r = CliRunner().invoke(main, ["cost", "show", "A100-PCIe-80GB", "--json"])
    rows = {(c["family"], c["class"]): c for c in json.loads(r.output)["curves"]}
    assert rows[("matmul", "fp32")]["call"] == "A100-PCIe-40GB"
    assert rows[("matmul", "fp32")]["kernel"] == "pooled"  # no sibling swept fp32 kernels
    assert rows[("conv2d", "fp32")]["source"] == "fitted"
    assert "no tensor cores" not in r.output and json.loads(r.output)["half_tensor_cores"]
    r = CliRunner().invoke(main, ["cost", "show", "P4"])
    assert r.exit_code == 0 and "no tensor cores: float16 GEMMs" in r.output
    r = CliRunner().invoke(main, ["cost", "show", "A10G"])
    assert r.exit_code == 2 and "unknown GPU 'A10G'" in r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1

"""Kernel launch floor: learned from tiny kernel-timed rows, applied to every prediction."""

from __future__ import annotations

import numpy as np
import pytest

from opsched.cost import apply, load_profile
from opsched.cost.export import profile_docs
from opsched.cost.fit import fit_model, predict_family
from opsched.cost.fitdata import FamilyData, FitData
from opsched.cost.floor import (
    FLOOR_QUANTILE,
    TINY_ROOFLINE_US,
    apply_floor,
    fit_floors,
    floor_of,
)
from opsched.cost.profile import Profile
from opsched.cost.specs import load_specs
from opsched.ir import Op, OpGraph
from tests.cost.helpers import profile_without, shipped_doc

TINY_MM = {"M": 2, "N": 2, "K": 2, "dtype": "float16"}
TINY_CONV = {"N": 1, "C": 3, "H": 4, "W": 4, "K": 4, "R": 3, "S": 3, "dtype": "float16"}
BIG_MM = {"M": 8192, "N": 8192, "K": 8192, "dtype": "float16"}
PAD_64 = {"M": 64, "N": 64, "K": 64}


def _without_floor(gpu: str) -> Profile:
    # without the convolutions' own floors too (tests/cost/test_family_floor.py)
    return profile_without(gpu, "kernel_floor", "family_floors")


def test_fit_floors_quantile_per_gpu_and_pooled_median():
    # A: tiny rows 2..21 us (20 rows) -> 5 % quantile by linear interpolation = 2 + 0.05*19
    # = 2.95; B: 10 tiny rows all 1 us -> 1.0; C: 10 rows but all timed with events -> none.
    # A's big row (roofline 50 us, 80 us) and its events rows do not count.
    t = np.concatenate([np.arange(2.0, 22.0), [80.0], np.ones(10), np.full(10, 30.0)])
    roof = np.concatenate([np.full(20, 0.01), [50.0], np.full(10, 0.02), np.full(10, 0.01)])
    gpu = np.array(["A"] * 21 + ["B"] * 10 + ["C"] * 10)
    method = np.array(["kernel"] * 21 + ["cupti"] * 10 + ["events"] * 10)
    floors = fit_floors([(t, roof, gpu, method)], min_rows=10)
    assert FLOOR_QUANTILE == 0.05 and TINY_ROOFLINE_US > 0.01
    assert floors == {"*": pytest.approx(1.975), "A": 2.95, "B": 1.0}
    # B below min_rows: A alone, and the pooled floor is A's
    assert fit_floors([(t, roof, gpu, method)], min_rows=11) == {"*": 2.95, "A": 2.95}
    assert floor_of(floors, "C") == (floors["*"], "pooled")
    assert floor_of(floors, "B") == (1.0, "fitted")
    # a GPU without a floor takes the median of its architecture's, else the pooled one
    arch = {"A": "sm_80", "B": "sm_70", "C": "sm_80", "D": "sm_89"}
    assert floor_of(floors, "C", arch) == (2.95, "architecture")
    assert floor_of(floors, "D", arch) == (floors["*"], "pooled")


def test_apply_floor_keeps_nan_and_large_values():
    out = apply_floor(np.array([0.001, np.nan, 3.0, 1e4]), 2.5)
    assert np.isnan(out[1]) and out[[0, 2, 3]].tolist() == [2.5, 3.0, 1e4]


@pytest.mark.parametrize("gpu", ["A100-SXM4-80GB", "H100-SXM5", "V100-SXM2", "L4", "T4"])
def test_tiny_ops_sit_on_the_floor_big_ops_unchanged(gpu):
    p, bare = load_profile(gpu), _without_floor(gpu)
    assert 0.5 <= p.kernel_floor <= 5.0
    # a GEMM costs at most its zero-padded versions: a 2x2x2 one at most what a 64^3 one does,
    # a few us (the tiny half-precision GEMM kernels timed on the H200 take ~3 us), where the
    # curves alone, extrapolated far below their data, climbed to 2-6 us (half) and 75-370 us
    # (float32) and had once fallen to ~0.01 us
    tiny = p.predict("matmul", TINY_MM)
    assert p.kernel_floor <= tiny <= p.predict("matmul", TINY_MM | PAD_64) * (1 + 1e-9) < 6.0
    assert p.predict("matmul", {"M": 2, "N": 2, "K": 2}) < 20.0
    assert bare.predict("conv2d", TINY_CONV) < 0.5 * p.kernel_floor  # the floor's reason
    assert p.predict("conv2d", TINY_CONV) == p.family_floors["conv2d"] > p.kernel_floor
    assert p.predict("elementwise", {"numel": 4, "dtype": "float16"}) >= p.kernel_floor
    assert p.predict("matmul", BIG_MM) == bare.predict("matmul", BIG_MM) > 100 * p.kernel_floor
    assert p.predict("view", {"numel": 10}) == 0.0


def test_floor_source_fitted_architecture_or_pooled():
    gpus = ("A100-SXM4-80GB", "A100-SXM4-40GB", "A100-PCIe-40GB", "H100-SXM5", "H100-PCIe",
            "H200", "L4")  # fmt: skip
    floor = {g: shipped_doc(g)["kernel_floor"] for g in gpus}
    # the H200's own kernel-timed rows (opsched_h200.csv.gz, kernel_time_us) give it a floor
    assert {floor[g]["source"] for g in ("A100-SXM4-80GB", "H100-SXM5", "H200")} == {"fitted"}
    # same compute capability (sm_80, sm_90): the median of the fitted floors
    assert floor["A100-PCIe-40GB"]["source"] == floor["H100-PCIe"]["source"] == "architecture"
    assert floor["A100-PCIe-40GB"]["us"] == np.median(
        [floor["A100-SXM4-80GB"]["us"], floor["A100-SXM4-40GB"]["us"]]
    )
    assert floor["H100-PCIe"]["us"] == np.median([floor["H100-SXM5"]["us"], floor["H200"]["us"]])
    assert 1.0 <= floor["H200"]["us"] <= 2.0  # its smallest kernels: 1.3-1.5 us
    assert floor["L4"]["source"] == "pooled"  # no Ada GPU has kernel-timed rows


def test_events_overhead_already_above_floor():
    # an events prediction carries the PyTorch dispatch overhead (tens of us): the floor is a
    # no-op there, and the tiny op's events time is the overhead plus a near-zero kernel
    p, bare = load_profile("T4"), _without_floor("T4")
    ev = p.predict("matmul", TINY_MM, method="events")
    assert ev == bare.predict("matmul", TINY_MM, method="events") > 10 * p.kernel_floor


def test_attention_parts_each_floored():
    # before sm_80 attention is priced from its parts (no flash kernel: opsched.cost.composite)
    p = load_profile("V100-SXM2")
    tiny = {"B": 1, "Sq": 2, "Skv": 2, "D": 2, "dtype": "float16"}
    t = p.predict("attention", tiny)
    sm = p.predict("softmax", {"rows": 2, "cols": 2, "dtype": "float16"})
    mm = p.predict("matmul", TINY_MM)
    # two 2x2x2 GEMMs (each at least the floor), plus the softmax kernel
    assert sm >= p.kernel_floor and mm >= p.kernel_floor and t == pytest.approx(2 * mm + sm)
    # the A100's one flash kernel: at least the floor, at most those three kernels
    a100 = load_profile("A100-SXM4-80GB")
    fused = a100.predict("attention", tiny)
    parts = 2 * a100.predict("matmul", TINY_MM) + a100.predict(
        "softmax", tiny | {"rows": 2, "cols": 2}
    )
    assert a100.kernel_floor <= fused <= parts


def test_apply_durations_never_below_floor():
    big = {"M": 8192, "N": 8192, "K": 8192}
    ops = (Op("x", kind="input", attrs={"numel": 4}),
           Op("mm", deps=("x",), kind="matmul", attrs={"M": 2, "N": 2, "K": 2}),
           Op("big", deps=("mm",), kind="matmul", attrs=big))  # fmt: skip
    out = apply(OpGraph(ops, name="floor"), "A100-SXM4-80GB", "float16")
    p = load_profile("A100-SXM4-80GB")
    assert out["x"].duration == 0.0
    assert out["mm"].duration == p.predict("matmul", TINY_MM) >= p.kernel_floor
    assert out["big"].duration == pytest.approx(p.predict("matmul", BIG_MM))


def _toy_data() -> FitData:
    """Elementwise rows on two GPUs: kernel-timed with a 2 us floor, and events-timed."""
    rng = np.random.default_rng(0)
    specs = load_specs()
    from opsched.cost.features import feature_matrix, roofline_us

    attrs, t, gpu, method = [], [], [], []
    for g, m in (("A100-SXM4-80GB", "kernel"), ("T4", "events")):
        for numel in np.unique(np.geomspace(4, 2**26, 120).astype(int)):
            a = {"numel": int(numel), "dtype": "float16"}
            kern = roofline_us("elementwise", a, specs[g]) * 1.3
            obs = max(kern, 2.0) if m == "kernel" else 25.0 + kern
            attrs.append(a)
            t.append(obs * float(np.exp(rng.normal(0, 0.02))))
            gpu.append(g)
            method.append(m)
    gpu_a = np.array(gpu)
    x = np.zeros((len(t), feature_matrix("elementwise_unary", attrs[:1], specs["T4"]).shape[1]))
    roof = np.zeros(len(t))
    for g in ("A100-SXM4-80GB", "T4"):
        i = np.nonzero(gpu_a == g)[0]
        x[i] = feature_matrix("elementwise_unary", [attrs[j] for j in i], specs[g])
        roof[i] = [roofline_us("elementwise", attrs[j], specs[g]) for j in i]
    fd = FamilyData(x=x, t=np.array(t), roof=roof, gpu=gpu_a, method=np.array(method),
                    cls=np.full(len(t), "half"), source=np.full(len(t), "toy"),
                    group=np.array([str(a["numel"]) for a in attrs]))  # fmt: skip
    return FitData({"elementwise_unary": fd})


def test_fit_model_learns_floor_and_held_out_predictions_respect_it():
    data = _toy_data()
    fd = data.families["elementwise_unary"]
    model = fit_model(data, trees=False)
    # the A100 rows floor at 2 us (x e^N(0, 0.02) noise): its 5 % quantile is ~1.96 us
    assert model.floors["A100-SXM4-80GB"] == pytest.approx(2.0, abs=0.08)
    assert "T4" not in model.floors  # events rows teach no floor
    sel = np.ones(len(fd.t), bool)
    pred = predict_family(model, "elementwise_unary", fd, sel)
    bare = predict_family(model, "elementwise_unary", fd, sel, floor=False)
    a100 = fd.gpu == "A100-SXM4-80GB"
    assert (pred[a100] >= model.floors["A100-SXM4-80GB"]).all()
    assert (pred >= bare).all() and (pred[fd.roof > 50] == bare[fd.roof > 50]).all()
    # the floored fit is closer on the A100's tiny rows than the bare curve
    tiny = a100 & (fd.roof < 0.1)
    err = lambda p: np.median(np.abs(p[tiny] - fd.t[tiny]) / fd.t[tiny])  # noqa: E731
    assert err(pred) <= err(bare)
    # leave-one-GPU-out: the A100's rows out, its floor transfers (here: the default)
    out = fit_model(data, {"elementwise_unary": ~a100}, per_gpu=False, trees=False)
    assert out.floors == {"*": 1.0}
    docs = profile_docs(model)
    assert docs["A100-SXM4-80GB"]["kernel_floor"]["source"] == "fitted"
    assert docs["A100-PCIe-40GB"]["kernel_floor"]["source"] == "architecture"
    assert docs["L4"]["kernel_floor"] == {"us": model.floors["*"], "source": "pooled"}


@pytest.mark.parametrize("gpu", ["H200", "V100-SXM2", "A100-SXM4-80GB", "T4", "L4"])
def test_tiny_elementwise_ops_cost_the_same_as_a_block(gpu: str) -> None:
    # one-element ops (a batch norm's step counter: 1 us on the H200) once climbed to 3.5 us
    # on the H200's curve, extrapolated below its smallest rows; the size terms now stop at
    # MIN_ELEMENTWISE_NUMEL
    from opsched.cost.features import MIN_ELEMENTWISE_NUMEL

    p = load_profile(gpu)
    for arity in (1, 2):
        t = [p.predict("elementwise", {"numel": n, "arity": arity, "fn": "add"})
             for n in (1, 10, 100, MIN_ELEMENTWISE_NUMEL)]  # fmt: skip
        assert max(t) == min(t) and p.kernel_floor <= t[0] < 1.5 * p.kernel_floor + 1.0


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_square_gemm_prices_grow_with_size_on_every_gpu(dtype):
    # a bigger GEMM never costs much less than a smaller one: before the padding bound the
    # float32 curves priced a 2x2x2 GEMM at 150-370 us, above their 64^3 and 128^3 prices
    from opsched.cost import known_gpus

    sizes = [2**k for k in range(1, 14)]
    for gpu in known_gpus():
        p = load_profile(gpu)
        t = [p.predict("matmul", {"M": m, "N": m, "K": m, "dtype": dtype}) for m in sizes]
        for small, big, a, b in zip(sizes, sizes[1:], t, t[1:], strict=False):
            assert b >= 0.8 * a, (gpu, small, a, big, b)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_norm_prices_grow_with_rows_on_every_gpu(dtype):
    # more rows never cost much less: before the row padding bound a float32 layernorm of one
    # 1024-wide row was priced at 29-44 us on the A100s, one of 32 rows at 8-13 us
    from opsched.cost import known_gpus

    rows = [2**k for k in range(16)]
    for gpu in known_gpus():
        p = load_profile(gpu)
        for kind, cols in (("layernorm", 1024), ("rmsnorm", 4096)):
            t = [p.predict(kind, {"rows": r, "cols": cols, "dtype": dtype}) for r in rows]
            for small, big, a, b in zip(rows, rows[1:], t, t[1:], strict=False):
                assert b >= 0.8 * a, (gpu, kind, small, a, big, b)


def test_fit_model_fits_trees_only_for_the_families_asked():
    # leave-one-GPU-out asks for the trees of the left-out GPU's families alone
    data = _toy_data()
    assert "elementwise_unary" in fit_model(data).trees
    assert fit_model(data, tree_families=set()).trees == {}
    assert "elementwise_unary" in fit_model(data, tree_families={"elementwise_unary"}).trees

"""Elementwise prices: fills read nothing, and no elementwise kernel costs more than a few
launches plus its streaming time."""

from __future__ import annotations

import numpy as np
import pytest

from opsched.cost import known_gpus, load_profile
from opsched.cost.features import write_only
from opsched.cost.limits import ELEMENTWISE_CAP


def test_fills_and_factory_ops_are_write_only() -> None:
    for fn in ("fill_", "fill", "zero_", "zeros_like", "ones"):
        assert write_only({"fn": fn}), fn
    assert not write_only({"fn": "masked_fill_"})  # reads the mask and the tensor
    assert not write_only({"fn": "relu"}) and not write_only({})


@pytest.mark.parametrize("gpu", ["H200", "A100-SXM4-80GB", "V100-SXM2", "T4"])
def test_a_fill_is_priced_as_a_unary_kernel_over_half_its_elements(gpu) -> None:
    p = load_profile(gpu)
    for n, dtype in ((3 * 512 * 8 * 1024, "bfloat16"), (1 << 20, "float32"), (4096, "float32")):
        fill = p.predict("elementwise", {"numel": n, "fn": "fill_", "dtype": dtype})
        half = p.predict("elementwise", {"numel": n // 2, "dtype": dtype})
        assert fill == pytest.approx(half)


def test_the_transformer_traces_fills_near_their_time() -> None:
    """The held-out H200 transformer step zeroes 3 x 512 x 8 x 1024 bfloat16 gradients in
    8.4 us; priced as a unary kernel that reads and writes every element it came to 22 us."""
    p = load_profile("H200")
    t = p.predict("elementwise", {"numel": 3 * 512 * 8 * 1024, "fn": "fill_", "dtype": "bfloat16"})
    assert 6 < t < 15


def test_elementwise_kernels_cost_at_most_a_few_launches_plus_streaming() -> None:
    """The V100-PCIe and P100 have per-call NeuSight timings alone; their fitted unary and
    binary curves took PyTorch's dispatch into the kernel time and priced a 256-element add
    at 25-50 us (the floor is 1-1.5 us). Every GPU now stays within the cap."""
    for gpu in known_gpus():
        p = load_profile(gpu)
        for arity in (1, 2):
            for n in (256, 1 << 16, 1 << 22):
                a = {"numel": n, "arity": arity, "fn": "add"}
                cap = ELEMENTWISE_CAP * (p.kernel_floor + p.roofline("elementwise", a))
                assert p.predict("elementwise", a) <= cap + 1e-9, (gpu, arity, n)
    for gpu in ("V100-PCIe", "P100-PCIe"):
        p = load_profile(gpu)
        tiny = p.predict("elementwise", {"numel": 256, "arity": 1, "fn": "add"})
        assert tiny <= ELEMENTWISE_CAP * p.kernel_floor + 0.1 < 10
        # a per-call (events) price keeps its dispatch overhead on top
        ev = p.predict("elementwise", {"numel": 256, "arity": 1, "fn": "add"}, method="events")
        assert ev > 20


def test_the_cap_leaves_large_kernels_to_their_curves(monkeypatch) -> None:
    """Streaming ops of 2^22-2^24 elements keep their curve prices on GPUs with kernel timings:
    the cap binds only where a curve strays far from launch plus streaming."""
    import opsched.cost.composite as composite

    ops = [{"numel": n, "arity": 2, "fn": "add", "dtype": "float16"} for n in (1 << 22, 1 << 24)]
    gpus = ("A100-SXM4-80GB", "H200", "V100-SXM2")
    capped = [load_profile(g).predict_many(["elementwise"] * 2, ops) for g in gpus]
    monkeypatch.setattr(
        composite, "elementwise_cap", lambda roof, floor: np.full(len(roof), np.inf)
    )
    free = [load_profile(g).predict_many(["elementwise"] * 2, ops) for g in gpus]
    for gpu, a, b in zip(gpus, capped, free, strict=True):
        assert np.array_equal(a, b), gpu
    p = load_profile("A100-SXM4-80GB")
    assert 1.0 < capped[0][1] / p.roofline("elementwise", ops[1]) < 2.0

"""Pricing a batch: each distinct op once with the price it gets alone, the compiled tree walk
equal to the vector one, and bad attrs or tables refused with one named error."""

from __future__ import annotations

import json

import numpy as np
import pytest

from opsched.cost import load_profile
from opsched.cost.batch import distinct_ops
from opsched.errors import GraphError

DTYPES = ["float16", "bfloat16", "float32", "tf32", "int8"]


def _random_ops(family: str, n: int, rng: np.random.Generator) -> list[dict]:
    ops: list[dict] = []
    while len(ops) < n:
        if family in ("matmul", "bmm"):
            a = {"M": int(rng.integers(0, 9000)), "N": int(rng.integers(1, 9000)),
                 "K": int(rng.integers(1, 9000))}  # fmt: skip
            if family == "bmm":
                a["B"] = int(rng.integers(2, 64))
            elif rng.random() < 0.3:
                a["B"] = 1
        elif family.startswith("elementwise"):
            a = {"numel": int(rng.integers(0, 10**8)), "fn": str(rng.choice(["relu", "gelu", ""]))}
            if family == "elementwise_binary":
                a["arity"] = int(rng.integers(2, 4))
        else:  # a convolution direction
            h, r = int(rng.integers(1, 120)), int(rng.choice([1, 3, 5, 7]))
            a = {"N": int(rng.integers(1, 64)), "C": int(rng.integers(1, 512)), "H": h, "W": h,
                 "K": int(rng.integers(1, 512)), "R": r, "S": r, "pad_h": r // 2,
                 "pad_w": r // 2}  # fmt: skip
            if rng.random() < 0.3:
                a["stride_h"] = a["stride_w"] = int(rng.integers(1, 3))
            if rng.random() < 0.2:
                g = a["groups"] = int(rng.choice([0, 1, 2, a["C"]]))
                if g > 1:  # both channel counts split into the groups
                    a["C"], a["K"] = g * max(1, a["C"] // g), g * max(1, a["K"] // g)
            if h + 2 * (r // 2) < r:
                continue
        if rng.random() < 0.2 and not family.startswith("elementwise"):
            a |= {"flops": int(rng.integers(0, 10**12)), "bytes": int(rng.integers(0, 10**10))}
        if rng.random() < 0.6:
            a["dtype"] = str(rng.choice(DTYPES))
        ops.append(a)
    return ops


@pytest.mark.parametrize(
    ("kind", "attrs", "message"),
    [
        ("matmul", {"M": -1, "N": 2, "K": 2}, "must be a non-negative integer"),
        ("matmul", {"M": True, "N": 2, "K": 2}, "must be a non-negative integer"),
        ("matmul", {"M": 2, "N": 2, "K": 2, "flops": -5}, "must be a non-negative integer"),
        ("elementwise", {"numel": 2.5}, "must be a non-negative integer"),
        ("conv2d", {"N": 1, "C": 3, "H": 2, "W": 2, "K": 4, "R": 5, "S": 5}, "does not fit"),
        ("conv2d", {"N": 1, "C": 3, "H": 8, "W": 8, "K": 4, "R": 3, "S": 3, "stride_h": 0},
         "stride must be >= 1"),
        ("matmul", {"M": 2, "N": 2, "K": 2, "dtype": "float7"}, "unknown dtype"),
    ],
)  # fmt: skip
def test_bad_shapes_get_one_named_error(kind, attrs, message):
    with pytest.raises(GraphError, match=message):
        load_profile("T4").predict(kind, attrs)


def test_float_sizes_the_checks_accept_price_as_their_ints():
    p = load_profile("A100-SXM4-80GB")
    assert p.predict("matmul", {"M": 64.0, "N": 64, "K": 64}) == p.predict(
        "matmul", {"M": 64, "N": 64, "K": 64}
    )


def test_a_zero_size_gemm_or_convolution_is_priced_not_a_crash():
    p = load_profile("H200")
    assert p.predict("matmul", {"M": 0, "N": 64, "K": 64}) >= p.kernel_floor
    conv = {"N": 0, "C": 3, "H": 8, "W": 8, "K": 4, "R": 3, "S": 3}
    assert p.predict("conv2d", conv) >= p.kernel_floor


def test_distinct_ops_ignore_key_order_but_not_value_types():
    mm = {"M": 8, "N": 8, "K": 8}
    kinds = ["matmul"] * 5 + ["elementwise"]
    attrs = [mm, {"K": 8, "N": 8, "M": 8}, mm | {"K": 8.0}, mm | {"out_shape": [8, 8]},
             mm | {"out_shape": [8, 8]}, {"numel": 8}]  # fmt: skip
    first, inverse = distinct_ops(kinds, attrs)
    assert first == [0, 2, 3, 5]
    assert inverse.tolist() == [0, 0, 1, 2, 2, 3]
    fused = {"flops": 1, "bytes": 1, "numel": 1, "parts": [{"kind": "matmul", **mm}]}
    first, _ = distinct_ops(["fused", "fused"], [fused, fused])
    assert first == [0, 1]  # unhashable parts: each priced on its own


def test_a_batch_with_repeats_prices_each_op_as_alone():
    p = load_profile("A100-SXM4-80GB")
    ops = _random_ops("conv2d", 40, np.random.default_rng(3))
    gemms = _random_ops("matmul", 40, np.random.default_rng(4))
    kinds = ["conv2d"] * 40 + ["matmul"] * 40
    attrs = ops + gemms
    rep = [3, 1, 0, 2] * 20  # each op 0-3 times, shuffled
    kl = [k for k, r in zip(kinds, rep, strict=True) for _ in range(r)]
    al = [dict(a) for a, r in zip(attrs, rep, strict=True) for _ in range(r)]
    order = np.random.default_rng(5).permutation(len(kl))
    kl, al = [kl[i] for i in order], [al[i] for i in order]
    batch = p.predict_many(kl, al)
    alone = np.array([p.predict(k, a) for k, a in zip(kl, al, strict=True)])
    assert np.allclose(batch, alone, rtol=1e-12, atol=0)
    # a bad op in a batch of repeats is still found and named
    with pytest.raises(GraphError, match="needs attrs 'K'"):
        p.predict_many(["matmul"] * 3, [gemms[0], gemms[0], {"M": 1, "N": 1}])


def test_compiled_tree_walk_equals_the_vector_walk(monkeypatch):
    ens = load_profile("T4").trees["conv2d"]
    rng = np.random.default_rng(11)
    x = rng.normal(0, 3, (700, int(ens.feature.max()) + 1))
    x[rng.random(x.shape) < 0.05] = np.nan  # missing values follow each split's flag
    monkeypatch.setenv("OPSCHED_JIT", "1")
    compiled = ens.predict(x)
    monkeypatch.setenv("OPSCHED_JIT", "0")
    assert np.array_equal(compiled, ens.predict(x))


@pytest.mark.parametrize("value", [None, float("nan"), float("inf"), 1e300, "8", [4], -3])
@pytest.mark.parametrize(
    ("kind", "attrs", "key"),
    [
        ("elementwise", {"numel": 64}, "numel"),
        ("matmul", {"M": 8, "N": 8, "K": 8}, "B"),
        ("conv2d", {"N": 1, "C": 3, "H": 8, "W": 8, "K": 4, "R": 3, "S": 3}, "pad_h"),
        ("attention", {"B": 2, "Sq": 8, "Skv": 8, "D": 8}, "Skv"),
        ("layernorm", {"rows": 4, "cols": 4}, "rows"),
    ],
)  # fmt: skip
def test_a_size_that_is_not_a_size_gets_one_named_error(kind, attrs, key, value):
    # None, NaN, infinities, strings and lists used to reach int() or float() and end in a
    # TypeError / ValueError / OverflowError traceback
    p = load_profile("H200")
    bad = attrs | {key: value}
    with pytest.raises(GraphError, match=rf"attrs\['{key}'\] must be a non-negative integer"):
        p.predict(kind, bad)
    with pytest.raises(GraphError, match=rf"attrs\['{key}'\] must be a non-negative integer"):
        p.footprint(kind, bad)


def test_cost_apply_names_the_op_with_a_null_size(tmp_path):
    from click.testing import CliRunner

    from opsched.cli import main

    g = {"ops": [{"name": "a", "kind": "elementwise", "attrs": {"numel": None}}]}
    path, out = tmp_path / "g.json", tmp_path / "o.json"
    path.write_text(json.dumps(g))
    r = CliRunner().invoke(main, ["cost", "apply", str(path), "--gpu", "H200", "-o", str(out)])
    assert r.exit_code == 2 and not out.exists()
    assert "op 'a': elementwise attrs['numel'] must be a non-negative integer" in r.output
    assert "internal error" not in r.output


def test_timing_tables_missing_a_read_column_get_one_error(tmp_path):
    import pandas as pd
    from click.testing import CliRunner

    from opsched.cli import main

    ops = pd.read_csv("datasets/kernel-timings/kineto_resnet50_v100_ops.csv.gz", nrows=10)
    no_gpu = tmp_path / "ops.csv"
    ops.drop(columns=["gpu"]).to_csv(no_gpu, index=False)
    r = CliRunner().invoke(
        main, ["cost", "predict", "-i", str(no_gpu), "-o", str(tmp_path / "o.csv")]
    )
    assert r.exit_code == 2 and "no 'gpu' column: name the GPU of every row (--gpu)" in r.output
    assert not (tmp_path / "o.csv").exists()
    out = str(tmp_path / "o.csv")
    r = CliRunner().invoke(
        main, ["cost", "predict", "-i", str(no_gpu), "-o", out, "--gpu", "V100-SXM2"]
    )
    assert r.exit_code == 0, r.output
    # a DeepBench convolution table timing the forward direction alone is read, not a KeyError
    conv = pd.read_csv("datasets/kernel-timings/deepbench_conv.csv", nrows=10)
    fwd = tmp_path / "fwd.csv"
    conv.drop(columns=["bwd_data_time_us", "bwd_filter_time_us"]).to_csv(fwd, index=False)
    r = CliRunner().invoke(main, ["cost", "evaluate", str(fwd), "--json"])
    assert r.exit_code == 0, r.output
    assert {row["family"] for row in json.loads(r.output)} == {"conv2d"}


_ODD = [None, -1, 0, 1, 2, 7, 64, 4096, 10**12, 2**64, 1.0, 2.5, float("nan"), float("inf"),
        1e300, True, "8", [4], {}]  # fmt: skip
_OPTIONAL = ("B", "arity", "groups", "stride_h", "stride_w", "pad_h", "pad_w", "dilation_h",
             "causal", "flops", "bytes", "numel")  # fmt: skip


def test_any_attrs_give_a_price_or_one_named_error():
    # a fuzz, kept: every kind with required and optional attrs drawn from sizes, zeros,
    # huge and fractional numbers, NaN, infinities, bools, strings, lists and None
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from opsched.errors import InputError
    from opsched.ir import kinds

    value = st.one_of(st.integers(1, 300), st.sampled_from(_ODD))
    dtype = st.sampled_from(["float16", "bfloat16", "float32", "int8", "tf32", "float64", "x"])
    profiles = [load_profile(g) for g in ("H200", "T4", "L4")]

    @st.composite
    def ops(draw):  # type: ignore[no-untyped-def]
        kind = draw(st.sampled_from(sorted(kinds.KINDS)))
        keys = list(kinds.KINDS[kind]) + draw(st.lists(st.sampled_from(_OPTIONAL), max_size=3))
        attrs = {k: draw(value) for k in keys if draw(st.integers(0, 30)) > 0}
        if draw(st.booleans()):
            attrs["dtype"] = draw(dtype)
        return kind, attrs, draw(st.sampled_from(profiles))

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(ops())
    def check(op):  # type: ignore[no-untyped-def]
        kind, attrs, p = op
        try:
            t = p.predict(kind, attrs)
        except (GraphError, InputError):
            return
        assert np.isfinite(t) and t >= 0, (kind, attrs, t)
        assert isinstance(p.footprint(kind, attrs), int)

    check()

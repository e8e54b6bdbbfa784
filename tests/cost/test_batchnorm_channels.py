"""A batch norm is priced by its channels as well as its elements: cuDNN's training kernels
run one thread block per channel."""

from __future__ import annotations

import json

import pytest

from opsched.cost import known_gpus, load_profile
from opsched.cost.aten import aten_kind
from opsched.cost.features import feature_matrix
from opsched.cost.specs import load_specs
from opsched.importers.trace.shapes import infer_kind

#: Two inputs of 25,690,112 float32 elements each, from ResNet-50: 64 and 256 channels.
FEW = {"numel": 32 * 64 * 112 * 112, "channels": 64, "dtype": "float32"}
MANY = {"numel": 32 * 256 * 56 * 56, "channels": 256, "dtype": "float32"}


def test_the_profiler_rows_record_the_channels() -> None:
    dims = json.loads("[[32, 64, 112, 112], [64], [64], [64], [64], [], [], []]")
    types = ["float"] * 5 + ["Bool", "Double", "Double"]
    want = {"numel": 32 * 64 * 112 * 112, "channels": 64, "dtype": "float32"}
    assert aten_kind("aten::cudnn_batch_norm", dims, types) == ("batchnorm", want)
    kind, attrs = aten_kind("aten::cudnn_batch_norm_backward", [[8, 3], [8, 3]], ["float"] * 2)
    assert (kind, attrs["channels"], attrs["fn"]) == ("batchnorm", 3, "backward")
    # a 1-D input has no channel axis: unknown (0), priced as filling the GPU
    assert aten_kind("aten::native_batch_norm", [[8]], ["float"])[1]["channels"] == 0


def test_the_trace_importer_keeps_the_channels() -> None:
    kind, attrs = infer_kind("aten::cudnn_batch_norm", [[32, 64, 112, 112], [64], [64]])
    assert (kind, attrs["channels"], attrs["numel"]) == ("batchnorm", 64, 32 * 64 * 112 * 112)


def test_unknown_channels_are_priced_as_filling_the_gpu() -> None:
    spec = load_specs()["H200"]
    full = {"numel": 1 << 24, "channels": 4 * spec.sm_count}
    a, b = feature_matrix("batchnorm", [{"numel": 1 << 24}, full], spec)
    assert a.tolist() == b.tolist()


@pytest.mark.parametrize("fn", ["", "backward"])
def test_the_v100_rows_of_one_size_are_told_apart(fn: str) -> None:
    # measured medians on the V100 ResNet-50 step (kineto_resnet50_v100_ops.csv.gz): forward
    # 450 us (64 channels) and 403 us (256), 1.12x; backward 915.5 and 673, 1.36x. Priced by
    # the element count alone, as before the channels were read, both cost the same.
    p = load_profile("V100-SXM2")
    extra = {"fn": fn} if fn else {}
    few, many = p.predict("batchnorm", FEW | extra), p.predict("batchnorm", MANY | extra)
    want_few, want_many = (915.5, 673.0) if fn else (450.0, 403.0)
    assert few == pytest.approx(want_few, rel=0.2)
    assert many == pytest.approx(want_many, rel=0.2)
    assert few / many > 1.05


@pytest.mark.parametrize("gpu", known_gpus())
def test_fewer_channels_never_make_a_batch_norm_cheaper(gpu: str) -> None:
    p = load_profile(gpu)
    for fn in ("", "backward"):
        extra = {"fn": fn} if fn else {}
        assert p.predict("batchnorm", FEW | extra) >= p.predict("batchnorm", MANY | extra)

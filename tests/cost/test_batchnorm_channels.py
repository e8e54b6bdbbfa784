"""A batch norm is priced by its channels as well as its elements: cuDNN's training kernels
run one thread block per channel."""

from __future__ import annotations

import json

import pytest

from opsched.cost import known_gpus, load_profile
from opsched.cost.aten import aten_kind
from opsched.cost.batch import check_op
from opsched.cost.features import feature_matrix
from opsched.cost.footprint import sm_footprint
from opsched.cost.specs import load_specs
from opsched.errors import GraphError
from opsched.importers.trace.shapes import infer_kind

#: Two inputs of 25,690,112 float32 elements each, from ResNet-50: 64 and 256 channels.
FEW = {"numel": 32 * 64 * 112 * 112, "channels": 64, "training": 1, "dtype": "float32"}
MANY = {"numel": 32 * 256 * 56 * 56, "channels": 256, "training": 1, "dtype": "float32"}


def test_the_profiler_rows_record_the_channels() -> None:
    dims = json.loads("[[32, 64, 112, 112], [64], [64], [64], [64], [], [], []]")
    types = ["float"] * 5 + ["Bool", "Double", "Double"]
    want = {"numel": 32 * 64 * 112 * 112, "channels": 64, "training": 1, "dtype": "float32"}
    assert aten_kind("aten::cudnn_batch_norm", dims, types) == ("batchnorm", want)
    # cuDNN's inference kernel: no batch statistics
    inf = "void cudnn::bn_fw_inf_1C11_kernel_NCHW<float, float, true, 1>(...)"
    assert aten_kind("aten::cudnn_batch_norm", dims, types, kernel_names=inf)[1]["training"] == 0
    kind, attrs = aten_kind("aten::cudnn_batch_norm_backward", [[8, 3], [8, 3]], ["float"] * 2)
    assert (kind, attrs["channels"], attrs["fn"]) == ("batchnorm", 3, "backward")
    # a 1-D input has no channel axis: unknown (0), priced as filling the GPU
    assert aten_kind("aten::native_batch_norm", [[8]], ["float"])[1]["channels"] == 0


def test_the_trace_importer_keeps_the_channels_and_the_mode() -> None:
    dims = [[32, 64, 112, 112], [64], [64], [64], [64], [], [], []]
    kind, attrs = infer_kind("aten::cudnn_batch_norm", dims)
    assert (kind, attrs["channels"], attrs["numel"]) == ("batchnorm", 64, 32 * 64 * 112 * 112)
    assert attrs["training"] == 1  # the flag not recorded: taken as training
    concrete = ["", "", "", "", "", "False", "0.1", "1e-05"]
    assert infer_kind("aten::cudnn_batch_norm", dims, None, concrete)[1]["training"] == 0
    assert infer_kind("aten::_native_batch_norm_legit_no_training", dims)[1]["training"] == 0
    _, back = infer_kind("aten::cudnn_batch_norm_backward", [[32, 64, 112, 112]] * 2)
    assert back["fn"] == "backward" and "training" not in back


def test_the_channels_are_checked_and_size_the_footprint() -> None:
    with pytest.raises(GraphError, match="channels"):
        check_op("batchnorm", {"numel": 8, "channels": "sixty-four"})
    with pytest.raises(GraphError, match="channels"):
        check_op("batchnorm", {"numel": 8, "channels": -5})
    # a block per channel in training; an inference one is elementwise (a block per 1,024)
    assert sm_footprint("batchnorm", FEW, 132) == 64
    assert sm_footprint("batchnorm", FEW | {"training": 0}, 132) == 132
    assert sm_footprint("batchnorm", FEW | {"training": 0, "fn": "backward"}, 132) == 64


def test_unknown_channels_and_inference_are_priced_as_filling_the_gpu() -> None:
    spec = load_specs()["H200"]
    full = {"numel": 1 << 24, "channels": 4 * spec.sm_count, "training": 1}
    inference = {"numel": 1 << 24, "channels": 64}  # no training flag: elementwise
    a, b, c = feature_matrix("batchnorm", [{"numel": 1 << 24}, full, inference], spec)
    assert a.tolist() == b.tolist() == c.tolist()
    p = load_profile("H200")
    assert p.predict("batchnorm", FEW | {"training": 0}) == p.predict(
        "batchnorm", MANY | {"training": 0}
    )


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

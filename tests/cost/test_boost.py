"""The residual trees: their inputs, their size rule, their stored form, the shipped file."""

from __future__ import annotations

import gzip
import json
import shutil

import numpy as np
import pandas as pd
import pytest

import opsched.cost.boost as boost
from opsched.cost.boost import fit_trees, tree_features
from opsched.cost.export import fit_profiles
from opsched.cost.fitdata import FIT_FILES
from opsched.cost.specs import load_specs
from opsched.cost.trees import TreeEnsemble
from opsched.datasets import dataset_path
from tests.cost.helpers import as_lists


def test_tree_inputs_carry_the_gpus_specs():
    specs = load_specs()
    x = np.ones((2, 4))
    f = tree_features(x, np.array(["T4", "H100-SXM5"]), np.array(["half", "half"]),
                      np.array(["events", "events"]), specs)  # fmt: skip
    assert f.shape == (2, 8)
    t4, h100 = specs["T4"], specs["H100-SXM5"]
    assert f[0, -3:] == pytest.approx([np.log(t4.sm_count), np.log(t4.mem_bw_gbps),
                                       np.log(t4.peak_tflops("float32"))])  # fmt: skip
    assert f[1, -3] == pytest.approx(np.log(h100.sm_count))
    with pytest.raises(KeyError, match="no specs"):
        tree_features(x[:1], np.array(["nope"]), np.array(["fp32"]), np.array(["kernel"]), specs)


def test_tree_size_follows_the_training_rows(monkeypatch):
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (300, 3))
    y = np.where(x[:, 0] > 0.5, 0.4, -0.2) + rng.normal(0, 0.01, 300)
    small = fit_trees(x, y)
    assert small.n_trees == boost.SMALL_TREE_PARAMS["max_iter"]
    monkeypatch.setattr(boost, "LARGE_TREE_ROWS", 300)
    large = fit_trees(x, y)
    assert large.n_trees == boost.TREE_PARAMS["max_iter"]
    # a median fit of a step: both sides recovered
    assert large.predict(np.array([[0.9, 0.5, 0.5], [0.1, 0.5, 0.5]])) == pytest.approx(
        [0.4, -0.2], abs=0.03
    )


def test_stored_trees_predict_what_the_fitted_ones_do():
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, (500, 4))
    x[::17, 2] = np.nan
    y = np.sin(5 * x[:, 0]) + np.nan_to_num(x[:, 2])
    ens = fit_trees(x, y)
    doc = json.loads(json.dumps(ens.to_dict()))
    # every node array is stored as the base64 of its bytes (format 2)
    assert all(set(v) == {"dtype", "b64"} for k, v in doc.items() if k != "baseline")
    back = TreeEnsemble.from_dict(doc)
    inner = ~ens.leaf
    # only what predict reads is stored: leaves keep no threshold, inner nodes no value
    assert (back.value[inner] == 0).all() and (back.threshold[~inner] == 0).all()
    assert (back.value[~inner] == ens.value[~inner]).all()
    assert (back.threshold[inner] == ens.threshold[inner]).all()
    assert np.array_equal(back.predict(x), ens.predict(x))
    # the lists of format 1 read back to the same trees
    listed = TreeEnsemble.from_dict(as_lists(doc))
    assert np.array_equal(listed.predict(x), ens.predict(x))


def test_cost_fit_writes_the_same_bytes_twice(tmp_path):
    # a small copy of the tables: the first rows of each, the full spec table
    src = dataset_path("kernel-timings")
    root = tmp_path / "data"
    root.mkdir()
    shutil.copy(src / "gpu_specs.csv", root / "gpu_specs.csv")
    for name in FIT_FILES:
        pd.read_csv(src / name).head(1500).to_csv(root / name, index=False)
    a, b = tmp_path / "a", tmp_path / "b"
    written = fit_profiles(root, a)
    fit_profiles(root, b)
    names = sorted(p.name for p in written)
    assert "trees.json.gz" in names and "T4.json" in names
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    doc = json.loads(gzip.decompress((a / "trees.json.gz").read_bytes()))
    assert doc["format"] == "opsched-cost-trees/2" and doc["families"]


def test_prediction_in_blocks_matches_one_pass(monkeypatch):
    import opsched.cost.trees as trees

    rng = np.random.default_rng(2)
    x = rng.uniform(0, 1, (1000, 3))
    ens = fit_trees(x, x[:, 0] * 2 - x[:, 1])
    whole = ens.predict(x)
    monkeypatch.setattr(trees, "PREDICT_BLOCK", 64)
    assert np.array_equal(ens.predict(x), whole)


def test_trees_files_read_gzipped_or_plain_and_reject_anything_else():
    from opsched.cost.trees import TREES_FORMAT, read_trees
    from opsched.errors import InputError

    ens = fit_trees(np.arange(300.0)[:, None], np.arange(300.0) / 300)
    doc = json.dumps({"format": TREES_FORMAT, "families": {"matmul": ens.to_dict()}}).encode()
    x = np.array([[10.0], [250.0]])
    for raw in (doc, gzip.compress(doc)):
        assert np.array_equal(read_trees(raw, "t")["matmul"].predict(x), ens.predict(x))
    with pytest.raises(InputError, match=r"t\.json: not an opsched-cost-trees/2 document"):
        read_trees(b'{"format": "other"}', "t.json")
    # a file of format 1 (node arrays as JSON lists) still reads
    old = {"format": "opsched-cost-trees/1", "families": {"matmul": as_lists(ens.to_dict())}}
    got = read_trees(json.dumps(old).encode(), "t")["matmul"]
    assert np.array_equal(got.predict(x), ens.predict(x))
    # a damaged binary array is named, never read as other numbers
    for field, bad in (("b64", "not base64!"), ("b64", "AAA="), ("dtype", "<f2")):
        fam = ens.to_dict()
        fam["left"] = fam["left"] | {field: bad}
        raw = json.dumps({"format": TREES_FORMAT, "families": {"matmul": fam}}).encode()
        with pytest.raises(InputError, match=r"t\.json: families\['matmul'\]: malformed tree"):
            read_trees(raw, "t.json")
    with pytest.raises(InputError, match="unreadable trees file"):
        read_trees(b"\x1f\x8b not gzip", "t.json.gz")

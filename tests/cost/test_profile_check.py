"""Malformed profiles and spec tables fail on loading, with one line naming the field."""

from __future__ import annotations

import copy
import gzip
import json
import math
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.cost.profile import TREES_FILE, Profile, _load
from opsched.cost.profile_check import check_profile
from opsched.cost.specs import _load_specs, known_gpus, load_specs, profiles_dir, profiles_from
from opsched.cost.trees import read_trees
from opsched.errors import InputError
from tests.cost.helpers import as_lists, shipped_doc

OPS = (("matmul", {"M": 64, "N": 64, "K": 64, "dtype": "float16"}),
       ("conv2d", {"N": 1, "C": 16, "H": 7, "W": 7, "K": 16, "R": 3, "S": 3}),
       ("elementwise", {"numel": 4096}),
       ("attention", {"B": 8, "Sq": 128, "Skv": 128, "D": 64, "dtype": "bfloat16"}))  # fmt: skip


def _set(doc: dict, path: tuple, value: Any) -> dict:
    out = copy.deepcopy(doc)
    node = out
    for k in path[:-1]:
        node = node[k]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


_DELETE = object()
BAD = [
    (("spec",), _DELETE, "spec must be an object"),
    (("spec", "sm_count"), 0, "'sm_count' must be a positive integer, got 0"),
    (("spec", "sm_count"), True, "'sm_count' must be a positive integer, got True"),
    (("spec", "mem_bw_gbps"), math.nan, "'mem_bw_gbps' must be a positive number, got nan"),
    (("spec", "peaks", "fp32"), _DELETE, "'peaks' must map classes to TFLOPS, fp32 among them"),
    (("spec", "peaks", "fp16"), "65", "peak 'fp16' must be a positive number, got '65'"),
    (("spec", "name"), None, "spec 'name' must be a string, got None"),
    (("gpu",), 4, "'gpu' must be a string"),
    (("curves",), [], "'curves' must be an object"),
    (("curves", "matmull"), {}, "unknown op family 'matmull'"),
    (("curves", "matmul", "fp64"), {}, "curves['matmul']['fp64']: unknown dtype class"),
    (("curves", "matmul", "half", "beta"), [1.0], "'beta' must hold 14 numbers, got 1"),
    (("curves", "matmul", "half", "beta"), None, "'beta' must hold 14 numbers, got None"),
    (("curves", "matmul", "half", "beta", 3), math.inf, "'beta' must hold finite numbers"),
    (("curves", "matmul", "half", "beta", 3), "0.1", "'beta' must hold finite numbers"),
    (("curves", "matmul", "half", "overheads", "events"), -1.0, "'overheads' must map timing"),
    (("curves", "matmul", "half", "overheads"), [3.0], "'overheads' must map timing"),
    (("kernel_floor",), {"us": "1"}, "kernel_floor must be an object with a non-negative 'us'"),
    (("kernel_floor", "us"), -0.5, "kernel_floor must be an object with a non-negative 'us'"),
    (("family_floors",), "7", "'family_floors' must be an object"),
    (("family_floors", "conv2d"), {}, "family_floors['conv2d'] must be an object with a"),
    (("format",), "opsched-cost-profile/2", "not an opsched-cost-profile/1 document"),
]  # fmt: skip


def test_every_shipped_profile_and_the_spec_table_pass():
    for gpu in known_gpus():
        assert check_profile(shipped_doc(gpu), gpu).key == gpu
    assert set(load_specs()) == set(known_gpus())


@pytest.mark.parametrize(("path", "value", "message"), BAD, ids=[str(b[0]) for b in BAD])
def test_malformed_profile_named_field(path: tuple, value: Any, message: str) -> None:
    doc = _set(shipped_doc("T4"), path, value)
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("(", r"\(")):
        check_profile(doc, "T4.json")
    with pytest.raises(InputError):  # a Profile made from a document checks it too
        Profile(doc, trees={})


def test_siblings_checked_like_curves():
    doc = shipped_doc("A100-PCIe-80GB")
    sib = doc["curves"]["matmul"]["fp32"]["siblings"]
    kind = next(iter(sib))
    bad = _set(doc, ("curves", "matmul", "fp32", "siblings", kind, "gpu"), None)
    with pytest.raises(InputError, match=rf"siblings\['{kind}'\] 'gpu' must be a string"):
        check_profile(bad, "x")
    bad = _set(doc, ("curves", "matmul", "fp32", "siblings", kind, "beta"), [0.0] * 13)
    with pytest.raises(InputError, match="must hold 14 numbers, got 13"):
        check_profile(bad, "x")


def _folder(tmp_path: Path) -> Path:
    out = tmp_path / "profiles"
    shutil.copytree(profiles_dir(), out)
    return out


def test_cli_names_the_file_and_writes_nothing(tmp_path: Path, monkeypatch) -> None:
    folder = _folder(tmp_path)
    doc = _set(shipped_doc("T4"), ("family_floors", "conv2d"), {"usx": 3})
    (folder / "T4.json").write_text(json.dumps(doc))
    graph = tmp_path / "g.json"
    r = CliRunner().invoke(main, ["zoo", "export", "squeezenet1_1", "-o", str(graph)])
    assert r.exit_code == 0, r.output
    monkeypatch.setenv("OPSCHED_PROFILES", str(folder))
    out = tmp_path / "out.json"
    r = CliRunner().invoke(main, ["cost", "apply", str(graph), "--gpu", "T4", "-o", str(out)])
    assert r.exit_code == 2 and not out.exists()
    assert r.output.strip().splitlines() == [
        f"opsched: error: {folder / 'T4.json'}: family_floors['conv2d'] must be an object "
        "with a non-negative 'us'"
    ]


def test_malformed_spec_table(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    doc = json.loads((folder / "gpus.json").read_text())
    doc["gpus"][2]["peaks"] = {"fp32": 1.0, "fp16": -1}
    (folder / "gpus.json").write_text(json.dumps(doc))
    with profiles_from(folder), pytest.raises(InputError, match=r"gpus\[2\]: spec peak 'fp16'"):
        load_specs()
    (folder / "gpus.json").write_text(json.dumps({"gpu": []}))
    with profiles_from(folder), pytest.raises(InputError, match="no 'gpus' list"):
        load_specs()
    _load_specs.cache_clear()


JUNK = (None, "x", -1, -1.5, math.nan, math.inf, [], {}, True, 0, [1.0, 2.0], {"us": 1})


def _leaves(node: Any, path: tuple = ()) -> list[tuple]:
    out = [path] if path else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _leaves(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:3]):
            out += _leaves(v, (*path, i))
    return out


@pytest.mark.filterwarnings("ignore:cost model. no calibration")  # a curve deleted: roofline
def test_random_corruptions_load_and_price_or_fail_cleanly():
    # any one field replaced by junk: either a clean InputError on loading, or a profile whose
    # prices are finite and non-negative (never an exception deep inside a prediction)
    rng = random.Random(0)
    doc = shipped_doc("A100-SXM4-80GB")
    paths = _leaves(doc)
    refused = 0
    for _ in range(400):
        path = rng.choice(paths)
        bad = _set(doc, path, rng.choice((*JUNK, _DELETE)))
        try:
            p = Profile(bad, trees={})
        except InputError:
            refused += 1
            continue
        for kind, attrs in OPS:
            t = p.predict(kind, attrs)
            assert math.isfinite(t) and t >= 0, (path, kind, t)
    assert 100 < refused < 400  # both outcomes occur (e.g. a curve's 'rows' is not used)


def _trees_doc() -> dict:
    """The shipped trees, their node arrays as lists (format 1) so a test can edit them."""
    raw = (Path(profiles_dir()) / TREES_FILE).read_bytes()
    doc = json.loads(gzip.decompress(raw))
    return doc | {"families": {f: as_lists(e) for f, e in doc["families"].items()}}


def test_malformed_trees_named(tmp_path: Path) -> None:
    doc = _trees_doc()
    with pytest.raises(InputError, match="without a 'families' object"):
        read_trees(json.dumps({"format": doc["format"]}).encode(), "t.json")
    bad = copy.deepcopy(doc)
    bad["families"]["matmul"]["left"] = bad["families"]["matmul"]["left"][:-1]
    with pytest.raises(InputError, match=r"t.json: families\['matmul'\]: malformed tree"):
        read_trees(json.dumps(bad).encode(), "t.json")
    # a split on a column the family's tree inputs do not have fails on loading, not on pricing
    bad = copy.deepcopy(doc)
    ens = bad["families"]["matmul"]
    node = next(i for i, leaf in enumerate(ens["leaf"]) if not leaf)
    ens["feature"][node] = 40
    trees = read_trees(json.dumps(bad).encode(), "t.json")
    with pytest.raises(InputError, match=r"trees\['matmul'\] split on a column outside its 18"):
        Profile(shipped_doc("T4"), trees)
    folder = _folder(tmp_path)
    (folder / TREES_FILE).write_bytes(gzip.compress(json.dumps(bad).encode()))
    with profiles_from(folder), pytest.raises(InputError, match="outside its 18 inputs"):
        _load("T4", str(folder))

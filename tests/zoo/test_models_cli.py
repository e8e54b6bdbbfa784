"""``opsched zoo list`` and ``opsched zoo export`` through click's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.heuristics import greedy
from opsched.importers import read_graph
from opsched.problem import Machine, Problem
from opsched.validate import validate
from opsched.zoo.models import MODELS, build


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_list_shows_every_model_with_its_counts() -> None:
    code, out, _ = run("zoo", "list", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert list(rows) == list(MODELS)
    assert rows["resnet50"]["ops"] == 176 and rows["resnet50"]["params"] == 25_557_032
    assert rows["nasnet_a_mobile"]["params"] == 5_289_978
    assert rows["squeezenet1_1"]["gflops"] == pytest.approx(0.704, abs=0.001)
    code, out, _ = run("zoo", "list")
    assert code == 0
    assert "resnet50" in out and "25,557,032" in out and len(out.splitlines()) == 1 + len(MODELS)


def test_export_writes_the_built_graph(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code, text, _ = run("zoo", "export", "resnet50", "--batch", "2", "-o", str(out))
    assert code == 0 and text.startswith(f"wrote {out}: resnet50: 176 ops")
    g = read_graph(out)
    assert g.to_dict() == build("resnet50", batch=2).to_dict()
    assert g["layer4.2.relu"].attrs["out_shape"] == [2, 2048, 7, 7]
    p = Problem(g, Machine(units=2))
    assert validate(p, greedy(p)).valid


def test_export_seed_and_dtype(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert (
        run("zoo", "export", "randwire", "--seed", "4", "--dtype", "float16", "-o", str(a))[0] == 0
    )
    code, text, _ = run("zoo", "export", "randwire", "--seed", "4", "-o", str(b), "--json")
    assert code == 0 and json.loads(text)["ops"] == read_graph(b).num_ops
    ga, gb = read_graph(a), read_graph(b)
    assert ga.attrs["stages"] == gb.attrs["stages"] == build("randwire", seed=4).attrs["stages"]
    assert ga.persistent_bytes * 2 == gb.persistent_bytes


def test_export_refuses_a_negative_seed(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code, text, err = run("zoo", "export", "randwire", "--seed", "-4", "-o", str(out))
    assert code == 2 and not out.exists() and text == ""
    assert "--seed" in err and "-4" in err and "Traceback" not in err


def test_export_refuses_a_seed_for_a_network_that_draws_none(tmp_path: Path) -> None:
    # only randwire is random: --seed on the others had been ignored in silence
    out = tmp_path / "r.json"
    code, text, err = run("zoo", "export", "resnet50", "--seed", "3", "-o", str(out))
    assert code == 2 and not out.exists() and text == ""
    assert err.strip() == (
        "opsched: error: --seed: resnet50 is not random (only randwire takes a seed)"
    )


def test_export_fused_pieces(tmp_path: Path) -> None:
    from opsched.transforms import extract
    from opsched.transforms.fusion import fuse

    out = tmp_path / "cells.json"
    code, text, _ = run(
        "zoo", "export", "nasnet_a_mobile", "--fuse", "--piece", "cell_1", "--piece", "cell_2",
        "-o", str(out), "--json",
    )  # fmt: skip
    assert code == 0
    info = json.loads(text)
    g = read_graph(out)
    want = extract(fuse(build("nasnet_a_mobile"))[0], ["cell_1", "cell_2"])
    assert g.to_dict() == want.to_dict()
    assert info["ops"] == g.num_ops == 72 and info["params"] is None
    # cell_1 reads the two cells before it; cell_2 reads cell_1 (inside) and cell_0
    assert sum(op.kind == "input" for op in g.ops) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["vgg16"], "unknown model 'vgg16'; known: inception_v3, randwire"),
        (["nasnet_a_mobile", "--piece", "cell_99"], "no op matches 'cell_99'"),
        (["unet", "--dtype", "float13"], "unknown dtype 'float13'"),
        (["unet", "--batch", "0"], "--batch"),
    ],
)
def test_bad_input_exits_2_without_output(tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "g.json"
    code, _, err = run("zoo", "export", *args, "-o", str(out))
    assert code == 2 and message in err and "Traceback" not in err
    assert not out.exists()


def test_export_refuses_a_non_json_target(tmp_path: Path) -> None:
    out = tmp_path / "g.txt"
    code, _, err = run("zoo", "export", "unet", "-o", str(out))
    assert code == 2 and "can only write" in err and not out.exists()


def test_export_with_gpu_uses_the_cost_model(tmp_path: Path) -> None:
    cost = pytest.importorskip("opsched.cost", reason="opsched.cost not built yet")
    if not hasattr(cost, "apply"):
        pytest.skip("opsched.cost.apply not written yet (the cost model issue)")
    out = tmp_path / "g.json"
    code, _, err = run(
        "zoo",
        "export",
        "squeezenet1_1",
        "--gpu",
        "A100-SXM4-80GB",
        "--dtype",
        "float16",
        "-o",
        str(out),
    )
    assert code == 0, err
    g = read_graph(out)
    # every op with a kernel gets a measured-calibrated time; inputs and views cost nothing
    assert g.num_ops == 66
    assert all((op.duration > 0) == (op.kind not in ("input", "view")) for op in g.ops)
    placeholder = build("squeezenet1_1", dtype="float16")
    assert [op.duration for op in g.ops] != [op.duration for op in placeholder.ops]
    p = Problem(g, Machine(units=4))
    assert validate(p, greedy(p)).valid


def test_gpu_without_cost_model_is_a_clean_error(tmp_path: Path, monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "opsched.cost", None)  # import then fails
    out = tmp_path / "g.json"
    code, _, err = run("zoo", "export", "unet", "--gpu", "a100", "-o", str(out))
    assert code == 2 and "cost model" in err and not out.exists()

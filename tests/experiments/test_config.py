"""Experiment files: what parses, and one-line errors naming the file and the key."""

from __future__ import annotations

import pytest

from opsched.errors import InputError
from opsched.experiments.config import load_config, parse_config

BASE = """
[experiment]
name = "t"
[[graphs]]
generate = "layered"
ops = 10
count = 2
seed = 3
[machines]
units = [2, "unlimited"]
memory_cap = [1.0, 0.8, "8GiB", "none", 1]
resources = { R1 = 4 }
[schedulers]
names = ["greedy", "cpsat", "greedy"]
time_limit = 2.5
"""


def test_parses_every_field() -> None:
    cfg = parse_config(BASE, "x.toml")
    assert cfg.name == "t" and cfg.source == "x.toml"
    g = cfg.graphs[0]
    assert (g.kind, g.value, g.ops, g.count, g.seed) == ("generate", "layered", 10, 2, 3)
    assert cfg.machines.units == (2, None)
    # 1 and 1.0 are the same fraction; duplicates are dropped, order kept
    assert cfg.machines.memory_caps == (1.0, 0.8, 8 * 2**30, None)
    assert dict(cfg.machines.resources) == {"R1": 4}
    assert cfg.schedulers.names == ("greedy", "cpsat")
    assert cfg.schedulers.time_limit == 2.5 and cfg.schedulers.num_workers == 1


@pytest.mark.parametrize(
    ("old", "new", "where", "what"),
    [
        ('names = ["greedy", "cpsat", "greedy"]', 'names = ["greedy", "nope"]',
         "schedulers.names[1]", "unknown scheduler 'nope'"),
        ("ops = 10", "ops = 0", "graphs[0].ops", "integer >= 1"),
        # a trillion graphs had filled memory while the runs were listed
        ("count = 2", "count = 999999999999", "graphs[0].count", "at most 1000000"),
        ("ops = 10", "ops = 2199023255553", "graphs[0].ops", "at most 2^40"),
        ('generate = "layered"', 'generate = "tree"', "graphs[0].generate", "'layered' or 'gnp'"),
        ("memory_cap = [1.0, 0.8", "memory_cap = [-0.5, 0.8", "machines.memory_cap[0]",
         "(0, 10]"),
        ('"8GiB"', '"8 parsecs"', "machines.memory_cap[2]", "cannot read size"),
        ('units = [2, "unlimited"]', "units = [0]", "machines.units[0]", "integer >= 1"),
        ("time_limit = 2.5", "time_limit = -1", "schedulers.time_limit", "> 0"),
        ("time_limit = 2.5", "time_limt = 2", "schedulers.time_limt", "unknown key"),
        ("R1 = 4", "R1 = -4", "machines.resources.R1", ">= 0"),
        ('name = "t"', "", "experiment.name", "non-empty string"),
        ("seed = 3", 'zoo = "resnet"', "graphs[0]", "exactly one of"),
        # not a string: the lookup among the objectives had raised TypeError (unhashable)
        ("time_limit = 2.5", 'objective = ["makespan"]', "schedulers.objective",
         "unknown objective ['makespan']"),
        ("time_limit = 2.5", "objective = { a = 1 }", "schedulers.objective",
         "unknown objective"),
        # "units" is the machine's own count; the error had said "must be an integer >= 0,
        # got 4" of a value that is one
        ("R1 = 4", "units = 4", "machines.resources.units", "reserved; set machines.units"),
        # values the machine refuses: every job had been run and stored as an ERROR
        ("R1 = 4", "R1 = 9223372036854775807", "machines.resources.R1", "at most 2^62"),
        ("R1 = 4", '"" = 4', "machines.resources", "name must not be empty"),
    ],
)  # fmt: skip
def test_errors_name_file_and_key(old: str, new: str, where: str, what: str) -> None:
    assert old in BASE
    with pytest.raises(InputError) as e:
        parse_config(BASE.replace(old, new), "exp.toml")
    msg = str(e.value)
    assert msg.startswith(f"exp.toml: {where}: "), msg
    assert what in msg and "\n" not in msg


def test_bad_toml_and_missing_tables(tmp_path) -> None:
    with pytest.raises(InputError, match=r"^exp.toml: not valid TOML: .*line 1"):
        parse_config("[experiment\nname=1", "exp.toml")
    with pytest.raises(InputError, match=r"^e: graphs: need at least one"):
        parse_config('[experiment]\nname="a"\n[machines]\n[schedulers]\nnames=["greedy"]', "e")
    with pytest.raises(InputError, match="no such file"):
        load_config(tmp_path / "missing.toml")
    f = tmp_path / "ok.toml"
    f.write_text(BASE)
    assert load_config(f).source == str(f)


def test_a_fraction_and_a_byte_size_of_equal_value_are_two_caps() -> None:
    text = BASE.replace('memory_cap = [1.0, 0.8, "8GiB", "none", 1]',
                        'memory_cap = [1.0, "1", 2, "2B", 2.0, "2"]')  # fmt: skip
    cfg = parse_config(text, "x.toml")
    caps = cfg.machines.memory_caps
    # 1.0 and 2 (= 2.0) are fractions of the peak; "1", "2B" and "2" are sizes in bytes
    assert caps == (1.0, 1, 2.0, 2)
    assert [type(c) for c in caps] == [float, int, float, int]

"""Job expansion: counts, stable ids, memory caps, known optima from the tables."""

from __future__ import annotations

import pytest

from opsched.errors import InputError
from opsched.experiments.config import parse_config
from opsched.experiments.jobs import expand_jobs, load_graphs

TOML = """
[experiment]
name = "{name}"
[[graphs]]
dataset = "stg/50/rand000[01].stg"
[[graphs]]
dataset = "psplib/j30/j301_1.sm"
[[graphs]]
generate = "gnp"
ops = 6
count = 2
p = 0.3
[machines]
units = {units}
memory_cap = {caps}
[schedulers]
names = {names}
time_limit = 3
"""


def _cfg(name="e", units="[2, 4]", caps='["none"]', names='["greedy", "cpsat"]'):
    return parse_config(TOML.format(name=name, units=units, caps=caps, names=names), "e.toml")


def test_product_and_instances() -> None:
    cfg = _cfg()
    graphs = load_graphs(cfg)
    assert [g.name for g in graphs] == [
        "rand0000", "rand0001", "j301_1", "gnp-6-p0.3-s0", "gnp-6-p0.3-s1"]  # fmt: skip
    jobs = expand_jobs(cfg, graphs)
    assert len(jobs) == 5 * 2 * 2  # graphs x units x schedulers
    assert len({j.job_id for j in jobs}) == 20
    assert len({j.instance_id for j in jobs}) == 10
    assert {j.exact for j in jobs if j.scheduler == "cpsat"} == {True}
    assert {j.exact for j in jobs if j.scheduler == "greedy"} == {False}


def test_ids_are_stable_and_order_free() -> None:
    a = {j.job_id for j in expand_jobs(_cfg(), load_graphs(_cfg()))}
    c2 = _cfg(units="[4, 2]", names='["cpsat", "greedy"]')
    assert {j.job_id for j in expand_jobs(c2, load_graphs(c2))} == a
    c3 = _cfg(name="other")  # another experiment: other jobs, same instances
    j3 = expand_jobs(c3, load_graphs(c3))
    assert not a & {j.job_id for j in j3}
    c4 = _cfg(caps="[0.5]")
    assert not a & {j.job_id for j in expand_jobs(c4, load_graphs(c4))}


def test_known_optima_attached_only_where_they_apply() -> None:
    cfg = _cfg(units='[4, "unlimited"]', caps='["none", 0.9]')
    jobs = expand_jobs(cfg, load_graphs(cfg))
    known = {(j.graph, j.units, j.cap_fraction): (j.known_lb, j.known_ub) for j in jobs}
    # the published STG 50 table: rand0000 on 4 processors is 66 (README)
    assert known[("rand0000", 4, None)] == (66, 66)
    assert known[("rand0000", 4, 0.9)] == (None, None)  # a memory cap: the table does not apply
    assert known[("rand0000", None, None)] == (None, None)  # no table for unlimited units
    assert known[("j301_1", None, None)] == (43, 43)  # PSPLIB j301_1: optimum 43
    assert known[("j301_1", 4, None)] == (None, None)
    assert known[("gnp-6-p0.3-s0", 4, None)] == (None, None)


def test_empty_glob_names_the_key(tmp_path) -> None:
    cfg = parse_config(
        '[experiment]\nname="a"\n[[graphs]]\nfiles="nothing/*.stg"\n[machines]\n'
        '[schedulers]\nnames=["greedy"]',
        "e.toml",
    )
    with pytest.raises(InputError, match=r"^e.toml: graphs\[0\].files: no file matches"):
        load_graphs(cfg, tmp_path)
    bad = tmp_path / "bad.stg"
    bad.write_text("3\n0 0 0\n")
    cfg2 = parse_config(
        '[experiment]\nname="a"\n[[graphs]]\nfiles="*.stg"\n[machines]\n'
        '[schedulers]\nnames=["greedy"]',
        "e.toml",
    )
    with pytest.raises(InputError, match=r"^e.toml: graphs\[0\]: .*bad.stg"):
        load_graphs(cfg2, tmp_path)


def test_a_graph_listed_twice_is_left_out_once() -> None:
    one = '[[graphs]]\ngenerate = "gnp"\nops = 6\nseed = 1\n'
    rest = '[machines]\nunits = [2]\n[schedulers]\nnames = ["greedy", "downsets"]\n'
    cfg = parse_config('[experiment]\nname = "twice"\n' + one + one + rest)
    left: dict[tuple[str, str], int] = {}
    jobs = expand_jobs(cfg, load_graphs(cfg), left)
    assert [j.scheduler for j in jobs] == ["greedy"]
    assert left == {("downsets", "no memory cap"): 1}


def test_heuristics_are_left_out_of_an_objective_they_would_ignore() -> None:
    # a heuristic minimises the makespan: its rows under "peak_memory" would read as answers
    text = TOML.format(name="e", units="[2]", caps='["none"]', names='["greedy", "cpsat"]')
    cfg = parse_config(text.replace("time_limit = 3", 'time_limit = 3\nobjective = "peak_memory"'))
    left: dict[tuple[str, str], int] = {}
    jobs = expand_jobs(cfg, load_graphs(cfg), left)
    assert {j.scheduler for j in jobs} == {"cpsat"} and len(jobs) == 5
    assert left == {("greedy", "objective peak_memory (it minimises the makespan)"): 5}

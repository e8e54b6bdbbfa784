"""Echoing a schedule or a front in a notebook prints a line, not every op."""

from __future__ import annotations

from opsched.heuristics import greedy
from opsched.problem import Machine, Problem
from opsched.zoo.generators import layered


def test_schedule_repr_is_one_line_whatever_the_graph_size() -> None:
    g = layered(2000, seed=0)
    s = greedy(Problem(g, Machine(units=4)))
    text = repr(s)
    assert "\n" not in text and len(text) < 200, text
    assert text.startswith("<Schedule ") and text.endswith("; 2000 ops>")
    assert f"makespan {s.makespan:g}" in text


def test_reports_echo_one_line_and_a_missing_schedule_is_not_checked() -> None:
    import opsched
    from opsched.ir import Op, OpGraph
    from opsched.schedule import Schedule

    g = layered(300, seed=1)
    p = Problem(g, Machine(units=2))
    jammed = Schedule.build(p, [0.0] * g.num_ops, solver="hand")  # everything at t = 0
    rep = opsched.validate(p, jammed)
    text = repr(rep)
    assert not rep.valid and len(rep.violations) > 100
    assert "\n" not in text and len(text) < 400, text
    assert text.startswith(f"<ValidationReport invalid: {len(rep.violations)} violation(s) (")
    good = opsched.validate(p, greedy(p))
    assert repr(good) == (f"<ValidationReport valid: makespan {good.makespan:g}, "
                          f"peak memory {good.peak_memory} B>")  # fmt: skip
    assert good.checked and good.to_dict()["checked"] is True
    # a dead end: nothing to check, so valid (nothing broken) but not checked
    tight = Problem(OpGraph((Op("a", 1, output_bytes=8),)), Machine(memory_cap=4))
    none = opsched.validate(tight, greedy(tight))
    assert none.valid and not none.checked
    assert repr(none) == "<ValidationReport: no schedule to check>"
    sim = repr(opsched.simulate(p, greedy(p)))
    assert "\n" not in sim and sim.startswith("<SimulationReport makespan ") and len(sim) < 200


def test_noise_stats_and_hetero_schedules_echo_one_line() -> None:
    from opsched.dynamic.noise import Lognormal
    from opsched.dynamic.robust import expected_makespan
    from opsched.hetero import HeteroMachine, HeteroProblem, heft

    p = Problem(layered(40, seed=2), Machine(units=2))
    stats = expected_makespan(p, "greedy", Lognormal(0.2), runs=500)
    text = repr(stats)
    assert text == f"<NoiseStats {stats.summary()}>" and len(text) < 200
    hp = HeteroProblem(layered(2000, seed=3), HeteroMachine.parse("gpu:2,cpu:1"))
    hs = heft(hp)
    assert repr(hs) == f"<HeteroSchedule {hs.summary()}>" and len(repr(hs)) < 300


def test_notebook_tables_escape_names_and_count_the_rows_left_out() -> None:
    # an op named "<script>" read from a graph file had gone into the notebook's HTML as is
    from opsched.hetero import HeteroMachine, HeteroProblem, heft
    from opsched.ir import Op, OpGraph

    evil = "<script>alert(1)</script>"
    ops = (Op(evil, 1), Op("b&c", 1, deps=(evil,)), *(Op(f"x{i}", 1) for i in range(60)))
    g = OpGraph(ops, name="<g>")
    s = greedy(Problem(g, Machine(units=2)))
    hs = heft(HeteroProblem(g, HeteroMachine.parse("gpu:1")))
    for page in (s._repr_html_(), hs._repr_html_()):
        assert "<script" not in page and "<g>" not in page
        assert "<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>" in page
        assert "<td>b&amp;c</td>" in page and "on &lt;g&gt;:" in page
        assert page.count("<tr>") == 1 + 50 and page.endswith("<p>... 12 more ops</p>")

"""The seed document's demos: the scheduling loop and critical-path optimisation.

* :func:`seed_demo`: the seed's seven-op graph (Input, Conv1, BN, Conv2, ReLU, Add, Output,
  unit durations): Kahn's topological order, serial time 7, critical path 6 and the greedy
  ready-set schedule, 6.
* :func:`critical_path_demo`: a five-op program A..E. Run in program order, as a chain, its
  critical path is 5; its true read-after-write dependencies are A -> {B, C}, B -> D, C -> E,
  critical path 3: B runs beside C and D beside E, 40 % shorter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opsched.analysis.paths import critical_path
from opsched.analysis.topo import topological_order
from opsched.heuristics.greedy import greedy, serial
from opsched.ir.graph import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.transforms.deps import dependency_edges, program_order_chain

__all__ = [
    "branches_graph",
    "critical_path_demo",
    "critical_path_program",
    "seed_demo",
    "seed_graph",
    "seed_problem",
]

_SEED = [
    ("Input", [], "input"),
    ("Conv1", ["Input"], "conv2d"),
    ("BN", ["Conv1"], "batchnorm"),
    ("Conv2", ["Conv1"], "conv2d"),
    ("ReLU", ["Conv2"], "relu"),
    ("Add", ["BN", "ReLU"], "add"),
    ("Output", ["Add"], "output"),
]


def seed_graph(durations: Sequence[float] | None = None) -> OpGraph:
    """The seed document's example graph (unit durations unless ``durations`` is given).

    >>> g = seed_graph()
    >>> g.num_ops, g.num_edges, g.work
    (7, 7, 7.0)
    """
    durs = list(durations) if durations is not None else [1.0] * len(_SEED)
    ops = tuple(
        Op(name, d, deps=tuple(deps), kind=kind, output=(name == "Output"))
        for (name, deps, kind), d in zip(_SEED, durs, strict=True)
    )
    return OpGraph(ops, name="seed-demo")


def seed_problem(units: int | None = None, durations: Sequence[float] | None = None) -> Problem:
    """The seed graph on ``units`` compute units (unlimited by default, as in the seed)."""
    return Problem(seed_graph(durations), Machine(units=units))


def seed_demo(units: int | None = None) -> dict[str, Any]:
    """Reproduce the seed's printout: topological order, serial time, critical path, greedy.

    Examples
    --------
    >>> r = seed_demo()
    >>> " -> ".join(r["order"]), r["serial"], r["critical_path"], r["greedy"]
    ('Input -> Conv1 -> BN -> Conv2 -> ReLU -> Add -> Output', 7.0, 6.0, 6.0)
    """
    p = seed_problem(units)
    g = p.graph
    sched = greedy(p)
    return {
        "order": topological_order(g),
        "serial": serial(p).makespan,
        "critical_path": critical_path(g).length,
        "critical_path_ops": critical_path(g).ops,
        "greedy": sched.makespan,
        "units": units,
        "schedule": sched,
    }


def critical_path_program() -> OpGraph:
    """Five ops in program form: ``a = A(); b = B(a); c = C(a); d = D(b); e = E(c)``."""
    prog = [
        ("A", [], ["a"]),
        ("B", ["a"], ["b"]),
        ("C", ["a"], ["c"]),
        ("D", ["b"], ["d"]),
        ("E", ["c"], ["e"]),
    ]
    ops = tuple(
        Op(n, 1, reads=tuple(r), writes=tuple(w), output=n in ("D", "E")) for n, r, w in prog
    )
    return OpGraph(ops, name="critical-path-demo")


def critical_path_demo(units: int | None = None) -> dict[str, Any]:
    """Critical path before (program-order chain) and after (true RAW dependencies).

    Examples
    --------
    >>> r = critical_path_demo()
    >>> r["before"], r["after"], r["speedup_percent"], r["edges"]
    (5.0, 3.0, 40.0, ['A -> B', 'A -> C', 'B -> D', 'C -> E'])
    """
    program = critical_path_program()
    chain = program_order_chain(program)
    derived, edges = dependency_edges(program)
    before = critical_path(chain)
    after = critical_path(derived)
    sched_before = greedy(Problem(chain, Machine(units=units)))
    sched_after = greedy(Problem(derived, Machine(units=units)))
    return {
        "before": before.length,
        "after": after.length,
        "speedup_percent": round(100.0 * (before.length - after.length) / before.length, 6),
        "edges": [f"{e.src} -> {e.dst}" for e in edges],
        "edge_kinds": [e.kind for e in edges],
        "before_path": before.ops,
        "after_path": after.ops,
        "schedule_before": sched_before,
        "schedule_after": sched_after,
    }


def branches_graph() -> OpGraph:
    """Two branches that meet: the smallest graph where the order decides the peak memory.

    ``a1`` and ``b1`` each write 10 B, ``a2`` and ``b2`` turn them into 1 B, ``c`` joins.
    Breadth first (a1, b1, a2, b2, c) holds both 10 B tensors at once: peak 21 B on one
    unit. Depth first (a1, a2, b1, b2, c) never does: 12 B, the least possible.

    >>> from opsched.problem import Machine, Problem
    >>> from opsched.heuristics import greedy
    >>> greedy(Problem(branches_graph(), Machine(units=1))).peak_memory
    21
    """
    return OpGraph(
        (
            Op("a1", 1, output_bytes=10),
            Op("b1", 1, output_bytes=10),
            Op("a2", 1, deps=("a1",), output_bytes=1),
            Op("b2", 1, deps=("b1",), output_bytes=1),
            Op("c", 1, deps=("a2", "b2")),
        ),
        name="two-branches",
    )

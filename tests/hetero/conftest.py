"""Helpers of the heterogeneous tests: a solver-independent brute force and tiny instances.

:func:`brute_force_makespan` enumerates every placement (op -> device instance) x every
global order in which the ops start, each op starting as early as its inputs (plus transfers
between device types, recomputed here from the machine's links) and its instance allow; a
zero-duration op occupies nothing and starts when its inputs are ready. Every semi-active
schedule is reached this way (order the ops by start time), so the least makespan found is
the optimum. It shares no code with opsched's solvers, heuristics or validator.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest

from opsched.hetero.model import HeteroMachine, HeteroProblem
from opsched.ir import Op, OpGraph


def brute_force_makespan(problem: HeteroProblem) -> float:
    g = problem.graph
    n = g.num_ops
    m = problem.machine
    inst = [(d.name, j) for d in m.devices for j in range(d.count)]
    dur: list[dict[str, float]] = []
    for op in g.ops:
        given = op.attrs.get("durations")
        dur.append(dict(given) if given is not None else {t: op.duration for t, _ in inst})
    preds = [[g.index(d) for d in op.deps] for op in g.ops]

    def delay(u: int, a: str, b: str) -> float:
        return 0.0 if a == b else m.link_between(a, b).cost(g.ops[u].output_bytes)

    best = [math.inf]
    start = [0.0] * n
    end = [0.0] * n
    dev = [""] * n
    done = [False] * n
    free = [0.0] * len(inst)

    def rec(placed: int, span: float) -> None:
        if span >= best[0]:
            return
        if placed == n:
            best[0] = span
            return
        for i in range(n):
            if done[i] or not all(done[u] for u in preds[i]):
                continue
            for q, (t, _) in enumerate(inst):
                if t not in dur[i]:
                    continue
                d = float(dur[i][t])
                ready = max((end[u] + delay(u, dev[u], t) for u in preds[i]), default=0.0)
                s = ready if d == 0 else max(ready, free[q])
                old = free[q]
                start[i], end[i], dev[i], done[i] = s, s + d, t, True
                if d > 0:
                    free[q] = s + d
                rec(placed + 1, max(span, s + d))
                free[q] = old
                done[i] = False

    rec(0, 0.0)
    return best[0]


def make_random_problem(seed: int, n: int | None = None, counts: tuple[int, int] = (1, 1),
                        zero_prob: float = 0.0) -> HeteroProblem:  # fmt: skip
    """A random tiny DAG on gpu/cpu with integer durations, some ops on one type only."""
    rng = random.Random(seed)
    n = n if n is not None else rng.randint(3, 6)
    ops = []
    for i in range(n):
        deps = tuple(f"o{j}" for j in range(i) if rng.random() < 0.35)
        durs: dict[str, float] = {}
        r = rng.random()
        if r < 0.8:
            durs["gpu"] = rng.randint(1, 4)
        if r > 0.15:
            durs["cpu"] = rng.randint(1, 6)
        if rng.random() < zero_prob:
            durs = {t: 0 for t in durs}
        ops.append(Op(f"o{i}", 1.0, deps=deps, output_bytes=rng.choice([0, 5, 10, 20]),
                      attrs={"durations": durs}))  # fmt: skip
    g = OpGraph(tuple(ops), name=f"rand{seed}")
    machine = HeteroMachine.parse(f"gpu:{counts[0]},cpu:{counts[1]}", bandwidth=10,
                                  latency=rng.choice([0, 1, 2]))  # fmt: skip
    return HeteroProblem(g, machine)


@pytest.fixture
def brute() -> Callable[[HeteroProblem], float]:
    return brute_force_makespan


@pytest.fixture
def random_problem() -> Callable[..., HeteroProblem]:
    return make_random_problem

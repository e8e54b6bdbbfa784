"""Replaying a placement: per-instance op orders to start times (semi-active schedule).

:func:`execute_placement` starts every op as early as its inputs (with transfers between
device types) and the previous op on its instance allow. This is how a runtime replays a
static heterogeneous schedule, and lets the same placement be re-timed with other durations
(measured, noisy, or in CP-SAT's integer ticks). :func:`replay` does it for a schedule.

Examples
--------
>>> from opsched.ir import Op, OpGraph
>>> from opsched.hetero.model import HeteroMachine, HeteroProblem
>>> g = OpGraph((Op("a", 1, output_bytes=100), Op("b", 2, deps=("a",)), Op("c", 2)))
>>> p = HeteroProblem(g, HeteroMachine.parse("gpu:1,cpu:1", bandwidth=50, latency=1))
>>> execute_placement(p, [0, 1, 0], [[2, 0], [1]]).tolist()
[2.0, 6.0, 0.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from opsched.errors import ScheduleFormatError
from opsched.hetero.model import HeteroProblem
from opsched.hetero.schedule import HeteroSchedule

__all__ = ["execute_placement", "placement_orders", "replay"]


def execute_placement(
    problem: HeteroProblem,
    instances: Sequence[int],
    orders: Sequence[Sequence[int]],
    durations: np.ndarray | None = None,
    transfer: Callable[[int, int, int], float] | None = None,
) -> np.ndarray:
    """Earliest start times of ops placed on ``instances`` and run in ``orders``.

    An op that takes no time on its instance occupies nothing there, so it waits only for
    its inputs, and the instance's next op waits only for the one that takes time before it.

    Parameters
    ----------
    problem
        The model (its durations and transfers are the defaults).
    instances
        Global instance index of every op (``problem.instances`` numbering), graph order.
    orders
        For every instance, its ops (indices) in run order; together every op exactly once,
        each on its own instance.
    durations
        Optional ``(ops, types)`` array to use instead of the model's durations.
    transfer
        Optional ``transfer(op, type_from, type_to)`` instead of the model's.

    Returns
    -------
    numpy.ndarray
        Start of every op, graph order.

    Raises
    ------
    ScheduleFormatError
        If the orders do not match the placement or contradict the dependencies (a cycle).
    """
    g = problem.graph
    n = g.num_ops
    dur = problem.durations if durations is None else np.asarray(durations, dtype=np.float64)
    xfer = transfer if transfer is not None else problem.transfer
    itype = problem.instance_type
    prev = [-1] * n
    seen = 0
    for q, seq in enumerate(orders):
        last = -1  # the latest op of this instance that takes time
        for i in seq:
            if instances[i] != q:
                raise ScheduleFormatError(f"op {g.ops[i].name!r} is in the order of instance "
                                          f"{q} but placed on {instances[i]}")  # fmt: skip
            # a zero-duration op occupies no instance (the model's rule): it neither waits
            # for the op before it nor holds back the one after it; chained in, it had waited
            # for a long op it sat beside and delayed its readers (a replay of a valid
            # schedule with its own durations ended later than the schedule)
            if float(dur[i, int(itype[q])]) > 0:
                prev[i] = last
                last = i
            seen += 1
    if seen != n:
        raise ScheduleFormatError(f"the orders hold {seen} ops, the graph {n}")
    nxt = [-1] * n
    for i, p in enumerate(prev):
        if p >= 0:
            nxt[p] = i
    pp, pi = g.pred_ptr.tolist(), g.pred_idx.tolist()
    sp, si = g.succ_ptr.tolist(), g.succ_idx.tolist()
    waiting = [pp[i + 1] - pp[i] + (prev[i] >= 0) for i in range(n)]
    stack = [i for i in range(n) if waiting[i] == 0]
    start = np.zeros(n)
    end = np.zeros(n)
    done = 0
    while stack:
        i = stack.pop()
        k = int(itype[instances[i]])
        t = end[prev[i]] if prev[i] >= 0 else 0.0
        for u in pi[pp[i] : pp[i + 1]]:
            ku = int(itype[instances[u]])
            t = max(t, end[u] + (xfer(u, ku, k) if ku != k else 0.0))
        start[i], end[i] = t, t + float(dur[i, k])
        done += 1
        for j in [*si[sp[i] : sp[i + 1]], nxt[i]]:
            if j >= 0:
                waiting[j] -= 1
                if waiting[j] == 0:
                    stack.append(j)
    if done < n:
        raise ScheduleFormatError("the instance orders contradict the dependencies (a cycle)")
    return start


def placement_orders(
    problem: HeteroProblem, schedule: HeteroSchedule
) -> tuple[list[int], list[list[int]]]:
    """The global instance of every op and every instance's ops by start time.

    Ties are broken by topological position, so a zero-duration op comes before the
    consumers that start when it does.
    """
    from opsched.analysis.topo import topo_indices

    g = problem.graph
    offset: dict[str, int] = {}
    q = 0
    for d in problem.machine.devices:
        offset[d.name] = q
        q += d.count
    pos = np.empty(g.num_ops, dtype=np.int64)
    pos[topo_indices(g)] = np.arange(g.num_ops)
    inst = [0] * g.num_ops
    keyed: list[list[tuple[float, float, int, int]]] = [[] for _ in problem.instances]
    for o in schedule.ops:
        i = g.index(o.name)
        inst[i] = offset[o.device] + o.instance
        keyed[inst[i]].append((o.start, o.end, int(pos[i]), i))
    return inst, [[i for *_, i in sorted(lst)] for lst in keyed]


def replay(
    problem: HeteroProblem, schedule: HeteroSchedule, durations: np.ndarray | None = None
) -> HeteroSchedule:
    """Re-time ``schedule``: same placement and per-instance orders, earliest starts.

    ``durations`` (``(ops, types)``) replaces the model's, e.g. with sampled actual times;
    the result's ends use them too.
    """
    inst, orders = placement_orders(problem, schedule)
    starts = execute_placement(problem, inst, orders, durations)
    out = HeteroSchedule.build(problem, starts.tolist(), inst, solver=f"{schedule.solver}+replay")
    if durations is not None:
        dur = np.asarray(durations, dtype=np.float64)
        from opsched.hetero.schedule import PlacedOp

        out.ops = [PlacedOp(o.name, o.start, o.start + float(dur[i, problem.type_index[o.device]]),
                            o.device, o.instance) for i, o in enumerate(out.ops)]  # fmt: skip
        out.makespan = max((o.end for o in out.ops), default=0.0)
    return out

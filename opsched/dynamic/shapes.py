"""Dynamic shapes: re-cost, re-schedule, and the cost of reusing a schedule made for another shape.

The same network at several batch sizes or sequence lengths has the same ops with different
durations. :func:`shape_graphs` builds them from the zoo (costed on a GPU by
:func:`opsched.cost.apply` when one is named; the zoo's FLOP-proportional placeholder
durations otherwise). :func:`shape_study` schedules each shape afresh (timing the re-costing
and the scheduling) and replays the unit orders of the schedule made for shape ``i`` with
the durations of shape ``j`` (:func:`~opsched.dynamic.execute.replay`): ``slowdown[i, j]`` =
that makespan / shape ``j``'s own schedule's makespan — how far a "prepared" schedule is from
the one made for the shape that actually arrives.

Only compute units are modelled here (each op holds one stream); the cost model's SM demands
are dropped, as a stream replay does not enforce them either.

Examples
--------
>>> gs = shape_graphs("gpt2_block", seq_lens=(128, 1024))
>>> st = shape_study(gs, units=2)
>>> st.labels, bool((st.slowdown.diagonal() == 1).all()), bool(st.slowdown.min() >= 0.999)
(['seq=128', 'seq=1024'], True, True)
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from opsched.dynamic.execute import UnitOrders, replay
from opsched.errors import ProblemError
from opsched.ir.graph import OpGraph
from opsched.problem import Machine, Problem

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ShapeStudy", "shape_graphs", "shape_study", "streams_only"]


def streams_only(graph: OpGraph) -> OpGraph:
    """``graph`` with every demand but ``units`` dropped (the stream model). An op that names
    no ``units`` holds none (as :attr:`Op.units` reads it), so it keeps holding none."""
    ops = [replace(op, demands={"units": op.units}) for op in graph.ops]
    return graph.replace_ops(ops, resources={})


def shape_graphs(
    model: str,
    batches: Sequence[int] = (1,),
    seq_lens: Sequence[int] | None = None,
    gpu: str | None = None,
    dtype: str = "float16",
) -> dict[str, OpGraph]:
    """Zoo model ``model`` at every batch size (or, for the transformer blocks, sequence length).

    Returns ``{label: graph}``, labels ``"batch=8"`` or ``"seq=512"``; ``attrs["cost_s"]``
    is the time the build and re-costing took.
    """
    from opsched.zoo.models import build

    out: dict[str, OpGraph] = {}
    if seq_lens is not None:
        from opsched.zoo.models import transformer

        if model not in ("gpt2_block", "bert_large_layer"):
            raise ProblemError(
                f"sequence lengths apply to gpt2_block and bert_large_layer, not {model!r}"
            )
        shapes: list[tuple[str, Any]] = [(f"seq={s}", s) for s in seq_lens]
    else:
        shapes = [(f"batch={b}", b) for b in batches]
    for label, x in shapes:
        t0 = time.perf_counter()
        if seq_lens is not None:
            g = getattr(transformer, model)(batches[0], dtype, seq_len=int(x))
        else:
            g = build(model, batch=int(x), dtype=dtype)
        if gpu is not None:
            from opsched.cost import apply

            g = apply(g, gpu, dtype)
        out[label] = g.replace_ops(
            list(g.ops), attrs={**g.attrs, "cost_s": time.perf_counter() - t0}
        )
    return out


@dataclass
class ShapeStudy:
    """Fresh schedules per shape and the cross-shape replays (see the module docstring)."""

    labels: list[str]
    fresh: np.ndarray  #: makespan of each shape's own schedule
    cross: np.ndarray  #: cross[i, j]: schedule of shape i replayed with shape j's durations
    schedule_s: np.ndarray  #: time to schedule each shape
    cost_s: np.ndarray  #: time to build and re-cost each shape
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def slowdown(self) -> np.ndarray:
        return self.cross / self.fresh[None, :]

    def to_frame(self) -> pd.DataFrame:
        """One row per (made for, run on) pair."""
        import pandas as pd

        rows = [
            {
                "made_for": a,
                "run_on": b,
                "makespan": self.cross[i, j],
                "fresh_makespan": self.fresh[j],
                "slowdown": self.slowdown[i, j],
            }
            for i, a in enumerate(self.labels)
            for j, b in enumerate(self.labels)
        ]
        return pd.DataFrame(rows)

    def to_dict(self) -> dict[str, Any]:
        return {
            "labels": self.labels,
            "fresh": self.fresh.tolist(),
            "cross": self.cross.tolist(),
            "slowdown": self.slowdown.tolist(),
            "schedule_s": self.schedule_s.tolist(),
            "cost_s": self.cost_s.tolist(),
            **self.info,
        }


def shape_study(
    graphs: Mapping[str, OpGraph], units: int = 4, scheduler: str = "list"
) -> ShapeStudy:
    """Schedule every shape afresh and replay every schedule on every shape.

    Parameters
    ----------
    graphs
        ``{label: graph}`` with the same op names (e.g. from :func:`shape_graphs`).
    units
        Compute units (streams).
    scheduler
        ``"list"`` (b-level list scheduling) or a registry name (``"cpsat"`` is exact on
        small graphs).
    """
    from opsched.heuristics.listsched import list_schedule
    from opsched.registry import run

    labels = list(graphs)
    probs = [Problem(streams_only(graphs[k]), Machine(units=units)) for k in labels]
    names = probs[0].graph.names
    for k, p in zip(labels, probs, strict=True):
        if p.graph.names != names:
            raise ProblemError(f"shape {k!r} has different ops than {labels[0]!r}")
    fresh, sched_s, orders = [], [], []
    for p in probs:
        t0 = time.perf_counter()
        s = list_schedule(p) if scheduler == "list" else run(scheduler, p)
        sched_s.append(time.perf_counter() - t0)
        if not s.has_schedule:
            raise ProblemError(f"{scheduler} found no schedule: {s.info.get('reason')}")
        fresh.append(s.makespan)
        orders.append(UnitOrders(p, s))
    n = len(labels)
    cross = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            cross[i, j] = replay(probs[j], orders[i]).makespan
    cost = np.array([graphs[k].attrs.get("cost_s", 0.0) for k in labels])
    return ShapeStudy(
        labels,
        np.array(fresh),
        cross,
        np.array(sched_s),
        cost,
        {"units": units, "scheduler": scheduler},
    )

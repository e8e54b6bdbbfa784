"""PyTorch profiler (Kineto) trace importer.

:func:`import_trace` reads a chrome trace written by ``torch.profiler`` (``.json`` or
``.json.gz``), links every GPU kernel, memcpy and memset to the CPU op that launched it
(correlation ids, then the op stack of the launching thread), and returns

- the op graph of one profiler step with measured durations, streams and start times
  (:mod:`~opsched.importers.trace.timeline` documents the op and dependency rules),
- the measured timeline as a :class:`~opsched.schedule.Schedule` on the streams,
- per-op kernel timing rows for calibration (:mod:`~opsched.importers.trace.rows`).

Examples
--------
>>> from opsched.importers.trace import import_trace
>>> imp = import_trace("datasets/traces/resnet50_v100_step.pt.trace.json.gz")  # doctest: +SKIP
>>> imp.timeline.graph.num_ops, len(imp.rows)  # doctest: +SKIP
(1280, 7596)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from opsched.importers.trace.events import TraceData, is_triton_kernel, load_trace, parse_trace
from opsched.importers.trace.link import Launch, link_launches
from opsched.importers.trace.rows import ROW_COLUMNS, timing_rows
from opsched.importers.trace.shapes import infer_kind
from opsched.importers.trace.timeline import StepTimeline, build_step

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ROW_COLUMNS",
    "ImportedTrace",
    "Launch",
    "StepTimeline",
    "TraceData",
    "build_step",
    "import_trace",
    "infer_kind",
    "is_triton_kernel",
    "link_launches",
    "load_trace",
    "parse_trace",
    "timing_rows",
]


@dataclass
class ImportedTrace:
    """Everything :func:`import_trace` recovers from one trace."""

    trace: TraceData
    launches: list[Launch]
    timeline: StepTimeline
    rows: pd.DataFrame

    def summary(self) -> str:
        """One line: GPU, step, ops, edges, streams, kernels and their total time."""
        g = self.timeline.graph
        a = g.attrs
        return (
            f"{self.trace.source}: {a['gpu']}, step {a['step']}: {g.num_ops} ops, "
            f"{g.num_edges} edges, streams {a['streams']}, {a['kernels']} kernels "
            f"({a['kernel_time_us']:g} us), makespan {self.timeline.schedule.makespan:g} us; "
            f"{len(self.rows)} timing rows"
        )


def import_trace(
    path: str | os.PathLike[str], step: int | None = None, device: int | None = None
) -> ImportedTrace:
    """Read a profiler trace; build the graph of profiler step ``step`` (default: the first)
    on GPU ``device`` (default: the only one the step used).

    Raises
    ------
    InputError
        Unreadable or malformed trace, a step that is not in it, a step without GPU work.
    """
    t = load_trace(path)
    launches = link_launches(t)
    try:
        timeline = build_step(t, launches, step, device)
    except Exception as e:
        from opsched.errors import OpschedError

        if isinstance(e, OpschedError):
            raise e.located(str(Path(path))) from None
        raise
    return ImportedTrace(t, launches, timeline, timing_rows(t, launches))

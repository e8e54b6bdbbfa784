"""One call that gathers the analysis of a graph (what ``opsched analyze`` prints)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from opsched.analysis.bounds import amdahl, lower_bounds, min_memory_bound, parallelism_profile
from opsched.analysis.paths import critical_path
from opsched.ir.graph import OpGraph

__all__ = ["analyze"]


def analyze(
    graph: OpGraph,
    units: int | None = None,
    capacities: Mapping[str, int | None] | None = None,
) -> dict[str, Any]:
    """Summary statistics of ``graph`` for ``units`` compute units, as a JSON-ready dict.

    Keys: ``name, ops, edges, work, critical_path, critical_path_ops, lower_bound`` (with
    its parts), ``max_parallelism, average_parallelism, amdahl`` and ``min_memory``.

    Examples
    --------
    >>> from opsched.demo import seed_graph
    >>> a = analyze(seed_graph(), units=2)
    >>> a["ops"], a["edges"], a["work"], a["critical_path"], a["lower_bound"]["value"]
    (7, 7, 7.0, 6.0, 6.0)
    """
    cp = critical_path(graph)
    _, running = parallelism_profile(graph)
    am = amdahl(graph, units)
    lb = lower_bounds(graph, units, capacities, nested=True)
    mem, who = min_memory_bound(graph)
    return {
        "name": graph.name,
        "ops": graph.num_ops,
        "edges": graph.num_edges,
        "work": graph.work,
        "critical_path": cp.length,
        "critical_path_ops": cp.ops,
        "units": units,
        "lower_bound": lb.to_dict(),
        "max_parallelism": int(np.max(running)) if len(running) else 0,
        "average_parallelism": am.average_parallelism,
        "amdahl": {
            "serial_work": am.serial_work,
            "serial_fraction": am.serial_fraction,
            "speedup_bound_amdahl": am.amdahl_speedup_bound,
            "speedup_bound": am.speedup_bound,
        },
        "min_memory": {"bytes": mem, "needed_by": who},
        "persistent_bytes": graph.persistent_bytes,
    }

"""Analysis of op graphs: plain functions over :class:`~opsched.ir.OpGraph`.

Topological order, ASAP/ALAP, slack, critical path, t-level/b-level, the parallelism
profile, Amdahl's law, makespan lower bounds, lower bounds on the memory any schedule needs,
the op orders a memory cap forces, and on two units the makespan bound of the op pairs a
cap lets run at once, split on the tensors it keeps apart.
"""

from typing import TYPE_CHECKING

from opsched._lazy import lazy_exports

#: Loaded on first use (:mod:`opsched._lazy`): the bounds and paths import numba's compiled
#: kernels and scipy, which a caller of one light module (the command line) does not need.
_LAZY: dict[str, str] = {
    "Amdahl": "opsched.analysis.bounds",
    "CapOrders": "opsched.analysis.cap_orders",
    "CaseBound": "opsched.analysis.tensor_cases",
    "CriticalPath": "opsched.analysis.paths",
    "LowerBounds": "opsched.analysis.bounds",
    "OverlapBound": "opsched.analysis.overlap",
    "amdahl": "opsched.analysis.bounds",
    "analyze": "opsched.analysis.summary",
    "b_level": "opsched.analysis.paths",
    "cap_orders": "opsched.analysis.cap_orders",
    "case_overlap_bound": "opsched.analysis.tensor_cases",
    "critical_path": "opsched.analysis.paths",
    "earliest_starts": "opsched.analysis.paths",
    "latest_starts": "opsched.analysis.paths",
    "live_memory_bound": "opsched.analysis.memory_cut",
    "lower_bounds": "opsched.analysis.bounds",
    "min_lifetimes": "opsched.analysis.paths",
    "min_memory_bound": "opsched.analysis.bounds",
    "pair_overlap_bound": "opsched.analysis.overlap",
    "parallelism_profile": "opsched.analysis.bounds",
    "ramp_heads": "opsched.analysis.bounds",
    "serial_ops": "opsched.analysis.bounds",
    "slack": "opsched.analysis.paths",
    "t_level": "opsched.analysis.paths",
    "topo_indices": "opsched.analysis.topo",
    "topological_order": "opsched.analysis.topo",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from opsched.analysis.bounds import (
        Amdahl,
        LowerBounds,
        amdahl,
        lower_bounds,
        min_memory_bound,
        parallelism_profile,
        ramp_heads,
        serial_ops,
    )
    from opsched.analysis.cap_orders import CapOrders, cap_orders
    from opsched.analysis.memory_cut import live_memory_bound
    from opsched.analysis.overlap import OverlapBound, pair_overlap_bound
    from opsched.analysis.paths import (
        CriticalPath,
        b_level,
        critical_path,
        earliest_starts,
        latest_starts,
        min_lifetimes,
        slack,
        t_level,
    )
    from opsched.analysis.summary import analyze
    from opsched.analysis.tensor_cases import CaseBound, case_overlap_bound
    from opsched.analysis.topo import topo_indices, topological_order


__all__ = [
    "Amdahl",
    "CapOrders",
    "CaseBound",
    "CriticalPath",
    "LowerBounds",
    "OverlapBound",
    "amdahl",
    "analyze",
    "b_level",
    "cap_orders",
    "case_overlap_bound",
    "critical_path",
    "earliest_starts",
    "latest_starts",
    "live_memory_bound",
    "lower_bounds",
    "min_lifetimes",
    "min_memory_bound",
    "pair_overlap_bound",
    "parallelism_profile",
    "ramp_heads",
    "serial_ops",
    "slack",
    "t_level",
    "topo_indices",
    "topological_order",
]

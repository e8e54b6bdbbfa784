"""opsched: operator scheduling for AI compilers.

Schedule an operator graph (a DAG of ops with durations, tensor sizes, workspaces and resource
demands) onto parallel compute units under a memory cap; check every schedule with one
independent validator.

Examples
--------
>>> import opsched
>>> g = opsched.seed_graph()
>>> p = opsched.Problem(g, opsched.Machine(units=2))
>>> s = opsched.greedy(p)
>>> s.makespan, opsched.validate(p, s).valid, opsched.critical_path(g).length
(6.0, True, 6.0)
"""

from typing import TYPE_CHECKING

from opsched._lazy import lazy_exports

# light (numpy only) and imported at once: ``opsched.validate`` is also a subpackage, whose
# import would otherwise leave the package, not the function, under that name
from opsched.errors import (
    GraphError,
    InputError,
    OpschedError,
    ProblemError,
    ScheduleFormatError,
)
from opsched.ir import Op, OpGraph, read_graph_json, write_graph_json
from opsched.problem import Machine, Objective, Problem
from opsched.schedule import Schedule, ScheduledOp, Status, read_schedule
from opsched.validate import execute_orders, simulate, validate

#: The rest load on first use: OR-Tools, pandas, numba and scipy cost about 2 s of CPU, which
#: every command line call paid (:mod:`opsched._lazy`).
_LAZY: dict[str, str] = {
    "amdahl": "opsched.analysis",
    "analyze": "opsched.analysis",
    "b_level": "opsched.analysis",
    "critical_path": "opsched.analysis",
    "critical_path_demo": "opsched.demo",
    "dependency_edges": "opsched.transforms",
    "derive_deps": "opsched.transforms",
    "earliest_starts": "opsched.analysis",
    "greedy": "opsched.heuristics",
    "latest_starts": "opsched.analysis",
    "lower_bounds": "opsched.analysis",
    "min_memory_bound": "opsched.analysis",
    "parallelism_profile": "opsched.analysis",
    "pareto_front": "opsched.solver",
    "read_graph": "opsched.importers",
    "read_psplib": "opsched.importers",
    "read_stg": "opsched.importers",
    "registry": "opsched.registry",
    "rename_buffers": "opsched.transforms",
    "seed_demo": "opsched.demo",
    "seed_graph": "opsched.demo",
    "serial": "opsched.heuristics",
    "serial_cap_check": "opsched.solver",
    "slack": "opsched.analysis",
    "solve_brute_force": "opsched.solver",
    "solve_cpsat": "opsched.solver",
    "solve_downsets": "opsched.solver",
    "t_level": "opsched.analysis",
    "topological_order": "opsched.analysis",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from opsched import registry
    from opsched.analysis import (
        amdahl,
        analyze,
        b_level,
        critical_path,
        earliest_starts,
        latest_starts,
        lower_bounds,
        min_memory_bound,
        parallelism_profile,
        slack,
        t_level,
        topological_order,
    )
    from opsched.demo import critical_path_demo, seed_demo, seed_graph
    from opsched.heuristics import greedy, serial
    from opsched.importers import read_graph, read_psplib, read_stg
    from opsched.solver import (
        pareto_front,
        serial_cap_check,
        solve_brute_force,
        solve_cpsat,
        solve_downsets,
    )
    from opsched.transforms import dependency_edges, derive_deps, rename_buffers

__version__ = "0.1.0"

__all__ = [
    "GraphError",
    "InputError",
    "Machine",
    "Objective",
    "Op",
    "OpGraph",
    "OpschedError",
    "Problem",
    "ProblemError",
    "Schedule",
    "ScheduleFormatError",
    "ScheduledOp",
    "Status",
    "amdahl",
    "analyze",
    "b_level",
    "critical_path",
    "critical_path_demo",
    "dependency_edges",
    "derive_deps",
    "earliest_starts",
    "execute_orders",
    "greedy",
    "latest_starts",
    "lower_bounds",
    "min_memory_bound",
    "parallelism_profile",
    "pareto_front",
    "read_graph",
    "read_graph_json",
    "read_psplib",
    "read_schedule",
    "read_stg",
    "registry",
    "rename_buffers",
    "seed_demo",
    "seed_graph",
    "serial",
    "serial_cap_check",
    "simulate",
    "slack",
    "solve_brute_force",
    "solve_cpsat",
    "solve_downsets",
    "t_level",
    "topological_order",
    "validate",
    "write_graph_json",
]

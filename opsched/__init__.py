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
from opsched.errors import GraphError, InputError, OpschedError, ProblemError, ScheduleFormatError
from opsched.heuristics import greedy, serial
from opsched.importers import read_graph, read_psplib, read_stg
from opsched.ir import Op, OpGraph, read_graph_json, write_graph_json
from opsched.problem import Machine, Objective, Problem
from opsched.schedule import Schedule, ScheduledOp, Status, read_schedule
from opsched.solver import (
    pareto_front,
    serial_cap_check,
    solve_brute_force,
    solve_cpsat,
    solve_downsets,
)
from opsched.transforms import dependency_edges, derive_deps, rename_buffers
from opsched.validate import execute_orders, simulate, validate

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

"""Heterogeneous devices: device types with per-type durations and transfers between types.

:class:`HeteroProblem` is the model (:mod:`opsched.hetero.model`), :func:`validate_hetero`
its independent checker, :func:`solve_hetero_cpsat` the exact CP-SAT solver and
:func:`heft` / :func:`cpop` the list-scheduling heuristics. See ``docs/hetero.md``.
"""

from opsched.hetero.cpsat import solve_hetero_cpsat
from opsched.hetero.heft import cpop, heft
from opsched.hetero.model import DeviceType, HeteroMachine, HeteroProblem, Link, roofline_cost
from opsched.hetero.schedule import HeteroSchedule, PlacedOp
from opsched.hetero.simulate import execute_placement
from opsched.hetero.validate import HeteroReport, validate_hetero

__all__ = [
    "DeviceType",
    "HeteroMachine",
    "HeteroProblem",
    "HeteroReport",
    "HeteroSchedule",
    "Link",
    "PlacedOp",
    "cpop",
    "execute_placement",
    "heft",
    "roofline_cost",
    "solve_hetero_cpsat",
    "validate_hetero",
]

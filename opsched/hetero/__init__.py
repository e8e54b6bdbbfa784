"""Heterogeneous devices: device types with per-type durations and transfers between types.

:class:`HeteroProblem` is the model (:mod:`opsched.hetero.model`), :func:`validate_hetero`
its independent checker, :func:`solve_hetero_cpsat` the exact CP-SAT solver and
:func:`heft` / :func:`cpop` the list-scheduling heuristics. See ``docs/hetero.md``.
"""

from typing import TYPE_CHECKING

from opsched._lazy import lazy_exports

# imported at once: a submodule of the same name, once imported, would otherwise take the
# name's place in this package
from opsched.hetero.heft import heft

#: Loaded on first use (:mod:`opsched._lazy`), so that the command line's modules here import
#: only what a command needs.
_LAZY: dict[str, str] = {
    "DeviceType": "opsched.hetero.model",
    "HeteroMachine": "opsched.hetero.model",
    "HeteroProblem": "opsched.hetero.model",
    "HeteroReport": "opsched.hetero.validate",
    "HeteroSchedule": "opsched.hetero.schedule",
    "Link": "opsched.hetero.model",
    "PlacedOp": "opsched.hetero.schedule",
    "cpop": "opsched.hetero.heft",
    "execute_placement": "opsched.hetero.simulate",
    "roofline_cost": "opsched.hetero.model",
    "solve_hetero_cpsat": "opsched.hetero.cpsat",
    "validate_hetero": "opsched.hetero.validate",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from opsched.hetero.cpsat import solve_hetero_cpsat
    from opsched.hetero.heft import cpop
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

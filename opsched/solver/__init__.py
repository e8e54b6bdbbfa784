"""Exact solvers: the CP-SAT formulation, the Pareto front, and brute force for tiny graphs.

:func:`solve_cpsat` returns proven-optimal schedules (status OPTIMAL only when proven and the
integer scaling was exact) for makespan, peak memory and their lexicographic combinations;
:func:`pareto_front` the exact makespan / peak-memory front; :func:`solve_brute_force`
enumerates semi-active schedules of graphs with a handful of ops, as an independent check;
:func:`serial_cap_check` decides whether any schedule fits a memory cap by searching the
one-unit orders (which decide it for any number of units); :func:`downset_search` finds the
least makespan under a tight memory cap exactly (:func:`solve_downsets` as a solver;
:func:`compile_kernels` compiles it once per installation), and
:func:`cut_ops` the ops that split a schedule into independent phases.
The model is documented in ``docs/cpsat-model.md``.
"""

from typing import TYPE_CHECKING

from opsched._lazy import lazy_exports

#: Loaded on first use (:mod:`opsched._lazy`): CP-SAT's model imports OR-Tools, which a caller
#: of :mod:`opsched.solver.defaults` alone (the command line's options) does not need.
_LAZY: dict[str, str] = {
    "DownsetResult": "opsched.solver.downsets",
    "ParetoFront": "opsched.solver.pareto",
    "ParetoPoint": "opsched.solver.pareto",
    "Scaling": "opsched.solver.scaling",
    "SerialCheck": "opsched.solver.serial",
    "choose_scaling": "opsched.solver.scaling",
    "compile_kernels": "opsched.solver.downsets",
    "cut_ops": "opsched.solver.split",
    "downset_search": "opsched.solver.downsets",
    "least_peak_start": "opsched.solver.serial",
    "pareto_front": "opsched.solver.pareto",
    "serial_cap_check": "opsched.solver.serial",
    "solve_brute_force": "opsched.solver.brute",
    "solve_cpsat": "opsched.solver.cpsat",
    "solve_downsets": "opsched.solver.downset_solver",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from opsched.solver.brute import solve_brute_force
    from opsched.solver.cpsat import solve_cpsat
    from opsched.solver.downset_solver import solve_downsets
    from opsched.solver.downsets import DownsetResult, compile_kernels, downset_search
    from opsched.solver.pareto import ParetoFront, ParetoPoint, pareto_front
    from opsched.solver.scaling import Scaling, choose_scaling
    from opsched.solver.serial import SerialCheck, least_peak_start, serial_cap_check
    from opsched.solver.split import cut_ops


__all__ = [
    "DownsetResult",
    "ParetoFront",
    "ParetoPoint",
    "Scaling",
    "SerialCheck",
    "choose_scaling",
    "compile_kernels",
    "cut_ops",
    "downset_search",
    "least_peak_start",
    "pareto_front",
    "serial_cap_check",
    "solve_brute_force",
    "solve_cpsat",
    "solve_downsets",
]

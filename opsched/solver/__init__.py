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

"""Exact solvers: the CP-SAT formulation, the Pareto front, and brute force for tiny graphs.

:func:`solve_cpsat` returns proven-optimal schedules (status OPTIMAL only when proven and the
integer scaling was exact) for makespan, peak memory and their lexicographic combinations;
:func:`pareto_front` the exact makespan / peak-memory front; :func:`solve_brute_force`
enumerates semi-active schedules of graphs with a handful of ops, as an independent check.
The model is documented in ``docs/cpsat-model.md``.
"""

from opsched.solver.brute import solve_brute_force
from opsched.solver.cpsat import solve_cpsat
from opsched.solver.pareto import ParetoFront, ParetoPoint, pareto_front
from opsched.solver.scaling import Scaling, choose_scaling

__all__ = [
    "ParetoFront",
    "ParetoPoint",
    "Scaling",
    "choose_scaling",
    "pareto_front",
    "solve_brute_force",
    "solve_cpsat",
]

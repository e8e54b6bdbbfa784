"""The CP-SAT formulation (variables / constraints / objective) and its solve function."""

from opsched.solver.cpsat.model import CpsatModel, Params
from opsched.solver.cpsat.solve import solve_cpsat

__all__ = ["CpsatModel", "Params", "solve_cpsat"]

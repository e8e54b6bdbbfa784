"""The independent validator and the event simulator."""

from opsched.validate.checker import ValidationReport, Violation, validate
from opsched.validate.simulate import SimulationReport, execute_orders, simulate

__all__ = [
    "SimulationReport",
    "ValidationReport",
    "Violation",
    "execute_orders",
    "simulate",
    "validate",
]

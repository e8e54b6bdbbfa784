"""Dynamic scheduling: runtime noise, online vs static execution, dynamic shapes.

See ``docs/dynamic.md``.
"""

from opsched.dynamic.execute import UnitOrders, online, replay, unit_orders, with_durations
from opsched.dynamic.noise import (
    Empirical,
    Lognormal,
    NoiseModel,
    RelativeError,
    sample_durations,
)
from opsched.dynamic.robust import (
    NoiseStats,
    Online,
    Policy,
    clairvoyant_gaps,
    expected_makespan,
    robust_portfolio,
)
from opsched.dynamic.shapes import ShapeStudy, shape_graphs, shape_study, streams_only

__all__ = [
    "Empirical",
    "Lognormal",
    "NoiseModel",
    "NoiseStats",
    "Online",
    "Policy",
    "RelativeError",
    "ShapeStudy",
    "UnitOrders",
    "clairvoyant_gaps",
    "expected_makespan",
    "online",
    "replay",
    "robust_portfolio",
    "sample_durations",
    "shape_graphs",
    "shape_study",
    "streams_only",
    "unit_orders",
    "with_durations",
]

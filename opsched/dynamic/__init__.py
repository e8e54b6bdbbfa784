"""Dynamic scheduling: runtime noise, online vs static execution, dynamic shapes.

See ``docs/dynamic.md``.
"""

from typing import TYPE_CHECKING

from opsched._lazy import lazy_exports

#: Loaded on first use (:mod:`opsched._lazy`), so that the command line's modules here import
#: only what a command needs.
_LAZY: dict[str, str] = {
    "Empirical": "opsched.dynamic.noise",
    "Lognormal": "opsched.dynamic.noise",
    "NoiseModel": "opsched.dynamic.noise",
    "NoiseStats": "opsched.dynamic.robust",
    "Online": "opsched.dynamic.robust",
    "Policy": "opsched.dynamic.robust",
    "RelativeError": "opsched.dynamic.noise",
    "ShapeStudy": "opsched.dynamic.shapes",
    "UnitOrders": "opsched.dynamic.execute",
    "clairvoyant_gaps": "opsched.dynamic.robust",
    "expected_makespan": "opsched.dynamic.robust",
    "online": "opsched.dynamic.execute",
    "replay": "opsched.dynamic.execute",
    "robust_portfolio": "opsched.dynamic.robust",
    "sample_durations": "opsched.dynamic.noise",
    "shape_graphs": "opsched.dynamic.shapes",
    "shape_study": "opsched.dynamic.shapes",
    "streams_only": "opsched.dynamic.shapes",
    "unit_orders": "opsched.dynamic.execute",
    "with_durations": "opsched.dynamic.execute",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
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

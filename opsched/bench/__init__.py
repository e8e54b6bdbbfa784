"""Experiments and reports. For now: the built-in quick heuristic-vs-optimal study."""

from opsched.bench.quick import run_quick

__all__ = ["run_quick"]

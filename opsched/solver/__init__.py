"""Exact CP-SAT solver (placeholder).

The CP-SAT formulation that returns proven-optimal schedules is not written yet; nothing in
this package schedules. Use :mod:`opsched.heuristics` until it lands.
"""

__all__: list[str] = []

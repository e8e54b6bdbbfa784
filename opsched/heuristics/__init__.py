"""Scheduling heuristics that scale to large graphs.

Available now: :func:`serial` (one unit, topological order) and :func:`greedy` (event-driven
non-delay ready-set scheduling under units, resources and the memory cap, FIFO or b-level
priority). The list-scheduling family, memory-aware orders and the portfolio come with the
heuristics issue.
"""

from opsched.heuristics.greedy import greedy, serial

__all__ = ["greedy", "serial"]

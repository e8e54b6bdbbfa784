"""Scheduling heuristics that scale to large graphs.

This package exports :func:`serial` (one unit, topological order) and :func:`greedy`
(event-driven non-delay ready-set scheduling under units, resources and the memory cap, FIFO
or b-level priority). The others live in their modules, each a function of the module's
name or close to it:

- ``opsched.heuristics.listsched.list_schedule``: list scheduling (HEFT-style priority rules,
  with or without insertion);
- ``opsched.heuristics.memory_list.memory_list``: list scheduling that keeps under a memory
  cap;
- ``opsched.heuristics.memory.min_memory``: one-unit orders of least peak memory;
- ``opsched.heuristics.portfolio.portfolio``: the best of them;
- ``opsched.heuristics.lns.lns``: large-neighbourhood improvement with CP-SAT windows.

Every scheduler is also registered by name (:mod:`opsched.registry`, ``opsched solvers``).
"""

from opsched.heuristics.greedy import greedy, serial

__all__ = ["greedy", "serial"]

"""Memory-aware orders for one compute unit: minimum peak memory under opsched's liveness rule.

Three families, each as an order function (``*_order(problem_or_graph) -> ndarray`` of op
indices) and a scheduler (``scheduler(problem) -> Schedule``: the ops back to back on unit 0,
FEASIBLE, or UNKNOWN when the order's peak exceeds the memory cap):

* :func:`inductor_memory` / :func:`inductor_memory_order`: PyTorch Inductor's
  ``reorder_for_peak_memory`` (baseline, LPMF, BFS, DFS; the lowest peak);
* :func:`xla_memory` / :func:`xla_memory_order`: XLA's ``DefaultMemoryScheduler`` (List, DFS,
  PostOrder; the lowest peak);
* :func:`min_memory` / :func:`min_memory_order`: opsched's search, seeded with all of the
  above, exact dynamic programming over scheduled sets on small or narrow graphs, beam search
  on larger ones; never worse than any baseline.

:func:`order_peak` gives the exact peak of any order; see ``docs/memory-orders.md``.

Examples
--------
>>> from opsched.demo import seed_graph
>>> g = seed_graph()
>>> order_peak(g, min_memory_order(g)) <= min(order_peak(g, inductor_memory_order(g)),
...                                           order_peak(g, xla_memory_order(g)))
True
"""

from opsched.heuristics.memory.common import (
    MemoryModel,
    check_order,
    file_order,
    order_peak,
    order_schedule,
    step_memory,
)
from opsched.heuristics.memory.inductor import (
    inductor_bfs_order,
    inductor_dfs_order,
    inductor_lpmf_order,
    inductor_memory,
    inductor_memory_order,
    inductor_orders,
)
from opsched.heuristics.memory.search import (
    MemorySearchResult,
    min_memory,
    min_memory_order,
    min_memory_order_result,
)
from opsched.heuristics.memory.xla import (
    xla_dfs_order,
    xla_list_order,
    xla_memory,
    xla_memory_order,
    xla_orders,
    xla_postorder_order,
)

__all__ = [
    "MemoryModel",
    "MemorySearchResult",
    "check_order",
    "file_order",
    "inductor_bfs_order",
    "inductor_dfs_order",
    "inductor_lpmf_order",
    "inductor_memory",
    "inductor_memory_order",
    "inductor_orders",
    "min_memory",
    "min_memory_order",
    "min_memory_order_result",
    "order_peak",
    "order_schedule",
    "step_memory",
    "xla_dfs_order",
    "xla_list_order",
    "xla_memory",
    "xla_memory_order",
    "xla_orders",
    "xla_postorder_order",
]

"""Structured random DAG families and the seed document's two examples.

* :func:`fork_join`: stages of parallel branches (chains) between a fork op and a join op,
  the shape of data-parallel loops and of multi-branch network blocks.
* :func:`series_parallel`: a random two-terminal series-parallel DAG, grown by subdividing
  an edge (series) or doubling it (parallel).
* :func:`example_graph`: ``"seed"`` (the seven-op graph) and ``"critical-path"`` (the A..E
  program, its dependencies derived from reads/writes).

Both random families take ``max_duration`` (integer durations uniform in
``[1, max_duration]``) and, with ``memory=True``, output sizes and workspaces as
:func:`opsched.zoo.gen._build.draw_sizes` draws them; the single sink is the graph output.
"""

from __future__ import annotations

import numpy as np

from opsched.errors import ProblemError
from opsched.ir.graph import OpGraph
from opsched.zoo.gen._build import check_count, finish_graph, rng_for

__all__ = ["EXAMPLES", "example_graph", "fork_join", "series_parallel"]

#: Names accepted by :func:`example_graph`.
EXAMPLES = ("seed", "critical-path")


def fork_join(
    ops: int,
    *,
    max_width: int = 8,
    max_depth: int = 4,
    max_duration: int = 10,
    memory: bool = False,
    size_unit: int = 1 << 20,
    max_size: int = 16,
    workspace_prob: float = 0.0,
    seed: int = 0,
    name: str | None = None,
) -> OpGraph:
    """Fork-join stages: ``fork -> width parallel chains -> join``, each join the next fork.

    Op 0 is the first fork. Each stage has ``U[2, max_width]`` branches, each a chain of
    ``U[1, max_depth]`` ops; the last stage is cut short so that the graph has exactly
    ``ops`` ops and ends with a join (the only sink).

    Examples
    --------
    >>> g = fork_join(12, max_width=3, max_depth=2, seed=0)
    >>> g.num_ops, g.ops[0].deps, len(g.successors("f0")) >= 2, g.ops[-1].name
    (12, (), True, 'f11')
    >>> [op.name for op in g.ops if not g.successors(op.name)]
    ['f11']
    """
    n = check_count(ops, "ops")
    check_count(max_width, "max_width", 2)
    check_count(max_depth, "max_depth")
    rng = rng_for(seed)
    srcs: list[np.ndarray] = []
    dsts: list[np.ndarray] = []
    fork, nxt = 0, 1
    while nxt < n:
        remaining = n - nxt
        if remaining == 1:  # room for the join only
            srcs.append(np.array([fork]))
            dsts.append(np.array([nxt]))
            break
        lengths = rng.integers(1, max_depth + 1, size=int(rng.integers(2, max_width + 1)))
        # keep one op for the join: clip the branch lengths to the ops left
        ends = np.minimum(np.cumsum(lengths), remaining - 1)
        lengths = np.diff(ends, prepend=0)
        lengths = lengths[lengths > 0]
        total = int(lengths.sum())
        ids = np.arange(nxt, nxt + total)
        join = nxt + total
        first = np.cumsum(lengths) - lengths  # offsets of each branch's first op
        last = first + lengths - 1
        inner = np.ones(total, dtype=bool)
        inner[last] = False  # chain edges i -> i + 1 inside a branch
        srcs += [np.full(len(first), fork), ids[inner], ids[last]]
        dsts += [ids[first], ids[inner] + 1, np.full(len(last), join)]
        fork, nxt = join, join + 1
    src = np.concatenate(srcs) if srcs else np.zeros(0, np.int64)
    dst = np.concatenate(dsts) if dsts else np.zeros(0, np.int64)
    return finish_graph(
        rng,
        n,
        src,
        dst,
        max_duration=max_duration,
        memory=memory,
        size_unit=size_unit,
        max_size=max_size,
        workspace_prob=workspace_prob,
        name=name or f"fork-join-{n}-s{seed}",
        prefix="f",
        kind="task",
    )


def series_parallel(
    ops: int,
    *,
    parallel_prob: float = 0.3,
    max_duration: int = 10,
    memory: bool = False,
    size_unit: int = 1 << 20,
    max_size: int = 16,
    workspace_prob: float = 0.0,
    seed: int = 0,
    name: str | None = None,
) -> OpGraph:
    """A random two-terminal series-parallel DAG of exactly ``ops`` ops.

    Start from one edge ``source -> sink``; then repeatedly pick an edge uniformly: with
    probability ``parallel_prob`` double it (a parallel composition, adding no op), else
    subdivide it with a new op (a series composition). Doubled edges never subdivided
    collapse into one. Every step keeps the graph series-parallel with one source and one
    sink, and at most ``2 ops - 3`` distinct edges. Ops are listed in a topological order
    (each new op goes right after its edge's tail).

    Examples
    --------
    >>> g = series_parallel(30, seed=2)
    >>> g.num_ops, g.ops[0].deps, [op.name for op in g.ops if not g.successors(op.name)]
    (30, (), ['s29'])
    >>> g.num_edges <= 2 * 30 - 3
    True
    """
    n = check_count(ops, "ops")
    if not 0.0 <= parallel_prob < 1.0:
        raise ProblemError(f"parallel_prob must be in [0, 1), got {parallel_prob}")
    rng = rng_for(seed)
    if n == 1:
        src = dst = np.zeros(0, np.int64)
        order = np.zeros(1, np.int64)
    else:
        esrc, edst = [0], [1]
        nxt_in_order = [1, -1]  # linked list of a topological order: 0 -> 1
        count = 2
        while count < n:
            batch = max(1024, 2 * (n - count))
            pick = rng.random(batch)
            par = rng.random(batch) < parallel_prob
            for r, dup in zip(pick.tolist(), par.tolist(), strict=True):
                e = int(r * len(esrc))
                u, v = esrc[e], edst[e]
                if dup:
                    esrc.append(u)
                    edst.append(v)
                    continue
                x = count
                count += 1
                edst[e] = x
                esrc.append(x)
                edst.append(v)
                nxt_in_order.append(nxt_in_order[u])
                nxt_in_order[u] = x
                if count == n:
                    break
        order_l, i = [], 0
        while i != -1:
            order_l.append(i)
            i = nxt_in_order[i]
        order = np.asarray(order_l, dtype=np.int64)
        pos = np.empty(n, dtype=np.int64)
        pos[order] = np.arange(n)
        src = pos[np.asarray(esrc, dtype=np.int64)]
        dst = pos[np.asarray(edst, dtype=np.int64)]
    return finish_graph(
        rng,
        n,
        src,
        dst,
        max_duration=max_duration,
        memory=memory,
        size_unit=size_unit,
        max_size=max_size,
        workspace_prob=workspace_prob,
        name=name or f"series-parallel-{n}-s{seed}",
        prefix="s",
        kind="task",
    )


def example_graph(name: str) -> OpGraph:
    """One of the seed document's examples by name (see :data:`EXAMPLES`).

    ``"critical-path"`` is the A..E program with its read-after-write dependencies derived
    (critical path 3, against 5 for the program-order chain).

    Examples
    --------
    >>> example_graph("seed").num_ops, example_graph("critical-path").num_edges
    (7, 4)
    """
    from opsched.demo import critical_path_program, seed_graph
    from opsched.transforms.deps import derive_deps

    if name == "seed":
        return seed_graph()
    if name == "critical-path":
        return derive_deps(critical_path_program())
    raise ProblemError(f"unknown example {name!r}; known: {', '.join(EXAMPLES)}")

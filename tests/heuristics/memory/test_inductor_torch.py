"""``inductor-memory`` against PyTorch Inductor's own ``torch/_inductor/memory.py``.

The fixed cases below hold orders and peaks that torch 2.13.0's ``topological_sort_lpmf``,
``topological_sort_bfs``, ``topological_sort_dfs``, ``estimate_peak_memory`` and
``reorder_for_peak_memory`` gave on the same graphs (run through the stand-in scheduler nodes
of :func:`test_same_as_torch_on_random_graphs`), so they need no torch. That test calls torch
directly and is skipped without it.

The comparison holds where the two memory models agree: ops of positive duration and no
workspace, each Inductor node's buffers read together by the same consumers (one opsched
tensor of their total size), and graph outputs that nothing consumes. Inductor holds a graph
output to the end even when other nodes read it, and frees each buffer of a multi-output
node after that buffer's own last reader; opsched frees a consumed output after its last
consumer and has one tensor per op (docs/memory-orders.md).
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from opsched.heuristics.memory import inductor_memory_order, inductor_orders
from opsched.ir import Op, OpGraph

# (output bytes of each op, producers of each op, graph outputs): from seeded random graphs
GRAPHS: dict[str, tuple[list[int], list[list[int]], set[int]]] = {
    "dfs-wins": (
        [2, 6, 2, 4, 2, 3, 1, 1],
        [[], [0], [0], [2], [], [4], [1], [6]],
        {3, 5, 7},
    ),
    "bfs-wins": (
        [1, 4, 1, 6, 2, 2, 3],
        [[], [0], [], [2], [0], [2], [2]],
        {1, 6},
    ),
    # LPMF and DFS tie at 18: the first of the lowest (trial order) is kept
    "lpmf-ties-dfs": (
        [2, 3, 6, 1, 4, 6, 3],
        [[], [0], [], [0], [3], [], [3]],
        {1, 2, 5, 6},
    ),
    # seven of the nine tensors are 2 B: ties everywhere; LPMF and BFS tie at 10
    "equal-sizes": (
        [3, 2, 2, 2, 2, 2, 2, 4, 2],
        [[], [0], [1, 0], [2, 1], [2, 3], [0, 1], [5], [6, 5], [1]],
        {8},
    ),
}

# torch 2.13.0: (order, peak) per method, and the order reorder_for_peak_memory returned
TORCH: dict[str, dict[str, tuple[list[int], int]]] = {
    "dfs-wins": {
        "baseline": ([0, 1, 2, 3, 4, 5, 6, 7], 15),
        "lpmf": ([0, 2, 3, 4, 5, 1, 6, 7], 15),
        "bfs": ([0, 4, 1, 2, 5, 6, 3, 7], 13),
        "dfs": ([0, 4, 1, 6, 7, 2, 5, 3], 11),
    },
    "bfs-wins": {
        "baseline": ([0, 1, 2, 3, 4, 5, 6], 12),
        "lpmf": ([0, 4, 2, 5, 1, 6, 3], 14),
        "bfs": ([0, 2, 1, 4, 3, 5, 6], 11),
        "dfs": ([0, 2, 4, 5, 6, 1, 3], 14),
    },
    "lpmf-ties-dfs": {
        "baseline": ([0, 1, 2, 3, 4, 5, 6], 19),
        "lpmf": ([0, 3, 4, 1, 6, 2, 5], 18),
        "bfs": ([0, 2, 5, 1, 3, 4, 6], 20),
        "dfs": ([0, 3, 6, 1, 4, 2, 5], 18),
    },
    "equal-sizes": {
        "baseline": ([0, 1, 2, 3, 4, 5, 6, 7, 8], 11),
        "lpmf": ([0, 1, 2, 5, 3, 4, 8, 6, 7], 10),
        "bfs": ([0, 1, 2, 5, 8, 3, 4, 6, 7], 10),
        "dfs": ([0, 1, 5, 6, 8, 2, 3, 4, 7], 13),
    },
}
TORCH_BEST = {"dfs-wins": "dfs", "bfs-wins": "bfs", "lpmf-ties-dfs": "lpmf", "equal-sizes": "lpmf"}


def opsched_graph(sizes: list[int], preds: list[list[int]], outputs: set[int]) -> OpGraph:
    ops = []
    for i, s in enumerate(sizes):
        deps = tuple(f"op{p}" for p in preds[i])
        ops.append(Op(f"op{i}", 1, deps=deps, output_bytes=s, output=i in outputs))
    return OpGraph(tuple(ops))


@pytest.mark.parametrize("case", sorted(GRAPHS))
def test_same_orders_peaks_and_choice_as_torch(case: str) -> None:
    g = opsched_graph(*GRAPHS[case])
    got = {k: (v[0].tolist(), v[1]) for k, v in inductor_orders(g).items()}
    assert got == TORCH[case]
    assert inductor_memory_order(g).tolist() == TORCH[case][TORCH_BEST[case]][0]


# --- direct comparison with torch: duck-typed scheduler nodes and buffers -------------------


class _Dep:
    def __init__(self, name: str) -> None:
        self.name = name


class _IRNode:  # what compute_size_for_scheduler_buffer reads: a plain layout, numel, dtype
    def __init__(self, nbytes: int) -> None:
        self.layout = object()
        self.nbytes = nbytes

    def get_numel(self) -> int:
        return self.nbytes

    def get_dtype(self) -> Any:
        import torch

        return torch.uint8


class _Buf:
    def __init__(self, name: str, nbytes: int, op: Any) -> None:
        self.name, self.node, self.users, self.defining_op = name, _IRNode(nbytes), [], op

    def get_name(self) -> str:
        return self.name


class _Node:
    def __init__(self, name: str, ordered_set: Any) -> None:
        self.name = name
        self.outputs: list[_Buf] = []
        self.unmet_dependencies = ordered_set()
        self.read_writes = SimpleNamespace(reads=ordered_set())  # no graph inputs

    def get_outputs(self) -> list[_Buf]:
        return self.outputs

    def get_name(self) -> str:
        return self.name

    def get_buffer_names(self) -> list[str]:
        return [b.name for b in self.outputs]


class _Graph:  # V.graph, as far as prepare_planning_info reads it
    name = None
    scheduler = SimpleNamespace(mutation_real_name={})
    sizevars = SimpleNamespace(optimization_hint=lambda x, fallback=0: x)


def torch_orders(
    sizes: list[list[int]], reads: list[list[tuple[int, int]]], outputs: set[tuple[int, int]]
) -> tuple[dict[str, tuple[list[int], int]], list[int]]:
    """Inductor's candidates (order, peak) and choice; node i writes buffers ``sizes[i]`` and
    reads buffers ``(producer, k)``."""
    mem = pytest.importorskip("torch._inductor.memory")
    from torch._inductor.virtualized import V
    from torch.utils._ordered_set import OrderedSet

    nodes, name_to_buf = [], {}
    for i, sz in enumerate(sizes):
        node = _Node(f"op{i}", OrderedSet)
        for k, s in enumerate(sz):
            node.outputs.append(buf := _Buf(f"buf{i}_{k}", s, node))
            name_to_buf[buf.name] = buf
        for p, k in reads[i]:
            node.unmet_dependencies.add(_Dep(f"buf{p}_{k}"))
        nodes.append(node)
    fused = {n.name: n for n in nodes}
    outs = OrderedSet(f"buf{p}_{k}" for p, k in sorted(outputs))
    index = {id(n): i for i, n in enumerate(nodes)}
    with V.set_graph_handler(_Graph()):  # type: ignore[arg-type]
        peak, free_in = mem.prepare_planning_info(nodes, name_to_buf, fused, OrderedSet(), outs)
        res = {"baseline": (list(range(len(nodes))), peak)}
        for name, order in (
            ("lpmf", mem.topological_sort_lpmf(nodes, free_in, name_to_buf, outs)),
            ("bfs", mem.topological_sort_bfs(nodes)),
            ("dfs", mem.topological_sort_dfs(nodes)),
        ):
            res[name] = ([index[id(n)] for n in order],
                         mem.estimate_peak_memory(order, free_in, outs)[0])  # fmt: skip
        best = mem.reorder_for_peak_memory(nodes, name_to_buf, fused, OrderedSet(), outs)
    return res, [index[id(n)] for n in best]


@pytest.mark.parametrize("case", sorted(GRAPHS))
def test_fixed_cases_are_torchs(case: str) -> None:
    sizes, preds, outputs = GRAPHS[case]
    res, best = torch_orders([[s] for s in sizes], [[(p, 0) for p in ps] for ps in preds],
                             {(i, 0) for i in outputs})  # fmt: skip
    assert res == TORCH[case]
    assert best == TORCH[case][TORCH_BEST[case]][0]


def test_same_as_torch_on_random_graphs() -> None:
    pytest.importorskip("torch._inductor.memory")
    rng = random.Random(2013)
    for _ in range(40):
        n = rng.randint(2, 60)
        sizes: list[list[int]] = []
        reads: list[list[tuple[int, int]]] = []
        for i in range(n):  # some multi-output nodes, read whole; sizes with many ties
            sizes.append([rng.choice([0, 1, 2, 2, 4, 7]) for _ in range(rng.choice([1, 1, 1, 2]))])
            preds = {rng.randrange(i) for _ in range(rng.choice([0, 1, 1, 2, 3]))} if i else set()
            reads.append([(p, k) for p in sorted(preds) for k in range(len(sizes[p]))])
        read = {p for r in reads for p, _ in r}
        held = {i for i in range(n) if i not in read and rng.random() < 0.4}
        outputs = {(i, k) for i in held for k in range(len(sizes[i]))}
        persistent = rng.randint(0, 9)  # opsched only: adds to every peak, changes no order
        ops = []
        for i in range(n):
            deps = tuple(f"op{p}" for p in dict.fromkeys(p for p, _ in reads[i]))
            dur = rng.choice([1, 2])
            ops.append(Op(f"op{i}", dur, deps=deps, output_bytes=sum(sizes[i]), output=i in held))
        g = OpGraph(tuple(ops), persistent_bytes=persistent)
        res, best = torch_orders(sizes, reads, outputs)
        got = inductor_orders(g)
        assert {k: (v[0].tolist(), v[1] - persistent) for k, v in got.items()} == res
        assert inductor_memory_order(g).tolist() == best

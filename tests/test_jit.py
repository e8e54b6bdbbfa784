"""Tests of :mod:`opsched._jit` and the compiled kernels: compiled and interpreted agree.

Every kernel is run compiled (a direct call of the numba dispatcher) and interpreted
(``.py_func``, the same source under CPython) on a few hundred random graphs, including
zero-duration ops and ops that demand no unit; starts, units and orders must be identical.
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import Any

import networkx as nx
import numpy as np
import pytest

import opsched.analysis._kernels as analysis_kernels
import opsched.heuristics._insertion as insertion_kernels
import opsched.heuristics._kernels as list_kernels
from opsched import _jit
from opsched.errors import GraphError
from opsched.ir import Op, OpGraph
from opsched.zoo.generators import gnp, layered

# numba dispatchers (typed Any: they carry ``py_func`` and ``signatures``)
kahn_order: Any = analysis_kernels.kahn_order
forward_longest: Any = analysis_kernels.forward_longest
backward_longest: Any = analysis_kernels.backward_longest
nondelay: Any = list_kernels.nondelay
insertion: Any = insertion_kernels.insertion


def _random_case(i: int) -> tuple[OpGraph, np.ndarray, np.ndarray, np.ndarray]:
    """Graph ``i`` of the sample with perturbed durations, unit wants and keys."""
    rng = np.random.default_rng(1000 + i)
    n = int(rng.integers(1, 60))
    if i % 3 == 0:
        g = gnp(n, float(rng.uniform(0.0, 0.3)), seed=i)
    else:
        g = layered(n, seed=i, max_deps=int(rng.integers(1, 5)))
    d = g.durations.copy()
    if i % 4 == 1:  # non-integer durations
        d = np.round(d * rng.uniform(0.1, 1.0, n), 2)
    d[rng.random(n) < 0.2] = 0.0  # zero-duration ops
    wants = (rng.random(n) >= 0.15).astype(np.int8)  # some ops demand no unit
    # many ties in the key for every fifth graph
    key = rng.integers(0, 3, n).astype(np.float64) if i % 5 == 0 else -rng.random(n)
    return g, d, wants, key


CASES = range(240)


@pytest.fixture(scope="module")
def cases() -> list[tuple[OpGraph, np.ndarray, np.ndarray, np.ndarray]]:
    return [_random_case(i) for i in CASES]


def _same(a: Any, b: Any) -> None:
    """Identical arrays or tuples of arrays (dtype-insensitive, exact values)."""
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
        return
    assert np.array_equal(np.asarray(a), np.asarray(b))


# ----------------------------------------------------------------------------- dispatch


class _Probe:
    """A stand-in kernel recording which of its two forms ran."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def py_func(self, *a: Any) -> str:
        self.ran.append("py")
        return "py"

    def __call__(self, *a: Any) -> str:
        self.ran.append("jit")
        return "jit"


@pytest.mark.parametrize(
    ("mode", "size", "expected"),
    [
        ("", _jit.JIT_MIN_SIZE - 1, "py"),
        ("", _jit.JIT_MIN_SIZE, "jit"),
        ("1", 1, "jit"),
        ("1", 10**6, "jit"),
        ("0", 10**6, "py"),
        ("0", 1, "py"),
    ],
)
def test_call_dispatch(
    monkeypatch: pytest.MonkeyPatch, mode: str, size: int, expected: str
) -> None:
    monkeypatch.setenv("OPSCHED_JIT", mode)
    probe = _Probe()
    assert _jit.call(probe, size, 1, 2) == expected
    assert probe.ran == [expected]


def test_kernels_compile_and_keep_py_func() -> None:
    n = 3
    ptr = np.array([0, 0, 1, 2], dtype=np.int64)
    succ_ptr = np.array([0, 1, 2, 2], dtype=np.int64)
    succ_idx = np.array([1, 2], dtype=np.int64)
    order = kahn_order(n, ptr, succ_ptr, succ_idx)
    assert order.tolist() == [0, 1, 2]
    assert kahn_order.signatures  # the dispatcher compiled a specialisation
    assert kahn_order.py_func(n, ptr, succ_ptr, succ_idx).tolist() == [0, 1, 2]


def test_opsched_jit_1_compiles_small_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    from opsched.analysis.topo import topo_indices

    g = OpGraph((Op("a", 1), Op("b", 1, deps=("a",))))
    monkeypatch.setenv("OPSCHED_JIT", "1")
    compiled = topo_indices(g)
    monkeypatch.setenv("OPSCHED_JIT", "0")
    assert topo_indices(g).tolist() == compiled.tolist() == [0, 1]


# ----------------------------------------------------------------------------- Kahn


def _kahn_reference(g: OpGraph) -> list[int]:
    """FIFO Kahn over the op records (ties in file order)."""
    idx = {n: i for i, n in enumerate(g.names)}
    indeg = [len(op.deps) for op in g.ops]
    succ: list[list[int]] = [[] for _ in g.ops]
    for op in g.ops:
        for d in op.deps:
            succ[idx[d]].append(idx[op.name])
    q = deque(i for i in range(g.num_ops) if indeg[i] == 0)
    out = []
    while q:
        u = q.popleft()
        out.append(u)
        for w in sorted(succ[u]):
            indeg[w] -= 1
            if indeg[w] == 0:
                q.append(w)
    return out


def test_kahn_order_is_topological_and_matches_reference(cases: list) -> None:
    for g, *_ in cases[:80]:
        args = (g.num_ops, g.pred_ptr, g.succ_ptr, g.succ_idx)
        order = kahn_order(*args)
        _same(order, kahn_order.py_func(*args))
        assert sorted(order.tolist()) == list(range(g.num_ops))
        pos = np.empty(g.num_ops, dtype=np.int64)
        pos[order] = np.arange(g.num_ops)
        nxg = g.to_networkx()
        assert nx.is_directed_acyclic_graph(nxg)
        for u, v in nxg.edges:
            assert pos[g.index(u)] < pos[g.index(v)]
        assert order.tolist() == _kahn_reference(g)


def _csr(n: int, edges: list[tuple[int, int]]) -> tuple[np.ndarray, ...]:
    preds: list[list[int]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for u, v in edges:
        succs[u].append(v)
        preds[v].append(u)

    def pack(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        ptr = np.cumsum([0] + [len(x) for x in lists]).astype(np.int64)
        idx = np.array([y for x in lists for y in x], dtype=np.int64)
        return ptr, idx

    pp, pi = pack(preds)
    sp, si = pack(succs)
    return pp, pi, sp, si


@pytest.mark.parametrize("compiled", [True, False])
def test_kahn_order_is_short_on_a_cycle(compiled: bool) -> None:
    # 0 -> 1 -> 2 -> 3 -> 1 (cycle 1-2-3), 3 -> 5, and 4 on its own
    pp, _, sp, si = _csr(6, [(0, 1), (1, 2), (2, 3), (3, 1), (3, 5)])
    fn = kahn_order if compiled else kahn_order.py_func
    order = fn(6, pp, sp, si)
    assert order.tolist() == [0, 4]  # everything on or after the cycle is left out


def test_graph_with_cycle_is_refused_naming_its_ops() -> None:
    with pytest.raises(GraphError, match="cycle") as e:
        OpGraph((Op("x", 1), Op("a", 1, deps=("x", "c")), Op("b", 1, deps=("a",)),
                 Op("c", 1, deps=("b",))))  # fmt: skip
    assert all(f"'{n}'" in str(e.value) or n in str(e.value) for n in "abc")


# ----------------------------------------------------------------------------- sweeps


def test_longest_path_sweeps_agree(cases: list) -> None:
    for g, d, _, key in cases:
        order = kahn_order(g.num_ops, g.pred_ptr, g.succ_ptr, g.succ_idx)
        fwd = (order, d, g.pred_ptr, g.pred_idx)
        _same(forward_longest(*fwd), forward_longest.py_func(*fwd))
        cost = np.abs(key)  # any non-negative edge cost
        bwd = (order, d, g.succ_ptr, g.succ_idx, cost)
        _same(backward_longest(*bwd), backward_longest.py_func(*bwd))


# ----------------------------------------------------------------------------- list kernels


def test_nondelay_compiled_equals_interpreted(cases: list) -> None:
    for i, (g, d, wants, key) in enumerate(cases):
        units = i % 5  # 0 = unlimited
        fifo = i % 7 == 3
        args = (units, d, wants, key, fifo, g.pred_ptr, g.succ_ptr, g.succ_idx)
        jit = nondelay(*args)
        _same(jit, nondelay.py_func(*args))
        starts, unit_of = jit
        # sanity on the shared result: precedence, and units in range for unit holders
        for v in range(g.num_ops):
            for k in range(g.pred_ptr[v], g.pred_ptr[v + 1]):
                u = g.pred_idx[k]
                assert starts[v] >= starts[u] + d[u] - 1e-9
            if wants[v]:
                assert unit_of[v] >= 0 and (units == 0 or unit_of[v] < units)
            else:
                assert unit_of[v] == -1


def test_insertion_compiled_equals_interpreted(cases: list) -> None:
    for i, (g, d, wants, key) in enumerate(cases):
        units = 1 + i % 4
        args = (units, d, wants, key, g.pred_ptr, g.pred_idx, g.succ_ptr, g.succ_idx)
        jit = insertion(*args)
        _same(jit, insertion.py_func(*args))
        starts, unit_of = jit
        # no two unit-holding ops overlap on one unit
        for u in range(units):
            mine = np.flatnonzero((unit_of == u) & (d > 0) & (wants != 0))
            iv = sorted(zip(starts[mine], starts[mine] + d[mine], strict=True))
            for (_, e1), (s2, _) in itertools.pairwise(iv):
                assert s2 >= e1 - 1e-9


def test_kernels_on_the_empty_graph() -> None:
    e = np.zeros(0)
    ei = np.zeros(0, dtype=np.int64)
    ptr = np.zeros(1, dtype=np.int64)
    w = np.zeros(0, dtype=np.int8)
    for fn in (nondelay, nondelay.py_func):
        s, u = fn(2, e, w, e, False, ptr, ptr, ei)
        assert len(s) == len(u) == 0
    for fn in (insertion, insertion.py_func):
        s, u = fn(2, e, w, e, ptr, ei, ptr, ei)
        assert len(s) == len(u) == 0
    assert len(kahn_order(0, ptr, ptr, ei)) == 0


def test_schedulers_give_the_same_result_compiled_and_interpreted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from opsched.heuristics.improve import justify
    from opsched.heuristics.listsched import list_schedule
    from opsched.problem import Machine, Problem

    g = layered(150, seed=8)  # large enough to run compiled by default
    results = {}
    for mode in ("1", "0"):
        monkeypatch.setenv("OPSCHED_JIT", mode)
        p = Problem(g, Machine(units=3))
        out = []
        for rule, placement in [
            ("b-level", "earliest"),
            ("heft", "insertion"),
            ("lpt", "earliest"),
        ]:
            s = list_schedule(p, rule, placement)
            j = justify(p, s)
            out.append([(o.start, o.unit) for o in s.ops] + [(o.start, o.unit) for o in j.ops])
        results[mode] = out
    assert results["1"] == results["0"]


def test_ready_is_false_until_compiled_and_true_after() -> None:
    numba = pytest.importorskip("numba")

    def twice(x: int) -> int:
        return 2 * x

    fresh: Any = numba.njit(cache=False)(twice)  # no disk cache to find
    assert not _jit.ready(fresh)
    assert fresh(21) == 42
    assert _jit.ready(fresh)


def test_without_compiling_small_inputs_wait_for_a_compiled_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPSCHED_JIT", "")
    probe = _Probe()  # neither compiled nor cached
    with _jit.without_compiling():
        assert _jit.call(probe, _jit.JIT_MIN_SIZE, 1, 2) == "py"
        assert _jit.call(probe, _jit.COMPILE_MIN_SIZE, 1, 2) == "jit"  # worth compiling
    assert _jit.call(probe, _jit.JIT_MIN_SIZE, 1, 2) == "jit"
    ready = _Probe()
    ready.overloads = {"sig": None}  # type: ignore[attr-defined]  # as a compiled dispatcher
    with _jit.without_compiling():
        assert _jit.call(ready, _jit.JIT_MIN_SIZE, 1, 2) == "jit"


def test_a_time_limited_solve_compiles_nothing(tmp_path: Any) -> None:
    # the Python form of a kernel had called its helpers compiled (compiling them), and a
    # solve compiled the heuristic start's kernels inside its time limit: on a fresh
    # installation the first 2 s solve of STG rand0000 (300 tasks) took 14 s. A fresh
    # process with numba's cache in an empty folder now solves within the limit.
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "OPSCHED_JIT": ""}
    args = [sys.executable, "-m", "opsched", "solve", "datasets/stg/300/rand0000.stg",
            "-k", "4", "--time-limit", "2", "--json"]  # fmt: skip
    out = subprocess.run(args, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["wall_time_s"] < 3.0
    # the heuristic start's kernels are not compiled (reading the graph, before the limit's
    # clock starts, may compile its topological sort)
    assert not [p for p in tmp_path.rglob("*.nbi") if "heuristics" in p.parent.name]

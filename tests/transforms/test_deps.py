"""Tests for opsched.transforms.deps: RAW/WAR/WAW derivation, program order, renaming.

The semantic property: running a program's ops in ANY topological order of its derived
RAW+WAR+WAW graph gives the same result as program order. Values are simulated symbolically:
a write stores ``(op name, values read)``, a buffer never written holds ``("init", name)``.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opsched.analysis import critical_path
from opsched.ir import Op, OpGraph
from opsched.transforms import (
    dependency_edges,
    derive_deps,
    program_order_chain,
    rename_buffers,
)

# ---------------------------------------------------------------------- helpers


def program(*specs: tuple[str, tuple[str, ...], tuple[str, ...]], sizes=None) -> OpGraph:
    """``program(("A", reads, writes), ...)``; ``sizes`` maps op name to output_bytes."""
    sizes = sizes or {}
    return OpGraph(
        tuple(Op(n, 1, reads=r, writes=w, output_bytes=sizes.get(n, 0)) for n, r, w in specs)
    )


def edge_strs(graph: OpGraph, kinds=("RAW", "WAR", "WAW")) -> list[str]:
    return [str(e) for e in dependency_edges(graph, kinds=kinds)[1]]


def deps_of(graph: OpGraph) -> dict[str, tuple[str, ...]]:
    return {op.name: op.deps for op in graph.ops}


def simulate(graph: OpGraph, order) -> tuple[dict, dict]:
    """Run ops in ``order``; return final buffer contents and the values each op read."""
    state: dict[str, tuple] = {}
    seen: dict[str, tuple] = {}
    for name in order:
        op = graph[name]
        vals = tuple(state.get(b, ("init", b)) for b in op.reads)
        seen[name] = vals
        for b in op.writes:
            state[b] = (name, vals)
    return state, seen


def to_nx(graph: OpGraph) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(graph.names)
    g.add_edges_from((d, op.name) for op in graph.ops for d in op.deps)
    return g


def topological_orders(graph: OpGraph, rng: random.Random, limit: int = 150) -> list[list[str]]:
    """Up to ``limit`` orders from networkx plus 30 random Kahn orders."""
    nxg = to_nx(graph)
    orders = [list(o) for o in itertools.islice(nx.all_topological_sorts(nxg), limit)]
    for _ in range(30):
        indeg = dict(nxg.in_degree())
        ready = [v for v in nxg if indeg[v] == 0]
        order = []
        while ready:
            v = ready.pop(rng.randrange(len(ready)))
            order.append(v)
            for s in nxg.successors(v):
                indeg[s] -= 1
                if indeg[s] == 0:
                    ready.append(s)
        orders.append(order)
    return orders


def brute_edges(graph: OpGraph) -> Counter:
    """RAW/WAR/WAW by definition, pair by pair: i < j and no write of b strictly between.

    WAR needs a reader i that does not itself write b (its own write orders j by WAW)."""
    ops = graph.ops
    out: Counter = Counter()
    for j, oj in enumerate(ops):
        for i in range(j):
            oi = ops[i]
            for b in set(oi.reads) | set(oi.writes):
                if any(b in ops[k].writes for k in range(i + 1, j)):
                    continue
                if b in oi.writes and b in oj.reads:
                    out[(oi.name, oj.name, "RAW", b)] += 1
                if b in oi.reads and b not in oi.writes and b in oj.writes:
                    out[(oi.name, oj.name, "WAR", b)] += 1
                if b in oi.writes and b in oj.writes:
                    out[(oi.name, oj.name, "WAW", b)] += 1
    return out


BUFS = ["a", "b", "c"]


@st.composite
def programs(draw, max_ops: int = 7, written_before_read: bool = False):
    """A random straight-line program over buffers a, b, c and a never-written input "in".

    With ``written_before_read`` an op reads only "in" or buffers an earlier op wrote."""
    n = draw(st.integers(1, max_ops))
    written: set[str] = set()
    ops = []
    for i in range(n):
        pool = [*sorted(written), "in"] if written_before_read else [*BUFS, "in"]
        reads = draw(st.lists(st.sampled_from(pool), max_size=3))
        writes = draw(st.lists(st.sampled_from(BUFS), max_size=2, unique=True))
        ops.append(
            Op(
                f"p{i}",
                draw(st.integers(0, 3)),
                reads=tuple(reads),
                writes=tuple(writes),
                output_bytes=draw(st.integers(0, 9)),
            )
        )
        written.update(writes)
    return OpGraph(tuple(ops))


# ---------------------------------------------------------------------- each kind by hand


def test_raw():
    # x = A(); B(x)
    g = program(("A", (), ("x",)), ("B", ("x",), ()))
    assert edge_strs(g) == ["A -> B (RAW on x)"]
    assert deps_of(derive_deps(g)) == {"A": (), "B": ("A",)}


def test_war():
    # A reads the input x; B then overwrites x: B must wait for A
    g = program(("A", ("x",), ()), ("B", (), ("x",)))
    assert edge_strs(g) == ["A -> B (WAR on x)"]


def test_waw():
    # two writes of x: the later one must land last
    g = program(("A", (), ("x",)), ("B", (), ("x",)))
    assert edge_strs(g) == ["A -> B (WAW on x)"]


def test_read_and_write_same_buffer():
    # x = A(); x = B(x) (in place); C(x). B gets RAW (reads A's x) and WAW (overwrites it)
    # from A, never an edge to itself; C reads B's x. B's own read is not a WAR for a later
    # writer: after B the readers of the current x are reset.
    g = program(("A", (), ("x",)), ("B", ("x",), ("x",)), ("C", ("x",), ()), ("D", (), ("x",)))
    assert edge_strs(g) == [
        "A -> B (RAW on x)",
        "A -> B (WAW on x)",
        "B -> C (RAW on x)",
        "C -> D (WAR on x)",
        "B -> D (WAW on x)",
    ]
    # one dep per ordered pair, whatever the number of reasons
    assert deps_of(derive_deps(g)) == {"A": (), "B": ("A",), "C": ("B",), "D": ("C", "B")}


def test_multiple_readers_before_a_write():
    # x = A(); B(x); C(x); x = D(); E(x): D waits for both readers (WAR) and for A (WAW)
    g = program(
        ("A", (), ("x",)),
        ("B", ("x",), ()),
        ("C", ("x",), ()),
        ("D", (), ("x",)),
        ("E", ("x",), ()),
    )
    assert edge_strs(g) == [
        "A -> B (RAW on x)",
        "A -> C (RAW on x)",
        "B -> D (WAR on x)",
        "C -> D (WAR on x)",
        "A -> D (WAW on x)",
        "D -> E (RAW on x)",
    ]
    assert deps_of(derive_deps(g)) == {
        "A": (),
        "B": ("A",),
        "C": ("A",),
        "D": ("B", "C", "A"),
        "E": ("D",),
    }
    # kinds filter the edges and the graph alike
    assert edge_strs(g, kinds=["RAW"]) == [
        "A -> B (RAW on x)",
        "A -> C (RAW on x)",
        "D -> E (RAW on x)",
    ]
    assert deps_of(dependency_edges(g, kinds=["RAW"])[0]) == {
        "A": (),
        "B": ("A",),
        "C": ("A",),
        "D": (),
        "E": ("D",),
    }
    assert edge_strs(g, kinds=["WAR"]) == ["B -> D (WAR on x)", "C -> D (WAR on x)"]
    assert edge_strs(g, kinds=["WAW"]) == ["A -> D (WAW on x)"]
    assert edge_strs(g, kinds=[]) == []


def test_buffers_never_written():
    # two readers of a pure input: no edge between them
    g = program(("A", ("w",), ()), ("B", ("w",), ()))
    assert edge_strs(g) == []
    assert deps_of(derive_deps(g)) == {"A": (), "B": ()}
    # a later write of the input waits for both readers
    g2 = program(("A", ("w",), ()), ("B", ("w",), ()), ("C", (), ("w",)))
    assert edge_strs(g2) == ["A -> C (WAR on w)", "B -> C (WAR on w)"]


def test_duplicate_reads_give_one_edge():
    g = program(("A", (), ("x",)), ("B", ("x", "x"), ()))
    assert edge_strs(g) == ["A -> B (RAW on x)"]


def test_docstring_program_edges():
    # x = A(); B(x) -> y; x = C(); D(x, y)
    g = program(("A", (), ("x",)), ("B", ("x",), ("y",)), ("C", (), ("x",)), ("D", ("x", "y"), ()))
    assert edge_strs(g) == [
        "A -> B (RAW on x)",
        "B -> C (WAR on x)",
        "A -> C (WAW on x)",
        "C -> D (RAW on x)",
        "B -> D (RAW on y)",
    ]
    assert [op.deps for op in dependency_edges(g, kinds=["RAW"])[0].ops] == [
        (),
        ("A",),
        (),
        ("C", "B"),
    ]


def test_explicit_deps_replaced_and_fields_kept():
    # dependency_edges keeps exactly the derived edges: explicit deps without a read/write
    # reason disappear; durations and sizes are untouched
    g = OpGraph(
        (
            Op("a", 2, output_bytes=7, writes=("x",)),
            Op("b", 3, deps=("a",)),
            Op("c", 4, reads=("x",)),
        )
    )
    new = derive_deps(g)
    assert deps_of(new) == {"a": (), "b": (), "c": ("a",)}
    assert [op.duration for op in new.ops] == [2.0, 3.0, 4.0]
    assert new["a"].output_bytes == 7
    assert new.name == g.name


def test_unknown_kind():
    g = program(("A", (), ("x",)))
    with pytest.raises(ValueError, match="unknown dependency kinds"):
        dependency_edges(g, kinds=["RAR"])


def test_raw_only_is_not_enough():
    # y = A(x); x = B(): dropping the WAR edge lets B run first and A read the new x
    g = program(("A", ("x",), ("y",)), ("B", (), ("x",)))
    ref, _ = simulate(g, ["A", "B"])
    raw_only = dependency_edges(g, kinds=["RAW"])[0]
    assert deps_of(raw_only) == {"A": (), "B": ()}
    bad, _ = simulate(g, ["B", "A"])
    assert bad["y"] != ref["y"]
    # with all kinds B waits for A
    assert deps_of(derive_deps(g)) == {"A": (), "B": ("A",)}


# ---------------------------------------------------------------------- program order chain


def test_program_order_chain():
    g = program(("A", (), ("x",)), ("B", (), ("y",)), ("C", ("x",), ()), ("D", (), ()))
    chain = program_order_chain(g)
    assert deps_of(chain) == {"A": (), "B": ("A",), "C": ("B",), "D": ("C",)}
    # a chain of unit ops: the critical path is all the work, 4
    assert critical_path(chain).length == 4.0
    assert critical_path(chain).ops == ["A", "B", "C", "D"]
    assert deps_of(program_order_chain(OpGraph(()))) == {}
    # reads and writes are kept
    assert chain["C"].reads == ("x",)


# ---------------------------------------------------------------------- renaming


def test_rename_two_versions():
    # x = A() (8 B); B(x); C(x); x = D() (4 B); E(x)
    g = program(
        ("A", (), ("x",)),
        ("B", ("x",), ()),
        ("C", ("x",), ()),
        ("D", (), ("x",)),
        ("E", ("x",), ()),
        sizes={"A": 8, "D": 4},
    )
    new, rep = rename_buffers(g)
    assert rep.renamed == {"x": ["x", "x#1"]}
    # versions of 8 and 4 B shared one 8 B buffer; separately they need 12: 4 extra
    assert rep.extra_bytes == 4
    assert [str(e) for e in rep.removed_edges] == [
        "B -> D (WAR on x)",
        "C -> D (WAR on x)",
        "A -> D (WAW on x)",
    ]
    # RAW kept, D free to run beside A, B, C
    assert deps_of(new) == {"A": (), "B": ("A",), "C": ("A",), "D": (), "E": ("D",)}
    assert new["D"].writes == ("x#1",)
    assert new["E"].reads == ("x#1",)
    assert new["B"].reads == ("x",)
    # critical path 4 -> 2 (A then B, or D then E)
    assert critical_path(derive_deps(g)).length == 4.0  # A -> B -> D -> E
    assert critical_path(new).length == 2.0


def test_rename_never_reuses_a_buffer_name_the_program_has():
    # x#1 = D(); x = A(); B(x); x = C(); E(x#1). C's version of x must not be called "x#1":
    # that name is D's buffer, and E (which reads D's value) would then wait for C instead
    g = program(
        ("D", (), ("x#1",)),
        ("A", (), ("x",)),
        ("B", ("x",), ()),
        ("C", (), ("x",)),
        ("E", ("x#1",), ()),
    )
    new, rep = rename_buffers(g)
    assert rep.renamed == {"x": ["x", "x#2"]}
    assert new["C"].writes == ("x#2",) and new["E"].reads == ("x#1",)
    assert deps_of(new) == {"D": (), "A": (), "B": ("A",), "C": (), "E": ("D",)}


def test_rename_three_versions_and_single_version_buffers():
    # x = A() (8); y = B(x) (2); x = C() (16); D(x); x = E() (4); F(x, y)
    g = program(
        ("A", (), ("x",)),
        ("B", ("x",), ("y",)),
        ("C", (), ("x",)),
        ("D", ("x",), ()),
        ("E", (), ("x",)),
        ("F", ("x", "y"), ()),
        sizes={"A": 8, "B": 2, "C": 16, "E": 4},
    )
    new, rep = rename_buffers(g)
    # y has a single version: not listed
    assert rep.renamed == {"x": ["x", "x#1", "x#2"]}
    # (8 + 16 + 4) - max 16 = 12
    assert rep.extra_bytes == 12
    assert [op.writes for op in new.ops] == [("x",), ("y",), ("x#1",), (), ("x#2",), ()]
    assert new["D"].reads == ("x#1",)
    assert new["F"].reads == ("x#2", "y")
    assert deps_of(new) == {
        "A": (),
        "B": ("A",),
        "C": (),
        "D": ("C",),
        "E": (),
        "F": ("E", "B"),
    }
    assert [str(e) for e in rep.removed_edges] == [
        "B -> C (WAR on x)",
        "A -> C (WAW on x)",
        "D -> E (WAR on x)",
        "C -> E (WAW on x)",
    ]


def test_rename_in_place_update():
    # x = A() (8); x = B(x) (8, in place); C(x): B reads version x, writes x#1
    g = program(("A", (), ("x",)), ("B", ("x",), ("x",)), ("C", ("x",), ()), sizes={"A": 8, "B": 8})
    new, rep = rename_buffers(g)
    assert new["B"].reads == ("x",)
    assert new["B"].writes == ("x#1",)
    assert new["C"].reads == ("x#1",)
    assert rep.renamed == {"x": ["x", "x#1"]}
    assert rep.extra_bytes == 8  # 8 + 8 - 8
    # the WAW A -> B is listed as removed, but the RAW A -> B keeps the pair ordered
    assert [str(e) for e in rep.removed_edges] == ["A -> B (WAW on x)"]
    assert deps_of(new) == {"A": (), "B": ("A",), "C": ("B",)}


def test_rename_nothing_to_do():
    g = program(("A", (), ("x",)), ("B", ("x",), ("y",)), sizes={"A": 3})
    new, rep = rename_buffers(g)
    assert rep.renamed == {}
    assert rep.extra_bytes == 0
    assert rep.removed_edges == []
    assert deps_of(new) == {"A": (), "B": ("A",)}


def test_rename_read_of_initial_value_before_first_write():
    # y = R(x) reads the program input x; x = W() writes it afterwards. Originally R -> W
    # (WAR). After renaming both still use the name "x" and no edge is left, so the order
    # W, R is allowed and R reads W's x instead of the input.
    g = program(("R", ("x",), ("y",)), ("W", (), ("x",)))
    _, ref_seen = simulate(g, ["R", "W"])
    new, _ = rename_buffers(g)
    for order in topological_orders(new, random.Random(0)):
        _, seen = simulate(new, order)
        assert seen["R"] == ref_seen["R"] == (("init", "x"),)


# ---------------------------------------------------------------------- properties


@settings(max_examples=150, deadline=None)
@given(programs())
def test_derived_edges_match_definition(g):
    _, edges = dependency_edges(g)
    got = Counter((e.src, e.dst, e.kind, e.buffer) for e in edges)
    assert got == brute_edges(g)
    # every edge goes forward in program order
    pos = {n: i for i, n in enumerate(g.names)}
    assert all(pos[e.src] < pos[e.dst] for e in edges)
    # the graph has one dep per distinct ordered pair
    pairs = {(e.src, e.dst) for e in edges}
    new = derive_deps(g)
    assert {(d, op.name) for op in new.ops for d in op.deps} == pairs
    assert sum(len(op.deps) for op in new.ops) == len(pairs)


@settings(max_examples=120, deadline=None)
@given(programs(), st.randoms(use_true_random=False))
def test_any_topological_order_preserves_semantics(g, rng):
    ref_state, ref_seen = simulate(g, g.names)
    derived = derive_deps(g)
    for order in topological_orders(derived, rng):
        state, seen = simulate(g, order)
        assert state == ref_state
        assert seen == ref_seen


@settings(max_examples=120, deadline=None)
@given(programs(written_before_read=True), st.randoms(use_true_random=False))
def test_renamed_program_preserves_final_versions(g, rng):
    ref_state, ref_seen = simulate(g, g.names)
    new, rep = rename_buffers(g)
    # the renamed program has only RAW dependencies left
    assert all(e.kind == "RAW" for e in dependency_edges(new)[1])
    for order in topological_orders(new, rng):
        state, seen = simulate(new, order)
        assert seen == ref_seen
        for b, value in ref_state.items():
            final = rep.renamed.get(b, [b])[-1]
            assert state[final] == value


@settings(max_examples=150, deadline=None)
@given(programs())
def test_rename_report_properties(g):
    new, rep = rename_buffers(g)
    _, before = dependency_edges(g)
    # RAW pairs are exactly kept, WAR/WAW reasons are the removed ones
    raw_pairs = {(e.src, e.dst) for e in before if e.kind == "RAW"}
    assert {(d, op.name) for op in new.ops for d in op.deps} == raw_pairs
    assert rep.removed_edges == [e for e in before if e.kind != "RAW"]
    # versions: x, x#1, x#2... for every buffer written more than once; sizes from writers
    sizes: dict[str, list[int]] = {}
    for op in g.ops:
        for b in op.writes:
            sizes.setdefault(b, []).append(op.output_bytes)
    # a buffer read before its first write keeps its name for that initial value, so its
    # versions start at #1 (regression: the first write used to reuse the initial name)
    read_initial: set[str] = set()
    written: set[str] = set()
    for op in g.ops:
        read_initial.update(x for x in op.reads if x not in written)
        written.update(op.writes)
    multi = {b: s for b, s in sizes.items() if len(s) > 1}
    expected = {
        b: [f"{b}#{k}" for k in range(1, len(s) + 1)]
        if b in read_initial
        else [b, *(f"{b}#{k}" for k in range(1, len(s)))]
        for b, s in sizes.items()
        if len(s) > 1 or b in read_initial
    }
    assert rep.renamed == expected
    assert rep.extra_bytes == sum(sum(s) - max(s) for s in multi.values())
    # every write in the renamed program is a distinct name
    all_writes = [w for op in new.ops for w in op.writes]
    assert len(all_writes) == len(set(all_writes))

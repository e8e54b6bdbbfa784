"""An independent exact cross-check of the solvers' answers, through the CLI.

The reference below is written from docs/formats.md alone and shares no code with opsched
(nor with its brute force or validator): graphs are plain ``opsched-graph/1`` dicts, and the
exact Pareto front of (makespan, peak memory) is computed by enumerating semi-active schedules
(every start is 0 or the end of an op of positive duration; such schedules reach every
Pareto-optimal pair: moving the ops that start at the earliest other start time back to the
latest end before it keeps every constraint and raises neither the makespan nor the memory at
any time). Every answer of every objective follows from that front.

The CLI is driven in-process (click's CliRunner) on seeded random graphs of 2-7 ops: integer,
dyadic and decimal durations (zero ones too), 1-3 (or unlimited) units with 0/1/2-unit ops,
a named resource (its capacity overridden by ``--resources`` at times), workspaces, graph
outputs, persistent bytes, memory caps at the least peak, a byte below it and in between;
``solve`` for every objective with cpsat (``--deterministic``, ``--workers 1``) and the
brute force, ``--makespan-limit``, and ``pareto``. Each written schedule is checked by the
reference's own checker; OPTIMAL must be the reference's optimum, an infeasible request one
error line with exit 2 and no file; the front must be the reference's front exactly.
A larger run of the same (about 1,050 graphs) found no wrong answer.
"""

from __future__ import annotations

import csv
import io
import json
import random
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from opsched.cli import main

Point = tuple[int, int]


@dataclass
class Ref:
    """A graph read my own way: durations, deps and consumers by index, demands, memory."""

    names: list[str]
    dur: list[int]
    deps: list[list[int]]
    cons: list[list[int]]
    out: list[int]
    ws: list[int]
    is_output: list[bool]
    units: list[int]
    other: list[dict[str, int]]
    persistent: int
    caps: dict[str, int]
    k: int | None
    # filled by front(): (makespan, peak) -> starts of one schedule reaching it
    witness: dict[Point, list[int]] = field(default_factory=dict)


def read(graph: dict[str, Any], k: int | None, tick: float = 1) -> Ref:
    """Durations are read in ``tick``s (each a whole number of them)."""
    ops = graph["ops"]
    names = [o["name"] for o in ops]
    index = {n: i for i, n in enumerate(names)}
    deps = [[index[d] for d in o.get("deps", [])] for o in ops]
    cons: list[list[int]] = [[] for _ in ops]
    for v, ds in enumerate(deps):
        for u in ds:
            cons[u].append(v)
    demands = [o.get("demands", {"units": 1}) for o in ops]
    return Ref(
        names=names,
        dur=[ticks(o.get("duration", 0), tick) for o in ops],
        deps=deps,
        cons=cons,
        out=[o.get("output_bytes", 0) for o in ops],
        ws=[o.get("workspace_bytes", 0) for o in ops],
        is_output=[bool(o.get("output", False)) for o in ops],
        units=[d.get("units", 0) for d in demands],
        other=[{r: c for r, c in d.items() if r != "units"} for d in demands],
        persistent=graph.get("persistent_bytes", 0),
        caps=dict(graph.get("resources", {})),
        k=k,
    )


def ticks(t: float, tick: float) -> int:
    q = Fraction(t) / Fraction(tick)
    assert abs(q - round(q)) < Fraction(1, 10**9), (t, tick)
    return round(q)


def peak_of(
    p: Ref, start: list[Any], release_lb: list[int] | None = None, end: list[Any] | None = None
) -> int:
    """Peak memory of full starts (or a lower bound with given release times); ``end``: the
    ends a schedule file gives (else start + duration)."""
    n = len(start)
    if end is None:
        end = [start[i] + p.dur[i] for i in range(n)]
    if release_lb is None:
        mk = max(end, default=0)
        rel = []
        for v in range(n):
            if p.cons[v]:
                rel.append(max(end[c] for c in p.cons[v]))
            else:
                rel.append(mk if p.is_output[v] else end[v])
    else:
        rel = release_lb
    best = p.persistent
    for t in set(start):
        m = p.persistent
        for v in range(n):
            if start[v] <= t < rel[v]:
                m += p.out[v]
            if start[v] <= t < end[v]:
                m += p.ws[v]
        best = max(best, m)
    return best


def fits(p: Ref, v: int, s: int, start: list[int | None]) -> bool:
    """Capacities at time ``s`` once op ``v`` starts there (ops placed so far)."""
    if p.dur[v] == 0:
        return True
    used_units = 0
    used: dict[str, int] = {}
    for u, su in enumerate(start):
        if u != v and su is None:
            continue
        su = s if u == v else su
        assert su is not None
        if su <= s < su + p.dur[u]:
            used_units += p.units[u]
            for r, c in p.other[u].items():
                used[r] = used.get(r, 0) + c
    if p.k is not None and used_units > p.k:
        return False
    return all(used[r] <= p.caps[r] for r in used)


def front(p: Ref) -> list[Point]:
    """The exact Pareto front of (makespan, peak) over every valid schedule (no memory cap)."""
    n = len(p.dur)
    pts: dict[Point, list[int]] = {}
    seen: set[tuple[int | None, ...]] = set()
    start: list[int | None] = [None] * n

    def dominated(m: int, pk: int) -> bool:
        return any(a <= m and b <= pk for a, b in pts)

    def bounds(last: int) -> Point:
        placed = [v for v in range(n) if start[v] is not None]
        end = {v: start[v] + p.dur[v] for v in placed}  # type: ignore[operator]
        mk = max([last + p.dur[v] for v in range(n) if start[v] is None] + list(end.values()))
        rel = []
        st = []
        for v in placed:
            r = end[v]
            for c in p.cons[v]:
                r = max(r, end[c] if c in end else max(last, end[v]) + p.dur[c])
            if not p.cons[v] and p.is_output[v]:
                r = max(r, mk)
            rel.append(r)
            st.append(start[v])
        sub = Ref(
            names=[],
            dur=[p.dur[v] for v in placed],
            deps=[],
            cons=[],
            out=[p.out[v] for v in placed],
            ws=[p.ws[v] for v in placed],
            is_output=[],
            units=[],
            other=[],
            persistent=p.persistent,
            caps={},
            k=None,
        )
        return mk, peak_of(sub, st, rel)  # type: ignore[arg-type]

    def dfs(last: int, placed: int) -> None:
        key = tuple(start)
        if key in seen:
            return
        seen.add(key)
        if placed == n:
            full = [s for s in start if s is not None]
            m = max((full[i] + p.dur[i] for i in range(n)), default=0)
            pk = peak_of(p, full)
            if not dominated(m, pk):
                for q in [q for q in pts if m <= q[0] and pk <= q[1]]:
                    del pts[q]
                pts[(m, pk)] = full
            return
        if placed and dominated(*bounds(last)):
            return
        cands = {0} | {s + p.dur[u] for u, s in enumerate(start) if s is not None and p.dur[u] > 0}
        for v in range(n):
            if start[v] is not None or any(start[u] is None for u in p.deps[v]):
                continue
            ready = max([start[u] + p.dur[u] for u in p.deps[v]] + [last])  # type: ignore
            for s in sorted(c for c in cands if c >= ready):
                if fits(p, v, s, start):
                    start[v] = s
                    dfs(s, placed + 1)
                    start[v] = None

    dfs(0, 0)
    p.witness = pts
    return sorted(pts)


def check(p: Ref, sched: dict[str, Any], tick: float = 1) -> list[str]:
    """My own checker of a written schedule against the model; [] if valid.

    Times are read exactly (as fractions of ``tick``). Also recomputes makespan and peak and
    compares them with the file's."""
    errs: list[str] = []
    ops = sched["ops"]
    by = {o["name"]: o for o in ops}
    if sorted(by) != sorted(p.names) or len(ops) != len(p.names):
        return [f"ops {sorted(by)} != {sorted(p.names)}"]
    n = len(p.names)
    st = [Fraction(by[nm]["start"]) / Fraction(tick) for nm in p.names]
    en = [Fraction(by[nm]["end"]) / Fraction(tick) for nm in p.names]
    un = [by[nm]["unit"] for nm in p.names]
    # whole-number times are checked exactly, others within 1e-9 of the total duration
    exact = all(x.denominator == 1 for x in st + en)
    tol = 0 if exact else Fraction(sum(p.dur)) * Fraction(1, 10**9)
    for v in range(n):
        if st[v] < 0 or abs(en[v] - st[v] - p.dur[v]) > tol:
            errs.append(f"{p.names[v]}: [{st[v]}, {en[v]}) for duration {p.dur[v]}")
        for u in p.deps[v]:
            if en[u] > st[v] + tol:
                errs.append(f"{p.names[u]} ends {en[u]} after {p.names[v]} starts {st[v]}")
        if p.units[v] == 1:
            if not isinstance(un[v], int) or un[v] < 0 or (p.k is not None and un[v] >= p.k):
                errs.append(f"{p.names[v]}: unit {un[v]!r} of one-unit op")
        elif un[v] is not None:
            errs.append(f"{p.names[v]}: unit {un[v]!r} for a demand of {p.units[v]} units")
    for a in range(n):
        for b in range(a + 1, n):
            same = p.units[a] == p.units[b] == 1 and un[a] == un[b] and p.dur[a] and p.dur[b]
            if same and st[a] < en[b] - tol and st[b] < en[a] - tol:
                errs.append(f"{p.names[a]} and {p.names[b]} overlap on unit {un[a]}")
    for t in set(st):
        tot_u = 0
        tot: dict[str, int] = {}
        for v in range(n):
            if st[v] <= t < en[v] - tol:
                tot_u += p.units[v]
                for r, c in p.other[v].items():
                    tot[r] = tot.get(r, 0) + c
        if p.k is not None and tot_u > p.k:
            errs.append(f"{tot_u} units at {t}")
        for r, c in tot.items():
            if c > p.caps[r]:
                errs.append(f"{c} of {r} at {t}")
    mk = max(en, default=Fraction(0))
    pk = peak_of(p, st, end=en)
    if Fraction(sched["makespan"]) != mk * Fraction(tick):
        errs.append(f"makespan {sched['makespan']} != recomputed {mk}")
    if sched["peak_memory"] != pk:
        errs.append(f"peak {sched['peak_memory']} != recomputed {pk}")
    return errs


def random_graph(
    rng: random.Random, n: int, k: int | None, tick: float = 1, big: bool = False
) -> dict[str, Any]:
    """A random opsched-graph/1 dict: durations of 0..3 ``tick``s (zero ones too), a sparse
    DAG, outputs, workspaces, persistent bytes, one named resource ``r`` and 0/1/2-unit ops.
    ``big``: sizes of up to 2^42 bytes, which differ in their last bytes."""

    def size(small: int) -> int:
        return rng.choice([0, 1, 2**40, 3 * 2**41]) + small if big else small

    rcap = rng.choice([1, 1, 2])
    ops = []
    for i in range(n):
        o: dict[str, Any] = {"name": f"v{i}", "duration": rng.choice([0, 1, 1, 2, 2, 3]) * tick}
        deps = [f"v{j}" for j in range(i) if rng.random() < 0.3]
        if deps:
            o["deps"] = deps
        if rng.random() < 0.85:
            o["output_bytes"] = size(rng.choice([1, 2, 3, 5, 8, 13, 20]))
        if rng.random() < 0.3:
            o["workspace_bytes"] = size(rng.randint(1, 6))
        if rng.random() < 0.3:
            o["output"] = True
        maxu = 2 if (k is None or k >= 2) else 1
        u = rng.choice([0, 1, 1, 1, maxu])
        d: dict[str, int] = {}
        if u != 1 or rng.random() < 0.3:
            d["units"] = u
        if rng.random() < 0.3:
            d["r"] = rng.randint(1, rcap)
        if d:
            o["demands"] = d
        ops.append(o)
    # shuffle the program order (deps still name earlier-built ops) to vary indices
    rng.shuffle(ops)
    return {
        "format": "opsched-graph/1",
        "name": "x",
        "persistent_bytes": size(rng.choice([0, 0, 3, 10])),
        "resources": {"r": rcap},
        "ops": ops,
    }


# ----------------------------------------------------------------------------- the CLI side


def invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], prog_name="opsched")


def in_ticks(x: float | str, tick: float) -> Fraction:
    """A time in ticks, whole where float noise (a decimal tick) is all that separates it."""
    f = Fraction(x) / Fraction(tick)
    r = round(f)
    return Fraction(r) if abs(f - r) < Fraction(1, 10**9) else f


def feasible(f: list[Point], cap: int | None, limit: float | None) -> list[Point]:
    return [q for q in f if (cap is None or q[1] <= cap) and (limit is None or q[0] <= limit)]


def assert_refused(r: Result, out: Path, what: str) -> None:
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 2, (what, r.exit_code, r.output, r.exception)
    assert len(lines) == 1 and lines[0].startswith("opsched: error: "), (what, r.stderr)
    assert out.read_text() == "OLD", f"{what}: the output was touched"


@dataclass
class Case:
    seed: int
    graph: Path
    ref: Ref
    tick: float
    opts: list[str]  # -k, --resources
    front: list[Point] = field(default_factory=list)


def make_case(seed: int, tmp: Path, big: bool) -> Case:
    rng = random.Random(seed)
    n = rng.randint(2, 7)
    k = rng.choice([None, 1, 2, 3])
    tick = rng.choice([1, 1, 0.5, 0.25, 1000, 0.1])
    g = random_graph(rng, n, k, tick, big)
    opts: list[str] = []
    if k is not None and any(o.get("demands", {"units": 1}).get("units", 0) for o in g["ops"]):
        opts += ["-k", str(k)]
    else:  # -k is refused where no op takes a unit
        k = None
    ref = read(g, k, tick)
    if rng.random() < 0.3:
        c = rng.randint(1, 3)
        if all(o.get("demands", {}).get("r", 0) <= c for o in g["ops"]):
            ref.caps["r"] = c
            opts += ["--resources", f"r={c}"]
    path = tmp / f"g{seed}.json"
    path.write_text(json.dumps(g))
    return Case(seed, path, ref, tick, opts, front(ref))


def check_solve(
    c: Case, out: Path, solver: str, obj: str, cap: int | None, limit: int | None, *extra: str
) -> str:
    """One ``opsched solve``; returns how it ended ("optimal", "refused", "rounded")."""
    out.write_text("OLD")
    args = ["solve", c.graph, "-s", solver, "--objective", obj, "-q", "--json", "-o", out]
    args += [*c.opts, *extra]
    if cap is not None:
        args += ["--memory-cap", cap]
    if limit is not None:
        args += ["--makespan-limit", limit * c.tick]
    what = " ".join(map(str, args))
    r = invoke(*args)
    doc = json.loads(r.stdout) if r.exit_code in (0, 1) and r.stdout.strip() else None
    sc = doc["info"].get("scaling") if doc else None
    rounded = sc is not None and not (sc["time_exact"] and sc["memory_exact"])
    feas = feasible(c.front, cap, limit)
    if r.exit_code == 1 and rounded and doc is not None and doc["status"] == "UNKNOWN":
        assert out.read_text() == "OLD", what  # no schedule, no file
        return "rounded"
    if not feas:
        assert_refused(r, out, what)
        return "refused"
    assert r.exit_code == 0, (what, r.output, r.exception, feas)
    s = json.loads(out.read_text())
    assert check(c.ref, s, c.tick) == [], what
    m, pk = in_ticks(s["makespan"], c.tick), s["peak_memory"]
    assert cap is None or pk <= cap, what
    assert limit is None or m <= limit, what
    mo = min(q[0] for q in feas)
    po = min(q[1] for q in feas)
    want = {
        "makespan": (mo,),
        "peak-memory": (po,),
        "lex": (mo, min(q[1] for q in feas if q[0] == mo)),
        "lex-memory": (po, min(q[0] for q in feas if q[1] == po)),
    }[obj]
    got = {"makespan": (m,), "peak-memory": (pk,), "lex": (m, pk), "lex-memory": (pk, m)}[obj]
    if s["status"] == "FEASIBLE" and rounded:  # rounded sizes or times: no claim, no miracle
        assert got >= want, (what, got, want)
        return "rounded"
    assert s["status"] == "OPTIMAL", what
    assert got == want, (what, got, want, feas)
    return "optimal"


def check_pareto(c: Case, out: Path, cap: int | None) -> str:
    out.write_text("OLD")
    args = ["pareto", c.graph, "-q", "--json", "-o", out, *c.opts]
    if cap is not None:
        args += ["--memory-cap", cap]
    what = " ".join(map(str, args))
    r = invoke(*args)
    feas = feasible(c.front, cap, None)
    if not feas and r.exit_code != 0:
        assert_refused(r, out, what)
        return "refused"
    assert r.exit_code == 0, (what, r.output, r.exception)
    doc = json.loads(r.stdout)
    pts = [(in_ticks(q["makespan"], c.tick), q["peak_memory"]) for q in doc["points"]]
    if not doc["complete"]:  # only where sizes are rounded (below); proven points are exact
        for q, d in zip(pts, doc["points"], strict=True):
            assert not d["proven"] or q in feas, (what, q, feas)
            assert any(f[0] <= q[0] and f[1] <= q[1] for f in feas), (what, q, feas)
        return "incomplete"
    assert pts == feas, (what, pts, feas)
    assert all(q["proven"] for q in doc["points"]), what
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [(in_ticks(x["makespan"], c.tick), int(x["peak_memory"])) for x in rows] == feas
    return "complete"


def run_case(seed: int, tmp: Path, big: bool = False) -> list[str]:
    c = make_case(seed, tmp, big)
    rng = random.Random(seed + 10**6)
    out = tmp / "out.json"
    minp = min(q[1] for q in c.front)
    maxp = max(q[1] for q in c.front)
    caps = [None, minp, minp - 1, rng.randint(minp, maxp + 1)]
    ms = sorted({q[0] for q in c.front})
    ends = [None, None, *caps]
    seen = []

    def extra() -> list[str]:
        # one search thread: the suite runs two test processes on two cores, and the time
        # limit tests beside this one measure wall clock
        return ["--workers", "1", *rng.choice([[], ["--deterministic"]])]

    for cap in caps:
        seen.append(check_solve(c, out, "cpsat", "makespan", cap, None, *extra()))
    for obj in ("peak-memory", "lex", "lex-memory"):
        seen.append(check_solve(c, out, "cpsat", obj, rng.choice(ends), None, *extra()))
    limit = rng.choice([*ms, ms[0] - 1])
    seen.append(check_solve(c, out, "cpsat", "peak-memory", rng.choice(ends), limit, *extra()))
    for obj in ("makespan", "peak-memory", "lex", "lex-memory"):
        seen.append(check_solve(c, out, "brute-force", obj, rng.choice(ends), None))
    seen.append(check_pareto(c, out.with_suffix(".csv"), rng.choice([None, minp - 1, maxp])))
    return seen


def test_reference_front_equals_every_integer_start() -> None:
    """The reference itself: its front is the front of every integer start time in
    [0, total work] (a check of the semi-active argument on tiny graphs)."""
    import itertools

    rng = random.Random(5)
    for _ in range(25):
        n = rng.randint(2, 4)
        k = rng.choice([None, 1, 2, 3])
        p = read(random_graph(rng, n, k), k)
        pts = set()
        for st in itertools.product(range(sum(p.dur) + 1), repeat=n):
            en = [st[i] + p.dur[i] for i in range(n)]
            ones = sorted((i for i in range(n) if p.units[i] == 1), key=lambda i: st[i])
            unit: dict[int, int | None] = {i: None for i in range(n)}
            free: dict[int, int] = {}
            for i in ones:  # first free unit: enough where the pool fits
                unit[i] = next(
                    (u for u in range(p.k or n) if free.get(u, 0) <= st[i] or not p.dur[i]), -1
                )
                if p.dur[i]:
                    free[unit[i]] = en[i]  # type: ignore[index]
            ops = [
                {"name": p.names[i], "start": st[i], "end": en[i], "unit": unit[i]}
                for i in range(n)
            ]
            mk, pk = max(en), peak_of(p, list(st))
            if not check(p, {"ops": ops, "makespan": mk, "peak_memory": pk}):
                pts.add((mk, pk))
        want = sorted(q for q in pts if not any(o != q and o[0] <= q[0] and o[1] <= q[1]
                                                for o in pts))  # fmt: skip
        assert front(p) == want


@pytest.mark.parametrize("chunk", range(4))
def test_cli_answers_equal_the_exact_reference(chunk: int, tmp_path: Path) -> None:
    ends = []
    for seed in range(chunk * 12, chunk * 12 + 12):
        ends += run_case(seed, tmp_path)
    assert "optimal" in ends and "refused" in ends and "complete" in ends


def test_rounded_sizes_claim_nothing_wrong(tmp_path: Path) -> None:
    """Sizes past 2^40 that differ in their last bytes: where the memory is rounded the
    answers may be FEASIBLE / UNKNOWN / an incomplete front, never a wrong claim."""
    for seed in range(100, 106):
        run_case(seed, tmp_path, big=True)

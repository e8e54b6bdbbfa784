"""The op graph and measured schedule of one profiler step.

**Ops.** The GPU activities (kernels, memcpys, memsets) launched from the step's CPU window
are grouped by their graph frame (:func:`~opsched.importers.trace.link.graph_frame`). One
graph op is a maximal run of consecutive activities of one frame on one stream, so a frame
that used two streams (or whose kernels were interleaved with another thread's on a stream)
gives several ops, named ``NAME#k.j``. Its ``duration`` is the busy time of its activities
(us), its ``start`` the first one's start, relative to the step's first GPU activity.

**Dependencies**, each recorded in ``attrs["dep_kinds"]``:

1. ``stream``: consecutive ops on one stream (CUDA streams run in FIFO order);
2. ``event``: a stream waiting on an event. With ``cuda_sync`` events (exact): the last op
   launched on ``wait_on_stream`` before the ``cudaEventRecord`` -> the first op launched on
   the waiting stream after the ``cudaStreamWaitEvent``. Without them the recorded stream is
   unknown: the last op launched on each other stream before the wait -> the next op the
   waiting thread launched;
3. ``host``: ``cuda{Device,Stream,Event}Synchronize``: the last op launched on each stream
   before the call that had finished when it returned -> the first op launched on each other
   stream after it returned.

Within a stream the FIFO order subsumes every data dependency; across streams a correct
program protects each data dependency with an event wait or a host synchronisation, so these
edges cover them (tensor identities are not in the trace). An inferred edge the measured
timeline contradicts is dropped and counted in ``graph.attrs["dropped_edges"]``.

**Schedule.** Units are the streams (``unit`` i = ``attrs["streams"][i]``); each op's start is
its measured start, pushed to the previous op's end on its stream when kernels overlapped
(counted in ``info["clamped"]``). The schedule passes :func:`opsched.validate.validate`.
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from opsched.errors import InputError
from opsched.importers.trace.events import TraceData
from opsched.importers.trace.link import (
    Launch,
    graph_frame,
    is_wrapper,
    kept_launches,
    stack_of,
    step_of,
)
from opsched.importers.trace.opkind import FrameKinds, kernel_dtype
from opsched.ir import kinds as K
from opsched.ir.graph import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule

__all__ = ["StepTimeline", "build_step"]

_HOST_SYNC = {
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
}
_WAIT = {"cudaStreamWaitEvent", "cuStreamWaitEvent"}
_EPS = 1e-6


@dataclass
class _Run:
    key: Any
    stream: int
    launches: list[Launch] = field(default_factory=list)
    name: str = ""
    start: float = 0.0  #: schedule start (us from the step origin)
    busy: float = 0.0
    deps: dict[int, str] = field(default_factory=dict)  #: run id -> edge kind

    @property
    def actual_end(self) -> float:
        return max(la.gpu.end for la in self.launches)


@dataclass
class StepTimeline:
    """A step's graph, the measured schedule on its streams, and the problem they share."""

    graph: OpGraph
    schedule: Schedule
    problem: Problem
    step: int | None


def _busy(launches: list[Launch]) -> float:
    total, cur_s, cur_e = 0.0, None, None
    for g in sorted((la.gpu for la in launches), key=lambda g: g.ts):
        if cur_e is None or g.ts > cur_e:
            if cur_e is not None and cur_s is not None:
                total += cur_e - cur_s
            cur_s, cur_e = g.ts, g.end
        else:
            cur_e = max(cur_e, g.end)
    if cur_e is not None and cur_s is not None:
        total += cur_e - cur_s
    return round(total, 3)


def _select(t: TraceData, launches: list[Launch], step: int | None) -> tuple[list, int | None]:
    if not t.steps:
        if step is not None:
            raise InputError(f"--step {step}: the trace has no ProfilerStep annotations")
        return launches, None
    numbers = [s.number for s in t.steps]
    if step is None:
        step = numbers[0]
    elif step not in numbers:
        raise InputError(
            f"no ProfilerStep#{step} in the trace; steps: {', '.join(map(str, numbers))}"
        )
    return [la for la in launches if step_of(t.steps, la.launch_ts) == step], step


def build_step(
    t: TraceData, launches: list[Launch], step: int | None = None, device: int | None = None
) -> StepTimeline:
    """Build the graph and measured schedule of ``step`` (default: the first step) on GPU
    ``device`` (default: the only one the step used; a step on several GPUs needs one named,
    as their streams are separate units and their ops separate work)."""
    chosen, step = _select(t, launches, step)
    if not chosen:
        what = f"profiler step {step}" if step is not None else "the trace"
        raise InputError(f"{what} launched no GPU work")
    devices = sorted({la.gpu.device for la in chosen})
    if device is not None:
        if device not in devices:
            raise InputError(f"--device {device}: the step ran on GPU(s) "
                             f"{', '.join(map(str, devices))}")  # fmt: skip
        chosen = [la for la in chosen if la.gpu.device == device]
    elif len(devices) > 1:
        raise InputError(f"the step ran on GPUs {', '.join(map(str, devices))}: give --device "
                         "to import one (their streams and work are not one device's)")  # fmt: skip
    runs = _make_runs(t, chosen)
    origin = min(la.gpu.ts for la in chosen)
    streams = sorted({r.stream for r in runs})
    by_stream: dict[int, list[int]] = defaultdict(list)
    for i, r in enumerate(runs):
        by_stream[r.stream].append(i)
    clamped = 0
    for ids in by_stream.values():
        prev_end = None
        for i in ids:
            r = runs[i]
            r.busy = _busy(r.launches)
            r.start = round(min(la.gpu.ts for la in r.launches) - origin, 3)
            if prev_end is not None and r.start < prev_end:
                r.start, clamped = prev_end, clamped + 1
            prev_end = r.start + r.busy
    dropped = _add_edges(t, runs, by_stream)
    ops = _ops(t, runs, origin)
    gpu_names = sorted({t.device_name(la.gpu.device) for la in chosen})
    graph = OpGraph(
        tuple(ops),
        name=f"{t.source.split('.')[0]}-step{step}" if step is not None else t.source,
        attrs={
            "source": t.source,
            "step": step,
            "gpu": ", ".join(gpu_names),
            "time_unit": "us",
            "streams": streams,
            "origin_ts_us": origin,
            "dropped_edges": dropped,
            "kernels": sum(la.gpu.kind == "kernel" for la in chosen),
            "kernel_time_us": round(sum(la.gpu.dur for la in chosen if la.gpu.kind == "kernel"), 3),
        },
    )
    problem = Problem(graph, Machine(units=len(streams)))
    sched = Schedule.build(
        problem,
        [r.start for r in runs],
        [streams.index(r.stream) for r in runs],
        solver="measured",
        info={
            "source": t.source,
            "step": step,
            "clamped": clamped,
            "streams": streams,
        },
    )
    return StepTimeline(graph, sched, problem, step)


def _make_runs(t: TraceData, chosen: list[Launch]) -> list[_Run]:
    per_stream: dict[int, list[Launch]] = defaultdict(list)
    for la in chosen:
        per_stream[la.gpu.stream].append(la)
    runs: list[_Run] = []
    for s, lst in per_stream.items():
        lst.sort(key=lambda la: (la.gpu.ts, la.gpu.correlation))
        for la in lst:
            f = graph_frame(t, la.leaf)
            key = f if f >= 0 else ("launch", la.gpu.correlation)
            if runs and runs[-1].stream == s and runs[-1].key == key:
                runs[-1].launches.append(la)
            else:
                runs.append(_Run(key, s, [la]))
    runs.sort(key=lambda r: (r.launches[0].gpu.ts, r.stream))
    # names: NAME#k per frame in order of first appearance, .j when a frame has several runs
    per_key: dict[Any, list[int]] = defaultdict(list)
    for i, r in enumerate(runs):
        per_key[r.key].append(i)
    counter: Counter[str] = Counter()
    for key, ids in per_key.items():
        r0 = runs[ids[0]]
        base = t.cpu_ops[key].name if isinstance(key, int) else r0.launches[0].gpu.name[:60]
        counter[base] += 1
        for j, i in enumerate(ids, 1):
            suffix = f".{j}" if len(ids) > 1 else ""
            runs[i].name = f"{base}#{counter[base]}{suffix}"
    return runs


def _add_edges(t: TraceData, runs: list[_Run], by_stream: dict[int, list[int]]) -> int:
    for ids in by_stream.values():
        for a, b in itertools.pairwise(ids):
            runs[b].deps[a] = "stream"
    # per stream: launches sorted by CPU launch time -> run id
    lts: dict[int, list[tuple[float, int]]] = defaultdict(list)
    per_thread: dict[tuple[str, str], list[tuple[float, int]]] = defaultdict(list)
    for i, r in enumerate(runs):
        for la in r.launches:
            lts[r.stream].append((la.launch_ts, i))
            if la.call is not None:
                per_thread[(la.call.pid, la.call.tid)].append((la.call.ts, i))
    for v in (*lts.values(), *per_thread.values()):
        v.sort()
    keys = {s: [x[0] for x in v] for s, v in lts.items()}

    def last_before(s: int, ts: float) -> int | None:
        k = bisect.bisect_left(keys[s], ts) - 1
        return lts[s][k][1] if k >= 0 else None

    def first_after(s: int, ts: float) -> int | None:
        k = bisect.bisect_left(keys[s], ts)
        return lts[s][k][1] if k < len(lts[s]) else None

    candidates: list[tuple[int, int, str]] = []
    calls = {c.correlation: c for c in t.runtime if c.correlation is not None}
    exact_waits = set()
    for sy in t.syncs:
        if sy.wait_on_stream is None or sy.stream not in lts or sy.wait_on_stream not in lts:
            continue
        wait = calls.get(sy.correlation) if sy.correlation is not None else None
        rec = calls.get(sy.record_correlation) if sy.record_correlation is not None else None
        if wait is None:
            continue
        exact_waits.add(sy.correlation)
        cons = first_after(sy.stream, wait.ts)
        prod = last_before(sy.wait_on_stream, rec.ts if rec is not None else wait.ts)
        if cons is not None and prod is not None:
            candidates.append((prod, cons, "event"))
    lo = min((la.launch_ts for r in runs for la in r.launches), default=0.0)
    hi = max((la.launch_ts for r in runs for la in r.launches), default=0.0)
    for c in t.runtime:
        if not lo <= c.ts <= hi:
            continue
        if c.name in _WAIT and c.correlation not in exact_waits:
            th = per_thread.get((c.pid, c.tid), [])
            k = bisect.bisect_left(th, (c.ts + c.dur, -1))
            if k >= len(th):
                continue
            cons = th[k][1]
            for s in lts:
                prod = last_before(s, c.ts) if s != runs[cons].stream else None
                if prod is not None:
                    candidates.append((prod, cons, "event"))
        elif c.name in _HOST_SYNC:
            end = c.ts + c.dur
            prods = [
                p
                for s in lts
                if (p := last_before(s, c.ts)) is not None and runs[p].actual_end <= end + _EPS
            ]
            conss = [q for s in lts if (q := first_after(s, end)) is not None]
            candidates += [
                (p, q, "host") for p in prods for q in conss if runs[p].stream != runs[q].stream
            ]
    return _accept(runs, candidates)


def _accept(runs: list[_Run], candidates: list[tuple[int, int, str]]) -> int:
    """Add each candidate edge ``p -> q`` (kind) that the measured starts allow and that
    closes no cycle; return how many were dropped.

    Every edge kept has ``q`` start no earlier than ``p``'s start plus its busy time, less
    ``_EPS``, so a path back from ``q`` to ``p`` needs ``q`` to start within ``_EPS`` per
    edge of ``p``: only then is the search for one made. (It had been made only for edges
    against the run order, yet zero-time runs starting together can close a cycle with an
    edge along it, after one against it was kept.)

    >>> runs = [_Run(key=i, stream=i) for i in range(2)]  # zero-time, both at 0
    >>> _accept(runs, [(1, 0, "event"), (0, 1, "event")]), runs[0].deps, runs[1].deps
    (1, {1: 'event'}, {})
    """
    dropped = 0
    near = len(runs) * _EPS
    for p, q, kind in candidates:
        if p == q or p in runs[q].deps:
            continue
        rp, rq = runs[p], runs[q]
        if rq.start + _EPS < rp.start + rp.busy or (
            (p > q or rq.start <= rp.start + near) and _reaches(runs, p, q)
        ):
            dropped += 1
            continue
        rq.deps[p] = kind
    return dropped


def _reaches(runs: list[_Run], src: int, dst: int) -> bool:
    """True if ``dst`` is an ancestor of ``src`` (adding src -> dst would close a cycle)."""
    seen, todo = {src}, [src]
    while todo:
        v = todo.pop()
        for u in runs[v].deps:
            if u == dst:
                return True
            if u not in seen:
                seen.add(u)
                todo.append(u)
    return False


def _ops(t: TraceData, runs: list[_Run], origin: float) -> list[Op]:
    fk = FrameKinds(t)
    ops = []
    for r in runs:
        acts = [la.gpu for la in r.launches]
        attrs: dict[str, Any] = {
            "stream": r.stream,
            "start_us": round(min(g.ts for g in acts) - origin, 3),
            "gpu_time_us": r.busy,
            "span_us": round(r.actual_end - min(g.ts for g in acts), 3),
            "n_kernels": sum(g.kind == "kernel" for g in acts),
        }
        for kind_name in ("memcpy", "memset"):
            if n := sum(g.kind == kind_name for g in acts):
                attrs[f"n_{kind_name}"] = n
        attrs["kernels"] = list(dict.fromkeys(g.name[:120] for g in acts))[:4]
        if any(g.triton for g in acts):
            attrs["triton"] = True
        kind: str | None = None
        shape: dict[str, Any] = {}
        out_bytes = 0
        if isinstance(r.key, int):
            op = t.cpu_ops[r.key]
            attrs["aten_op"] = op.name
            scope = [
                t.cpu_ops[i].name
                for i in stack_of(t, op.parent)
                if is_wrapper(t.cpu_ops[i]) and not t.cpu_ops[i].name.startswith("ProfilerStep#")
            ]
            if scope:
                attrs["scope"] = scope
            if op.dims is not None:
                attrs["input_dims"] = op.dims
                attrs["input_types"] = op.types
            leaves = {t.cpu_ops[la.leaf].name for la in r.launches if la.leaf >= 0}
            kind, shape = fk.kind(r.key, leaves)
            inner = kernel_dtype(t, r.launches) if kind is not None else None
            if inner is not None and "dtype" in shape and inner[0] != shape["dtype"]:
                # autocast: the kernels ran in the inner op's dtype (opkind.kernel_dtype)
                shape["dtype"], attrs["dtype_from"] = inner
            if kind is not None:
                out_bytes = K.output_numel(kind, shape) * K.dtype_bytes(shape)
        kept = kept_launches(acts) if kind is None else None
        if kept is not None:
            # no shapes give its kind and it copies nothing: keep each kernel's launch, which
            # prices the kernels whose grid follows their size (opsched.cost.launch)
            attrs["launches"] = kept
        attrs["dep_kinds"] = {runs[p].name: k for p, k in sorted(r.deps.items())}
        ops.append(
            Op(
                r.name,
                r.busy,
                deps=tuple(runs[p].name for p in sorted(r.deps)),
                output_bytes=out_bytes,
                kind=kind,
                attrs=attrs | shape,
            )
        )
    return ops

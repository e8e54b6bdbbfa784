"""Expanding an experiment into jobs: graphs x machines x schedulers.

Every job has a stable id, a hash of the experiment name, the graph's content and name, the
machine (units, memory-cap setting, resources) and the scheduler settings. The same file
expanded again gives the same ids (whatever the order of its lists), which is how a rerun
knows what is already finished. Jobs of one *instance* (same graph and machine) share an
``instance_id``: the report compares schedulers per instance.

Memory caps given as fractions stay fractions here; the worker turns them into bytes from
the unconstrained peak (the b-level greedy schedule without a cap on the same units), so
every scheduler of an instance gets the same cap. Known optima from the built-in tables
(STG on 2/4/8/16 processors, PSPLIB J30) are attached to jobs without a memory cap.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from opsched.errors import InputError, OpschedError
from opsched.experiments.config import ExperimentConfig, GraphSource, MemoryCap, resolve_glob
from opsched.ir.graph import OpGraph

__all__ = ["GraphItem", "Job", "expand_jobs", "load_graphs"]


@dataclass(frozen=True)
class GraphItem:
    """A graph an experiment uses, with where it came from."""

    graph: OpGraph
    source: str  #: e.g. ``file:datasets/stg/50/rand0000.stg``, ``layered:ops=24,seed=3``
    label: str  #: the set it belongs to (``[[graphs]] label`` or derived)
    path: Path | None = None
    digest: str = ""

    @property
    def name(self) -> str:
        return self.graph.name


@dataclass(frozen=True)
class Job:
    """One scheduler run on one graph and machine."""

    job_id: str
    instance_id: str
    experiment: str
    set_label: str
    graph: str
    graph_hash: str
    graph_source: str
    num_ops: int
    units: int | None
    cap_fraction: float | None
    cap_bytes: int | None
    resources: dict[str, int] = field(default_factory=dict)
    scheduler: str = "greedy"
    exact: bool = False
    time_limit: float = 10.0
    objective: str = "makespan"
    num_workers: int = 1
    known_lb: float | None = None
    known_ub: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _digest(obj: Any, n: int = 16) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def _located(e: OpschedError, cfg: ExperimentConfig, src: GraphSource) -> InputError:
    return InputError(str(e), f"{cfg.source}: {src.where}")


def load_graphs(cfg: ExperimentConfig, base: Path | None = None) -> list[GraphItem]:
    """Read, generate or build every graph of ``cfg`` (relative globs from ``base``/cwd)."""
    from opsched.datasets import dataset_path
    from opsched.importers import read_graph
    from opsched.zoo import gnp, layered

    base = Path.cwd() if base is None else base
    out: list[GraphItem] = []
    for src in cfg.graphs:
        key = f"{src.where}.{src.kind}"
        try:
            if src.kind in ("files", "dataset"):
                root = base if src.kind == "files" else dataset_path()
                paths = resolve_glob(src.value, root)
                if not paths:
                    raise InputError(f"no file matches {src.value!r} (in {root})", key)
                label = src.label or _glob_label(src.value)
                for p in paths:
                    g = read_graph(p)
                    out.append(GraphItem(g, f"{src.kind}:{_rel(p, root)}", label, p.resolve()))
            elif src.kind == "generate":
                for k in range(src.count):
                    seed = src.seed + k
                    if src.value == "layered":
                        g = layered(src.ops, seed=seed)
                        desc = f"layered:ops={src.ops},seed={seed}"
                    else:
                        g = gnp(src.ops, src.p, seed=seed)
                        desc = f"gnp:ops={src.ops},p={src.p:g},seed={seed}"
                    out.append(GraphItem(g, desc, src.label or f"{src.value}-{src.ops}"))
            else:
                g = _zoo(src.value, src.batch)
                out.append(GraphItem(g, f"zoo:{src.value},batch={src.batch}", src.label or "zoo"))
        except InputError as e:
            if e.where and e.where.startswith(src.where):
                raise InputError(e.message, f"{cfg.source}: {e.where}") from None
            raise _located(e, cfg, src) from None
        except OpschedError as e:
            raise _located(e, cfg, src) from None
    return [
        GraphItem(it.graph, it.source, it.label, it.path, _digest(it.graph.to_dict(), 24))
        for it in out
    ]


def _zoo(name: str, batch: int) -> OpGraph:
    try:
        from opsched.zoo import models
    except ImportError:
        raise InputError(
            "the model zoo (opsched.zoo.models) is not available in this build"
        ) from None
    g = models.build(name, batch=batch)
    if not isinstance(g, OpGraph):
        raise InputError(f"zoo model {name!r} did not build an OpGraph")
    return g


def _glob_label(pattern: str) -> str:
    parts = [p for p in Path(pattern).parts[:-1] if not any(c in p for c in "*?[")]
    return "/".join(parts[-2:]) if parts else Path(pattern).stem


def _rel(p: Path, root: Path) -> str:
    try:
        return str(p.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(p)


def expand_jobs(
    cfg: ExperimentConfig,
    graphs: list[GraphItem],
    left_out: dict[tuple[str, str], int] | None = None,
) -> list[Job]:
    """Every (graph, units, memory cap, scheduler) combination of ``cfg`` as a :class:`Job`.

    A combination the scheduler cannot take (``downsets`` without a memory cap,
    ``brute-force`` on a graph of more than 10 ops: :attr:`opsched.registry.SolverInfo.refuses`)
    is no job; ``left_out``, when given, counts them by (scheduler, reason).

    Examples
    --------
    >>> from opsched.experiments.config import parse_config
    >>> cfg = parse_config('''
    ... [experiment]
    ... name = "doc"
    ... [[graphs]]
    ... generate = "gnp"
    ... ops = 8
    ... count = 3
    ... [machines]
    ... units = [2, 4]
    ... [schedulers]
    ... names = ["greedy", "cpsat"]
    ... ''')
    >>> jobs = expand_jobs(cfg, load_graphs(cfg))
    >>> len(jobs), len({j.instance_id for j in jobs}), jobs[0].job_id == expand_jobs(
    ...     cfg, load_graphs(cfg))[0].job_id
    (12, 6, True)
    """
    from opsched import registry

    ms = cfg.machines
    sc = cfg.schedulers
    jobs: list[Job] = []
    seen: set[str] = set()
    for item in graphs:
        for units in ms.units:
            for cap in ms.memory_caps:
                frac, capb = _split_cap(cap)
                inst = _digest([item.digest, item.name, units, frac, capb, dict(ms.resources)])
                known = _known_optimum(item, units, cap, dict(ms.resources), sc.objective)
                for name in sc.names:
                    ident = [cfg.name, inst, name, sc.time_limit, sc.objective, sc.num_workers]
                    job_id = _digest(ident)
                    if job_id in seen:  # the same graph listed twice: one job
                        continue
                    seen.add(job_id)
                    solver = registry.get_solver(name)
                    why = solver.refuses and solver.refuses(
                        units, cap is not None, sc.objective, item.graph.num_ops
                    )
                    if not solver.exact and sc.objective != "makespan":  # it would ignore it
                        why = f"objective {sc.objective} (it minimises the makespan)"
                    if why:
                        if left_out is not None:
                            left_out[(name, why)] = left_out.get((name, why), 0) + 1
                        continue
                    jobs.append(
                        Job(
                            job_id=job_id,
                            instance_id=inst,
                            experiment=cfg.name,
                            set_label=item.label,
                            graph=item.name,
                            graph_hash=item.digest,
                            graph_source=item.source,
                            num_ops=item.graph.num_ops,
                            units=units,
                            cap_fraction=frac,
                            cap_bytes=capb,
                            resources=dict(ms.resources),
                            scheduler=name,
                            exact=registry.get_solver(name).exact,
                            time_limit=sc.time_limit,
                            objective=sc.objective,
                            num_workers=sc.num_workers,
                            known_lb=known[0] if known else None,
                            known_ub=known[1] if known else None,
                        )
                    )
    return jobs


def _split_cap(cap: MemoryCap) -> tuple[float | None, int | None]:
    if cap is None:
        return None, None
    if isinstance(cap, float):
        return cap, None
    return None, int(cap)


def _known_optimum(
    item: GraphItem, units: int | None, cap: MemoryCap, resources: dict[str, int], objective: str
) -> tuple[int, int] | None:
    """(lb, ub) of the makespan from the built-in tables, when ``item`` is one of theirs."""
    from opsched.datasets import dataset_path, psplib_optima, stg_optima

    if item.path is None or cap is not None or objective != "makespan":
        return None
    try:
        stg_root = dataset_path("stg").resolve()
        j30_root = dataset_path("psplib/j30").resolve()
    except InputError:
        return None
    if item.path.suffix == ".stg" and item.path.parent.parent == stg_root and not resources:
        size = item.path.parent.name
        if units in (2, 4, 8, 16) and size.isdigit():
            try:
                return stg_optima(units, int(size), closures=True).get(item.name)
            except OpschedError:
                return None
    if item.path.parent == j30_root and units is None:
        if resources and any(item.graph.resources.get(k) != v for k, v in resources.items()):
            return None
        best = psplib_optima().get(item.name)
        return (best, best) if best is not None else None
    return None


def iter_payloads(jobs: list[Job], graphs: list[GraphItem]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(job id, what a worker needs to run it) for each job: the job and its graph."""
    by_hash = {g.digest: g.graph.to_dict() for g in graphs}
    for j in jobs:
        yield j.job_id, {"job": j.to_dict(), "graph": by_hash[j.graph_hash]}

"""Experiment files: TOML parsing and validation.

An experiment names graph sources, machines and schedulers; :mod:`opsched.experiments.jobs`
expands their product into jobs. Every mistake is reported on one line naming the file and
the key (``exp.toml: graphs[1].ops: must be an integer >= 1, got 0``), before anything runs.

The format (see ``docs/experiments.md`` for the full reference)::

    [experiment]
    name = "quick"

    [[graphs]]
    files = "datasets/stg/50/rand000*.stg"   # a glob, relative to the current directory
    [[graphs]]
    dataset = "psplib/j30/j301_*.sm"         # a glob inside the built-in datasets
    [[graphs]]
    generate = "layered"                     # or "gnp" (with p = edge probability)
    ops = 24
    count = 5
    seed = 0
    [[graphs]]
    zoo = "resnet18"                         # opsched.zoo.models.build(name, batch=1)

    [machines]
    units = [2, 4]                           # or "unlimited"
    memory_cap = [1.0, 0.8, "8GiB", "none"]  # fractions of the unconstrained peak, or sizes
    resources = { R1 = 10 }                  # optional capacities

    [schedulers]
    names = ["cpsat", "greedy-blevel"]
    time_limit = 10                          # seconds per job

Examples
--------
>>> cfg = parse_config('''
... [experiment]
... name = "tiny"
... [[graphs]]
... generate = "layered"
... ops = 10
... count = 2
... [machines]
... units = [2]
... memory_cap = [1.0, "none"]
... [schedulers]
... names = ["greedy"]
... time_limit = 5
... ''')
>>> cfg.name, cfg.graphs[0].count, cfg.machines.memory_caps, cfg.schedulers.names
('tiny', 2, (1.0, None), ('greedy',))
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opsched._files import read_text
from opsched.errors import InputError, OpschedError
from opsched.ir.graph import MAX_SIZE
from opsched.problem import Objective
from opsched.solver.defaults import check_workers
from opsched.units import parse_bytes

__all__ = [
    "ExperimentConfig",
    "GraphSource",
    "MachineGrid",
    "SchedulerSpec",
    "load_config",
    "parse_config",
]

MemoryCap = float | int | None  # float: fraction of the unconstrained peak; int: bytes


@dataclass(frozen=True)
class GraphSource:
    """One ``[[graphs]]`` entry: ``kind`` is ``files``, ``dataset``, ``generate`` or ``zoo``."""

    kind: str
    value: str
    ops: int = 0
    count: int = 1
    seed: int = 0
    p: float = 0.1
    batch: int = 1
    label: str = ""
    where: str = ""


@dataclass(frozen=True)
class MachineGrid:
    """``[machines]``: every combination of ``units`` and ``memory_caps`` is one machine."""

    units: tuple[int | None, ...] = (1,)
    memory_caps: tuple[MemoryCap, ...] = (None,)
    resources: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SchedulerSpec:
    """``[schedulers]``: names looked up in :mod:`opsched.registry`, limits per job."""

    names: tuple[str, ...]
    time_limit: float = 10.0
    objective: str = "makespan"
    num_workers: int = 1


@dataclass(frozen=True)
class ExperimentConfig:
    """A validated experiment file."""

    name: str
    graphs: tuple[GraphSource, ...]
    machines: MachineGrid
    schedulers: SchedulerSpec
    description: str = ""
    source: str = "<string>"
    text: str = ""


def load_config(path: str | os.PathLike[str]) -> ExperimentConfig:
    """Read and validate an experiment file; errors name the file and the key."""
    return parse_config(read_text(path), str(path))


def parse_config(text: str, source: str = "<string>") -> ExperimentConfig:
    """Validate the TOML text of an experiment (``source`` names it in errors)."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"not valid TOML: {e}", source) from None
    known = {"experiment", "graphs", "machines", "schedulers"}
    _no_unknown(doc, known, "", source)
    exp = _table(doc, "experiment", source, required=True)
    _no_unknown(exp, {"name", "description"}, "experiment.", source)
    name = _string(exp, "name", "experiment.name", source, required=True)
    graphs_raw = doc.get("graphs")
    if not isinstance(graphs_raw, list) or not graphs_raw:
        raise InputError("graphs: need at least one [[graphs]] table", source)
    graphs = tuple(_graph(g, i, source) for i, g in enumerate(graphs_raw))
    return ExperimentConfig(
        name=name,
        graphs=graphs,
        machines=_machines(_table(doc, "machines", source, required=True), source),
        schedulers=_schedulers(_table(doc, "schedulers", source, required=True), source),
        description=_string(exp, "description", "experiment.description", source) or "",
        source=source,
        text=text,
    )


def _err(source: str, key: str, message: str) -> InputError:
    return InputError(message, f"{source}: {key}")


def _no_unknown(table: Mapping[str, Any], known: set[str], prefix: str, source: str) -> None:
    for k in table:
        if k not in known:
            raise _err(source, f"{prefix}{k}", f"unknown key; expected one of {sorted(known)}")


def _table(doc: Mapping[str, Any], key: str, source: str, required: bool) -> dict[str, Any]:
    v = doc.get(key)
    if v is None:
        if required:
            raise _err(source, key, f"missing [{key}] table")
        return {}
    if not isinstance(v, dict):
        raise _err(source, key, "must be a table")
    return v


def _string(t: Mapping[str, Any], key: str, where: str, source: str, required: bool = False) -> str:
    v = t.get(key)
    if v is None and not required:
        return ""
    if not isinstance(v, str) or not v.strip():
        raise _err(source, where, f"must be a non-empty string, got {v!r}")
    return v


#: Most graphs one ``generate`` source may ask for: the runs of an experiment are listed
#: before any starts, so a count of a trillion had filled memory instead of failing.
MAX_COUNT = 1_000_000


def _int(
    t: Mapping[str, Any], key: str, where: str, source: str, default: int, lo: int,
    hi: int = 2**40,  # far past any graph that fits in memory, and past C integers
) -> int:  # fmt: skip
    v = t.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise _err(source, where, f"must be an integer >= {lo}, got {v!r}")
    if v > hi:
        raise _err(source, where, f"must be at most {'2^40' if hi == 2**40 else hi}, got {v!r}")
    return v


def _graph(raw: Any, i: int, source: str) -> GraphSource:
    where = f"graphs[{i}]"
    if not isinstance(raw, dict):
        raise _err(source, where, "must be a table")
    kinds = [k for k in ("files", "dataset", "generate", "zoo") if k in raw]
    if len(kinds) != 1:
        raise _err(source, where, "needs exactly one of files, dataset, generate, zoo")
    kind = kinds[0]
    extra = {
        "files": set(),
        "dataset": set(),
        "generate": {"ops", "count", "seed", "p"},
        "zoo": {"batch"},
    }[kind]
    _no_unknown(raw, {kind, "label"} | extra, f"{where}.", source)
    value = _string(raw, kind, f"{where}.{kind}", source, required=True)
    label = _string(raw, "label", f"{where}.label", source)
    if kind == "generate":
        if value not in ("layered", "gnp"):
            raise _err(source, f"{where}.generate", f"must be 'layered' or 'gnp', got {value!r}")
        if "ops" not in raw:
            raise _err(source, f"{where}.ops", "missing (number of ops per graph)")
        p = raw.get("p", 0.1)
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
            raise _err(source, f"{where}.p", f"must be a number in [0, 1], got {p!r}")
        if "p" in raw and value != "gnp":
            raise _err(source, f"{where}.p", "only applies to generate = 'gnp'")
        return GraphSource(
            kind,
            value,
            ops=_int(raw, "ops", f"{where}.ops", source, 0, 1),
            count=_int(raw, "count", f"{where}.count", source, 1, 1, MAX_COUNT),
            seed=_int(raw, "seed", f"{where}.seed", source, 0, 0),
            p=float(p),
            label=label,
            where=where,
        )
    batch = _int(raw, "batch", f"{where}.batch", source, 1, 1) if kind == "zoo" else 1
    return GraphSource(kind, value, batch=batch, label=label, where=where)


def _as_list(
    t: Mapping[str, Any], key: str, source: str, default: list[Any], section: str
) -> list[Any]:
    v = t.get(key, default)
    if not isinstance(v, list):
        v = [v]
    if not v:
        raise _err(source, f"{section}.{key}", "must not be empty")
    return v


def _machines(t: Mapping[str, Any], source: str) -> MachineGrid:
    _no_unknown(t, {"units", "memory_cap", "resources"}, "machines.", source)
    units: list[int | None] = []
    for j, u in enumerate(_as_list(t, "units", source, [1], "machines")):
        if u == "unlimited":
            units.append(None)
        elif isinstance(u, bool) or not isinstance(u, int) or u < 1:
            raise _err(
                source,
                f"machines.units[{j}]",
                f"must be an integer >= 1 or 'unlimited', got {u!r}",
            )
        else:
            units.append(u)
    caps: list[MemoryCap] = []
    for j, c in enumerate(_as_list(t, "memory_cap", source, ["none"], "machines")):
        caps.append(_cap(c, f"machines.memory_cap[{j}]", source))
    res_raw = t.get("resources", {})
    if not isinstance(res_raw, dict):
        raise _err(source, "machines.resources", "must be a table of NAME = CAPACITY")
    res: dict[str, int] = {}
    for k, v in res_raw.items():
        if k == "units":  # the machine's own count: [machines] units sets it
            raise _err(source, "machines.resources.units", "is reserved; set machines.units")
        if not k.strip():  # the machine refuses it in every job, each stored as an ERROR
            raise _err(source, "machines.resources", "a resource name must not be empty")
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise _err(source, f"machines.resources.{k}", f"must be an integer >= 0, got {v!r}")
        if v > MAX_SIZE:  # as for the empty name: every job had failed, none was refused
            raise _err(source, f"machines.resources.{k}", f"must be at most 2^62, got {v!r}")
        res[k] = v
    return MachineGrid(_unique(units), _unique(caps), res)


def _cap(c: Any, where: str, source: str) -> MemoryCap:
    if isinstance(c, str) and c.strip().lower() == "none":
        return None
    if isinstance(c, float) or (isinstance(c, int) and not isinstance(c, bool) and c <= 10):
        if not math.isfinite(c) or c <= 0 or c > 10:
            raise _err(source, where, f"a fraction of the peak must be in (0, 10], got {c!r}")
        return float(c)
    if isinstance(c, str):
        try:
            return parse_bytes(c)
        except OpschedError as e:
            raise _err(source, where, e.message) from None
    raise _err(source, where, f"must be a fraction (0.8), a size ('8GiB') or 'none', got {c!r}")


def _unique(xs: list[Any]) -> tuple[Any, ...]:
    """``xs`` without repeats, in order; values of different types are different: a cap of
    1.0 (all of the peak) and one of 1 byte compare equal in Python, and one had been lost."""
    out: list[Any] = []
    seen: set[tuple[type, Any]] = set()
    for x in xs:
        if (type(x), x) not in seen:
            seen.add((type(x), x))
            out.append(x)
    return tuple(out)


def _schedulers(t: Mapping[str, Any], source: str) -> SchedulerSpec:
    from opsched import registry  # looked up now: the registry grows while opsched does

    _no_unknown(t, {"names", "time_limit", "objective", "workers"}, "schedulers.", source)
    names = _as_list(t, "names", source, [], "schedulers")
    for j, n in enumerate(names):
        if not isinstance(n, str) or n not in registry.SOLVERS:
            raise _err(
                source,
                f"schedulers.names[{j}]",
                f"unknown scheduler {n!r}; known: {', '.join(sorted(registry.SOLVERS))}",
            )
    tl = t.get("time_limit", 10.0)
    if isinstance(tl, bool) or not isinstance(tl, int | float) or not 0 < tl < math.inf:
        raise _err(source, "schedulers.time_limit", f"must be a number of seconds > 0, got {tl!r}")
    obj = t.get("objective", "makespan")
    # a list or table is no name (and, unhashable, had failed the set lookup with a TypeError)
    if not isinstance(obj, str) or obj not in {o.value for o in Objective}:
        known = ", ".join(o.value for o in Objective)
        raise _err(source, "schedulers.objective", f"unknown objective {obj!r}; known: {known}")
    workers = _int(t, "workers", "schedulers.workers", source, 1, 1)
    try:
        check_workers(workers, "workers")
    except OpschedError as e:
        raise _err(source, "schedulers.workers", e.message) from None
    return SchedulerSpec(_unique(list(names)), float(tl), obj, workers)


def resolve_glob(pattern: str, base: Path) -> list[Path]:
    """Files matching ``pattern`` (relative to ``base`` unless absolute), sorted."""
    p = Path(pattern)
    if p.is_absolute():
        root, rel = Path(p.anchor), str(p.relative_to(p.anchor))
    else:
        root, rel = base, pattern
    return sorted(q for q in root.glob(rel) if q.is_file())

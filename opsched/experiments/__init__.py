"""Batch experiments: graphs x machines x schedulers, run locally or on Dask, stored in SQLite.

>>> from opsched.experiments import load_results, run_experiment  # doctest: +SKIP

See ``docs/experiments.md``: the TOML format, ``opsched bench``, ``opsched results`` and how
to run on a SLURM cluster through dask-jobqueue.
"""

from typing import TYPE_CHECKING

from opsched._lazy import lazy_exports

#: Loaded on first use (:mod:`opsched._lazy`), so that the command line's modules here import
#: only what a command needs.
_LAZY: dict[str, str] = {
    "ExperimentConfig": "opsched.experiments.config",
    "Job": "opsched.experiments.jobs",
    "ResultStore": "opsched.experiments.store",
    "RunSummary": "opsched.experiments.runner",
    "expand_jobs": "opsched.experiments.jobs",
    "load_config": "opsched.experiments.config",
    "load_graphs": "opsched.experiments.jobs",
    "load_results": "opsched.experiments.store",
    "parse_config": "opsched.experiments.config",
    "run_experiment": "opsched.experiments.runner",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from opsched.experiments.config import ExperimentConfig, load_config, parse_config
    from opsched.experiments.jobs import Job, expand_jobs, load_graphs
    from opsched.experiments.runner import RunSummary, run_experiment
    from opsched.experiments.store import ResultStore, load_results


__all__ = [
    "ExperimentConfig",
    "Job",
    "ResultStore",
    "RunSummary",
    "expand_jobs",
    "load_config",
    "load_graphs",
    "load_results",
    "parse_config",
    "run_experiment",
]

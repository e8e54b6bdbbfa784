"""Batch experiments: graphs x machines x schedulers, run locally or on Dask, stored in SQLite.

>>> from opsched.experiments import load_results, run_experiment  # doctest: +SKIP

See ``docs/experiments.md``: the TOML format, ``opsched bench``, ``opsched results`` and how
to run on a SLURM cluster through dask-jobqueue.
"""

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

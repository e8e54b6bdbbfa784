"""Defaults shared by the exact solver and its command line (no heavy imports here).

``DEFAULT_WORKERS`` and ``DEFAULT_SUBSOLVERS``: two CP-SAT threads, both full searches, one
without the LP relaxation (``no_lp``) and one with it (``default_lp``), and no
large-neighbourhood search (LNS): on this project's 2-core reference machine, each search
gets a core. LNS improves schedules but proves nothing, and the heuristic start (greedy,
then list schedules: :mod:`opsched.solver.cpsat.hint`) already starts every search close to
the optimum.

The previous default was four threads and CP-SAT's own choice of searches: three full ones
(``default_lp``, ``fixed``, ``no_lp``) and LNS, each at half a core. Measured on 2 cores,
previous -> this default (``benchmarks/bench_cpsat.py``, docs/cpsat-model.md):

* PSPLIB J30 at 30 s: 477 -> 480 of 480 proven, mean 0.57 -> 0.36 s, slowest 24.9 s (the
  last three, j3013_2, j3029_3 and j3029_6, had taken 26-54 s with four threads);
* STG 50 at 10 s: 718 -> 718 of 720; the 669 published optima mean 0.018 -> 0.018 s, slowest
  0.56 -> 0.36 s;
* STG 100 at 10 s: 718 -> 720 of 720;
* zoo network pieces under memory caps at 60 s (``benchmarks/bench_zoo_memory.py``): 68 -> 70
  of 78.

The one loss: of the 51 STG 50 pairs the published table leaves open, 51 -> 50 proven at 60 s
(rand0110 on 4 processors stays at 67..70; ``benchmarks/stg300_table.py --size 50``).

Two ``no_lp`` searches proved J30 479 / 480 and STG 50 716 / 720: the LP pays on the
processor-only STG graphs (its ``work / k`` bound), the search without it on J30.

Examples
--------
>>> DEFAULT_WORKERS, DEFAULT_SUBSOLVERS
(2, ('no_lp', 'default_lp'))
"""

from __future__ import annotations

import math
import numbers

from opsched.errors import ProblemError

__all__ = [
    "DEFAULT_SUBSOLVERS",
    "DEFAULT_WORKERS",
    "MAX_WORKERS",
    "check_seconds",
    "check_workers",
]

#: Most CP-SAT search threads accepted (CP-SAT itself refuses some 20,000 without a word).
MAX_WORKERS = 1024

DEFAULT_WORKERS = 2
#: CP-SAT full searches, in order; with more workers than names CP-SAT repeats them.
DEFAULT_SUBSOLVERS: tuple[str, ...] = ("no_lp", "default_lp")


def check_workers(value: int, name: str = "num_workers") -> int:
    """``value`` as a count of search threads: an integer from 1 to :data:`MAX_WORKERS`
    (CP-SAT refuses anything else without saying why).

    >>> check_workers(2)
    2
    >>> check_workers(0)
    Traceback (most recent call last):
    opsched.errors.ProblemError: num_workers must be an integer >= 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ProblemError(f"{name} must be an integer >= 1, got {value!r}")
    if value > MAX_WORKERS:
        raise ProblemError(f"{name} must be at most {MAX_WORKERS}, got {value!r}")
    return int(value)


def check_seconds(value: float, name: str = "time_limit") -> float:
    """``value`` as a time limit: a positive, finite number of seconds (a NaN deadline never
    passes, so a search given one would not stop).

    >>> check_seconds(2)
    2.0
    >>> check_seconds(float("nan"))
    Traceback (most recent call last):
    opsched.errors.ProblemError: time_limit must be a positive, finite number of seconds, got nan
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProblemError(f"{name} must be a number of seconds, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ProblemError(f"{name} must be a positive, finite number of seconds, got {value!r}")
    return float(value)

"""Defaults shared by the exact solver and its command line (no heavy imports here).

``DEFAULT_WORKERS``: CP-SAT search threads. Four, on this project's 2-core reference
machine: with 2 threads CP-SAT runs a single full search (``default_lp``) and gives the
other thread to large-neighbourhood search, which finds schedules but proves nothing; with 4
it runs three full searches (``default_lp``, ``fixed``, ``no_lp``) beside it. Measured on 2
cores (``benchmarks/bench_cpsat.py``, docs/cpsat-model.md): PSPLIB J30 at 30 s, 474 -> 477
of 480 proven (mean 0.68 -> 0.57 s); STG 50 at 10 s, 717 -> 718 of 720, the 669 published
optima mean 0.023 -> 0.018 s, the 51 instances the table leaves open 48 -> 50 closed at 60 s.
Losses: STG 100 at 10 s 719 -> 718, zoo pieces under memory caps at 60 s 67 -> 65 of 78
(proofs landing just before or after the limit, in both directions; with the least tensor
lifetimes added since, 4 workers prove 68).

Examples
--------
>>> DEFAULT_WORKERS
4
"""

from __future__ import annotations

__all__ = ["DEFAULT_WORKERS"]

DEFAULT_WORKERS = 4

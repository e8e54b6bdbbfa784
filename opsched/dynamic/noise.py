"""Noise models: actual op durations sampled around the estimates.

Every model draws a ``(runs, ops)`` matrix of actual durations from
``numpy.random.default_rng(seed)``, so the same seed gives the same numbers, and every
candidate compared on one seed sees the same draws (common random numbers: differences
between candidates are not sampling noise). Zero-duration ops stay zero.

:class:`Lognormal`
    ``actual = estimate * exp(sigma * Z - sigma^2 / 2)``, ``Z`` standard normal: the mean is
    the estimate, the median a little below, the spread ``sigma`` per op (one value, per op
    name, or per op kind, e.g. the cost model's error on that kind).
:class:`RelativeError`
    ``actual = estimate * (1 + e * U)``, ``U`` uniform on ``[-1, 1]``: a given relative error
    ``e < 1``, bounded both ways.
:class:`Empirical`
    ``actual = estimate * ratio``, the ratio drawn from measured/predicted ratios (e.g. the
    cost model's held-out errors).

Examples
--------
>>> from opsched.ir import Op, OpGraph
>>> g = OpGraph((Op("a", 2), Op("b", 0), Op("c", 4)))
>>> d = sample_durations(g, Lognormal(0.1), runs=3, seed=0)
>>> again = sample_durations(g, Lognormal(0.1), runs=3, seed=0)
>>> d.shape, bool((d[:, 1] == 0).all()), bool((again == d).all())
((3, 3), True, True)
>>> sample_durations(g, Lognormal(0.0), runs=1, seed=5).tolist()
[[2.0, 0.0, 4.0]]
>>> sample_durations(g, Empirical([1.5]), runs=1, seed=0).tolist()
[[3.0, 0.0, 6.0]]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from opsched.errors import ProblemError
from opsched.ir.graph import OpGraph

__all__ = ["Empirical", "Lognormal", "NoiseModel", "RelativeError", "sample_durations"]


class NoiseModel(Protocol):
    """Anything that turns estimated durations into sampled actual ones."""

    def factors(self, graph: OpGraph, runs: int, rng: np.random.Generator) -> np.ndarray:
        """Multipliers of shape ``(runs, graph.num_ops)``."""
        ...


#: The largest lognormal spread taken: at sigma 5 the median duration is already e^-12.5 of
#: the estimate (the mean is kept by a few huge draws), and past about 38 every draw
#: underflows to zero, so larger spreads only report makespans of 0.
MAX_SPREAD = 5.0


def _check_spread(x: float, what: str) -> float:
    if not (isinstance(x, int | float) and math.isfinite(x) and 0 <= x <= MAX_SPREAD):
        raise ProblemError(f"{what} must be a number in [0, {MAX_SPREAD:g}], got {x!r}")
    return float(x)


@dataclass(frozen=True)
class Lognormal:
    """Mean-preserving lognormal noise; ``spread`` is sigma of the log (0.1: about 10 %).

    ``per_op`` (name -> sigma) overrides ``per_kind`` (op kind -> sigma), which overrides
    ``spread``.
    """

    spread: float = 0.1
    per_op: Mapping[str, float] = field(default_factory=dict)
    per_kind: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_spread(self.spread, "noise spread")
        for k, v in {**self.per_kind, **self.per_op}.items():
            _check_spread(v, f"noise spread of {k!r}")

    def sigmas(self, graph: OpGraph) -> np.ndarray:
        """Sigma of every op (graph order)."""
        unknown = [n for n in self.per_op if n not in graph]
        if unknown:
            raise ProblemError(f"noise per_op names op(s) not in the graph: {unknown[:5]}")
        return np.array(
            [
                self.per_op.get(op.name, self.per_kind.get(op.kind or "", self.spread))
                for op in graph.ops
            ],
            dtype=np.float64,
        )

    def factors(self, graph: OpGraph, runs: int, rng: np.random.Generator) -> np.ndarray:
        s = self.sigmas(graph)
        z = rng.standard_normal((runs, graph.num_ops))
        return np.exp(s * z - 0.5 * s * s)


@dataclass(frozen=True)
class RelativeError:
    """Uniform relative error: each op takes ``estimate * (1 + error * U[-1, 1])``."""

    error: float = 0.1

    def __post_init__(self) -> None:
        if not 0 <= _check_spread(self.error, "relative error") < 1:
            raise ProblemError(f"relative error must be below 1, got {self.error!r}")

    def factors(self, graph: OpGraph, runs: int, rng: np.random.Generator) -> np.ndarray:
        return 1.0 + self.error * rng.uniform(-1.0, 1.0, (runs, graph.num_ops))


@dataclass(frozen=True)
class Empirical:
    """Ratios actual / estimate drawn (with replacement) from observed ones."""

    ratios: Sequence[float]

    def __post_init__(self) -> None:
        r = np.asarray(self.ratios, dtype=np.float64)
        if r.ndim != 1 or not len(r) or not np.isfinite(r).all() or (r <= 0).any():
            raise ProblemError("empirical noise needs one or more finite ratios > 0")

    def factors(self, graph: OpGraph, runs: int, rng: np.random.Generator) -> np.ndarray:
        r = np.asarray(self.ratios, dtype=np.float64)
        return r[rng.integers(0, len(r), (runs, graph.num_ops))]


def sample_durations(
    graph: OpGraph,
    noise: NoiseModel,
    runs: int,
    seed: int = 0,
    decimals: int | None = None,
) -> np.ndarray:
    """Actual durations, shape ``(runs, ops)``, from ``numpy.random.default_rng(seed)``.

    Parameters
    ----------
    graph
        Its durations are the estimates.
    noise
        A :class:`NoiseModel`.
    runs
        Number of sampled executions.
    seed
        Same seed, same matrix.
    decimals
        Round to this many decimals (e.g. so that CP-SAT's integer scaling is exact for the
        clairvoyant optimum); no rounding by default. An op that takes time never rounds to
        0 (it would then hold no unit, resource or workspace): it takes at least
        ``10 ** -decimals``.
    """
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ProblemError(f"runs must be an integer >= 1, got {runs!r}")
    if not callable(getattr(noise, "factors", None)):
        raise TypeError(
            f"noise must be a noise model (Lognormal(0.1), RelativeError(0.2), Empirical(...)), "
            f"got {type(noise).__name__}"
        )
    rng = np.random.default_rng(seed)
    d = graph.durations[None, :] * noise.factors(graph, runs, rng)
    if decimals is not None:
        d = np.maximum(np.round(d, decimals), 10.0**-decimals)
    return np.where(graph.durations[None, :] > 0, d, 0.0)

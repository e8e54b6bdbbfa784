"""The kernel launch floor: no GPU kernel finishes faster than a few microseconds.

The calibrated curve is log-linear in the roofline time, so it keeps falling below any time a
real kernel takes as an op shrinks (a 2 x 2 x 2 GEMM: 0.012 us on an A100). Measured kernel
times stop falling at a floor: launch, the block scheduler and the kernel's own prologue and
epilogue, ~1-3 us in the data (Vidur ``kernel`` rows, profiler ``cupti`` rows).

The floor of a GPU is a low quantile (:data:`FLOOR_QUANTILE`) of the kernel-timed rows of its
*tiny* ops (roofline under :data:`TINY_ROOFLINE_US`), over all families together. A GPU
without enough such rows gets the *pooled* floor, the median of the per-GPU floors (one vote
per GPU, so the trace with the most tiny kernels does not decide alone), unless GPUs of its
architecture (compute capability) have floors: then their median (:func:`floor_of`). The
floor is not scaled by the specs: it is a latency, and in the data it does not follow SM
count, bandwidth or peak (the H100 trace floors at 1 us, the A100 ones at 3 us, the V100 at
1 us).

Every prediction is at least the floor, whatever the timing method: a ``kernel`` / ``cupti``
time is one kernel; an ``events`` / ``wallclock`` time includes one, and its fitted overhead
(18-60 us for PyTorch events) normally lies far above the floor already, but some DeepBench
``wallclock`` overheads fit to 0.

Examples
--------
>>> import numpy as np
>>> t = np.array([3.0, 3.0, 4.0, 5.0, 900.0, 1.0, 1.0, 2.0])
>>> roof = np.array([0.01, 0.02, 0.05, 0.1, 500.0, 0.01, 0.01, 0.03])
>>> gpu = np.array(["A"] * 5 + ["B"] * 3)
>>> floors = fit_floors([(t, roof, gpu, np.full(8, "cupti"))], min_rows=3)
>>> floors["A"], floors["B"], floors["*"]
(3.0, 1.0, 2.0)
>>> apply_floor(np.array([0.012, 250.0]), floors["A"]).tolist()
[3.0, 250.0]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

__all__ = [
    "DEFAULT_FLOOR_US",
    "FAMILY_FLOOR_FAMILIES",
    "FAMILY_FLOOR_METHODS",
    "FAMILY_TINY_ROOFLINE_US",
    "FLOORLESS_FAMILIES",
    "FLOOR_METHODS",
    "FLOOR_QUANTILE",
    "MIN_FAMILY_FLOOR_ROWS",
    "MIN_FLOOR_ROWS",
    "TINY_ROOFLINE_US",
    "apply_floor",
    "fit_family_floors",
    "fit_floors",
    "floor_of",
]

#: Timing methods that measure one kernel alone (the rows a floor is learned from).
FLOOR_METHODS = frozenset({"kernel", "cupti"})
#: Families whose rows teach no floor: a fused attention kernel runs a pipeline of two GEMMs
#: and a softmax per block (5-7 us on the H200 at its smallest timed shapes, roofline under
#: 0.3 us), not a bare launch.
FLOORLESS_FAMILIES = frozenset({"attention"})
#: An op is *tiny* when its roofline time is under this (us): its measured time is the floor.
TINY_ROOFLINE_US = 0.3
#: Quantile of the tiny ops' times taken as the floor (low: a floor must not overshoot).
FLOOR_QUANTILE = 0.05
#: Least tiny kernel-timed rows for a GPU's own floor.
MIN_FLOOR_ROWS = 50
#: Floor when no GPU has kernel-timed rows at all (us).
DEFAULT_FLOOR_US = 1.0
#: Families with a floor of their own above the launch floor: a cuDNN convolution call runs an
#: implicit-GEMM kernel with a long prologue, often beside a layout or reduction kernel; the
#: H200's smallest timed ones take 6-9 us at a roofline under 1 us, against a 1.5 us launch floor.
FAMILY_FLOOR_FAMILIES = frozenset({"conv2d", "conv2d_bwd_data", "conv2d_bwd_filter"})
#: Timings a family floor is learned from: a kernel alone, or back-to-back library calls
#: (DeepBench's loop; our H200 rows replay a CUDA graph), never a call with its dispatch.
FAMILY_FLOOR_METHODS = FLOOR_METHODS | {"wallclock"}
#: An op of such a family is tiny (its time is its floor) under this roofline (us).
FAMILY_TINY_ROOFLINE_US = 1.0
#: Least tiny rows of a family for a GPU's own family floor.
MIN_FAMILY_FLOOR_ROWS = 10

#: One table of rows: (times us, roofline us, gpu, timing method), equal lengths.
Rows = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def fit_floors(
    tables: Iterable[Rows],
    min_rows: int = MIN_FLOOR_ROWS,
    methods: frozenset[str] = FLOOR_METHODS,
    tiny_us: float = TINY_ROOFLINE_US,
    default: float = DEFAULT_FLOOR_US,
) -> dict[str, float]:
    """Kernel floor per GPU with enough tiny kernel-timed rows, and pooled (key ``"*"``).

    Parameters
    ----------
    tables
        Row tables ``(t, roof, gpu, method)`` (one per op family, say); only rows timed by a
        method of ``methods`` with ``roof`` under ``tiny_us`` count.
    min_rows
        Least tiny rows for a GPU's own floor.
    methods, tiny_us
        The timing methods and the roofline (us) of the rows that count.
    default
        The pooled floor when no GPU has enough rows.

    Returns
    -------
    dict
        ``gpu -> floor us`` plus ``"*"``, the median of the per-GPU floors (``default`` when
        there are none).

    Examples
    --------
    >>> t, roof = np.array([2.0, 9.0]), np.array([0.01, 0.02])
    >>> fit_floors([(t, roof, np.array(["A", "A"]), np.array(["events"] * 2))])
    {'*': 1.0}
    """
    by_gpu: dict[str, list[np.ndarray]] = {}
    for t, roof, gpu, method in tables:
        tiny = np.isin(method, list(methods)) & (roof < tiny_us)
        for g in np.unique(gpu[tiny]):
            by_gpu.setdefault(str(g), []).append(t[tiny & (gpu == g)])
    out: dict[str, float] = {}
    for g, parts in sorted(by_gpu.items()):
        times = np.concatenate(parts)
        if times.size >= min_rows:
            out[g] = round(float(np.quantile(times, FLOOR_QUANTILE)), 3)
    pooled = float(np.median(list(out.values()))) if out else default
    return {"*": round(pooled, 3), **out}


def fit_family_floors(
    tables: Mapping[str, Rows], min_rows: int = MIN_FAMILY_FLOOR_ROWS
) -> dict[str, dict[str, float]]:
    """Floors of the :data:`FAMILY_FLOOR_FAMILIES` found in ``tables`` (family -> rows).

    Per family, as :func:`fit_floors` with :data:`FAMILY_FLOOR_METHODS`, rows under
    :data:`FAMILY_TINY_ROOFLINE_US` and at least ``min_rows`` per GPU; the
    pooled floor is 0 (none) when no GPU has enough rows. A GPU takes its floor through
    :func:`floor_of`, as the launch floor.

    Examples
    --------
    >>> t = np.array([6.0, 7.0, 9.0, 30.0])
    >>> roof = np.array([0.3, 0.5, 0.8, 12.0])
    >>> rows = (t, roof, np.array(["H"] * 4), np.array(["wallclock"] * 4))
    >>> fit_family_floors({"conv2d": rows, "matmul": rows}, min_rows=3)
    {'conv2d': {'*': 6.1, 'H': 6.1}}
    """
    out = {}
    for fam in sorted(FAMILY_FLOOR_FAMILIES & set(tables)):
        floors = fit_floors([tables[fam]], min_rows, FAMILY_FLOOR_METHODS,
                            FAMILY_TINY_ROOFLINE_US, default=0.0)  # fmt: skip
        if floors["*"] > 0:
            out[fam] = floors
    return out


def floor_of(
    floors: Mapping[str, float], gpu: str, arch: Mapping[str, str] | None = None
) -> tuple[float, str]:
    """The floor of ``gpu`` and where it came from.

    The GPU's own floor (``fitted``); else, with ``arch`` (GPU -> architecture, e.g. the
    spec table's ``"Ampere sm_80"``), the median floor of the GPUs of the same architecture
    (``architecture``: launch latency is a property of the chip generation and its driver,
    not of the board's SM count or bandwidth); else the pooled floor (``pooled``).

    Examples
    --------
    >>> floors = {"*": 2.0, "T4": 1.5, "A100-SXM4-80GB": 3.0}
    >>> arch = {"A100-SXM4-80GB": "sm_80", "A100-PCIe-40GB": "sm_80", "L4": "sm_89"}
    >>> floor_of(floors, "T4")
    (1.5, 'fitted')
    >>> floor_of(floors, "A100-PCIe-40GB", arch), floor_of(floors, "L4", arch)
    ((3.0, 'architecture'), (2.0, 'pooled'))
    """
    if gpu in floors and gpu != "*":
        return float(floors[gpu]), "fitted"
    if arch is not None and gpu in arch:
        same = [v for g, v in floors.items() if g != "*" and arch.get(g) == arch[gpu]]
        if same:
            return float(np.median(same)), "architecture"
    return float(floors.get("*", DEFAULT_FLOOR_US)), "pooled"


def apply_floor(t: np.ndarray, floor: float) -> np.ndarray:
    """Predicted times raised to at least ``floor`` (NaN, for "no curve", stays NaN).

    Examples
    --------
    >>> apply_floor(np.array([0.5, np.nan, 7.0]), 2.0).tolist()
    [2.0, nan, 7.0]
    """
    return np.where(np.isnan(t), t, np.maximum(t, floor))

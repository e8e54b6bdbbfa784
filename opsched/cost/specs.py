"""GPU datasheet specs: peak throughput by dtype, SM count, memory bandwidth.

The table comes from ``datasets/kernel-timings/gpu_specs.csv`` (one row per board variant).
Each variant gets a short canonical key (``"A100-SXM4-80GB"``, ``"V100-PCIe"``, ``"H200"``...)
and :func:`opsched.cost.gpu_names.resolve_gpu` maps the many spellings found in timing files
and traces (``"NVIDIA A100-PCIE-40GB"``, ``"Tesla V100-DGXS-32GB"``) onto it.

Examples
--------
>>> spec = load_specs()["H100-SXM5"]
>>> spec.sm_count, spec.peak_tflops("float16"), spec.peak_tflops("float32")
(132, 989.4, 66.9)
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from opsched.errors import InputError

__all__ = [
    "GpuSpec",
    "known_gpus",
    "load_specs",
    "parse_specs_csv",
]

#: (gpu, variant) of gpu_specs.csv -> canonical key.
_KEYS: Mapping[tuple[str, str], str] = {
    ("V100", "SXM2 16/32GB"): "V100-SXM2",
    ("V100", "PCIe 16/32GB"): "V100-PCIe",
    ("P100", "PCIe 16GB"): "P100-PCIe",
    ("P4", "PCIe"): "P4",
    ("T4", "PCIe"): "T4",
    ("A100", "SXM4 40GB"): "A100-SXM4-40GB",
    ("A100", "SXM4 80GB"): "A100-SXM4-80GB",
    ("A100", "PCIe 40GB"): "A100-PCIe-40GB",
    ("A100", "PCIe 80GB"): "A100-PCIe-80GB",
    ("A40", "PCIe 48GB"): "A40",
    ("L4", "PCIe 24GB"): "L4",
    ("H100", "SXM5 80GB"): "H100-SXM5",
    ("H100", "PCIe 80GB"): "H100-PCIe",
    ("H200", "SXM 141GB"): "H200",
    ("GTX 1080 Ti", "PCIe"): "GTX-1080-Ti",
    ("Titan Xp", "PCIe"): "Titan-Xp",
    ("Titan X (Pascal)", "PCIe"): "Titan-X-Pascal",
    ("Titan X (Maxwell)", "PCIe"): "Titan-X-Maxwell",
    ("Tesla M40", "PCIe"): "M40",
}


def _num(text: str) -> float | None:
    """Leading number of a spec cell (``"18.7 (non-TC FP16)"`` -> 18.7); None if empty."""
    m = re.match(r"\s*([0-9]+(?:\.[0-9]+)?)", text or "")
    return float(m.group(1)) if m else None


#: L2 cache per GPU in MiB (NVIDIA's architecture whitepapers and datasheets; not a column of
#: ``gpu_specs.csv``, whose rows came without it). A GPU missing here has no L2 size: the
#: elementwise bound that uses it (:func:`opsched.cost.limits.roofline_bound`) is left out.
L2_MIB: Mapping[str, float] = {
    "V100-SXM2": 6, "V100-PCIe": 6, "P100-PCIe": 4, "P4": 2, "T4": 4,
    "A100-SXM4-40GB": 40, "A100-SXM4-80GB": 40, "A100-PCIe-40GB": 40, "A100-PCIe-80GB": 40,
    "A40": 6, "L4": 48, "H100-SXM5": 50, "H100-PCIe": 50, "H200": 50,
    "GTX-1080-Ti": 2.75, "Titan-Xp": 3, "Titan-X-Pascal": 3, "Titan-X-Maxwell": 3, "M40": 3,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """Datasheet numbers of one GPU variant.

    Parameters
    ----------
    key
        Canonical name (``"A100-SXM4-80GB"``).
    name
        The datasheet's product and variant.
    arch
        Architecture and compute capability (``"Ampere sm_80"``).
    sm_count
        Streaming multiprocessors.
    mem_bw_gbps
        Memory bandwidth in GB/s.
    peaks
        Dense peak throughput in TFLOPS (TOPS for int8) by class: ``fp32`` (SIMT), ``tf32``,
        ``fp16``, ``bf16``, ``fp8``, ``int8``; missing ones are absent.
    """

    key: str
    name: str
    arch: str
    sm_count: int
    mem_bw_gbps: float
    peaks: Mapping[str, float]

    @property
    def l2_us(self) -> float:
        """Microseconds the DRAM takes to move the L2 cache's size (:data:`L2_MIB`); inf
        where the size is not known.

        >>> round(load_specs()["V100-SXM2"].l2_us, 2)  # 6 MiB at 900 GB/s
        6.99
        """
        mib = L2_MIB.get(self.key)
        return math.inf if mib is None else mib * 2**20 / (self.mem_bw_gbps * 1e3)

    @property
    def compute_capability(self) -> int | None:
        """Compute capability from ``arch`` (``"Ampere sm_80"`` -> 80); None if it names none."""
        m = re.search(r"sm_(\d+)", self.arch)
        return int(m.group(1)) if m else None

    @property
    def half_tensor_cores(self) -> bool:
        """Whether float16 GEMMs and convolutions run on tensor cores (compute capability 7.0
        and newer). Before Volta, PyTorch's float16 GEMMs and cuDNN convolutions multiply and
        accumulate in FP32 on the SIMT units (the P100's double-rate half2 arithmetic, its
        18.7 TFLOPS, accumulates in half precision, which neither library uses), so they are
        priced at the FP32 peak (:data:`opsched.cost.mathmode.FP16_FP32_MATH`). A spec without
        a compute capability counts as having them when it lists an fp16 tensor-core peak.

        >>> s = load_specs()
        >>> [s[k].half_tensor_cores for k in ("P100-PCIe", "P4", "V100-PCIe")]
        [False, False, True]
        """
        cc = self.compute_capability
        return cc >= 70 if cc is not None else "fp16" in self.peaks

    def peak_tflops(self, dtype: str) -> float:
        """Peak for ``dtype``: fp32 SIMT for float32/float64/int32/int64, tensor cores otherwise.

        A class the GPU lacks falls back to the next slower one (bf16 -> fp32: no GPU with
        fp16 tensor cores but none for bf16 runs bf16 on them; fp8/int8 -> fp16 -> fp32,
        tf32 -> fp32). ``"float8"`` never takes the int8 peak: integer tensor cores multiply
        no floats, so a GPU without fp8 ones (before Ada / Hopper) runs an fp8 GEMM as fp16
        at best. ``"float16_fp32math"`` (half-precision storage, FP32 arithmetic) is bounded
        by the FP32 peak.

        >>> from opsched.cost.specs import load_specs
        >>> a100 = load_specs()["A100-SXM4-80GB"]
        >>> a100.peak_tflops("float8") == a100.peaks["fp16"] == a100.peaks["int8"] / 2
        True
        """
        cls = {
            "float16": ("fp16", "fp32"),
            "bfloat16": ("bf16", "fp32"),
            "tf32": ("tf32", "fp32"),
            "float8": ("fp8", "fp16", "fp32"),
            "int8": ("int8", "fp16", "fp32"),
        }.get(dtype, ("fp32",))
        for c in cls:
            if c in self.peaks:
                return self.peaks[c]
        return self.peaks["fp32"]

    @classmethod
    def from_dict(cls, d: Any, where: str) -> GpuSpec:
        """The spec of a :meth:`to_dict` document (``gpus.json``, a profile's ``spec``),
        checked: an :class:`~opsched.errors.InputError` at ``where`` names what is wrong.

        >>> GpuSpec.from_dict({"key": "X", "name": "X", "arch": "sm_90", "sm_count": 0,
        ...                    "mem_bw_gbps": 1.0, "peaks": {"fp32": 1.0}}, "x.json")
        Traceback (most recent call last):
        opsched.errors.InputError: x.json: spec 'sm_count' must be a positive integer, got 0
        """
        if not isinstance(d, Mapping):
            raise InputError(f"spec must be an object, got {type(d).__name__}", where)
        for k in ("key", "name", "arch"):
            if not isinstance(d.get(k), str):
                raise InputError(f"spec {k!r} must be a string, got {d.get(k)!r}", where)
        sm = d.get("sm_count")
        if isinstance(sm, bool) or not isinstance(sm, int) or sm < 1:
            raise InputError(f"spec 'sm_count' must be a positive integer, got {sm!r}", where)
        bw = d.get("mem_bw_gbps")
        if not _positive(bw):
            raise InputError(f"spec 'mem_bw_gbps' must be a positive number, got {bw!r}", where)
        peaks = d.get("peaks")
        if not isinstance(peaks, Mapping) or not _positive(peaks.get("fp32")):
            raise InputError("spec 'peaks' must map classes to TFLOPS, fp32 among them", where)
        for c, v in peaks.items():
            if not _positive(v):
                raise InputError(f"spec peak {c!r} must be a positive number, got {v!r}", where)
        return cls(d["key"], d["name"], d["arch"], sm, float(d["mem_bw_gbps"]),
                   {str(c): float(v) for c, v in peaks.items()})  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (see :func:`load_specs`)."""
        return {
            "key": self.key,
            "name": self.name,
            "arch": self.arch,
            "sm_count": self.sm_count,
            "mem_bw_gbps": self.mem_bw_gbps,
            "peaks": dict(self.peaks),
        }


def _positive(v: Any) -> bool:
    """A finite number above zero (not a bool)."""
    return isinstance(v, int | float) and not isinstance(v, bool) and 0 < v < math.inf


def parse_specs_csv(text: str, where: str = "gpu_specs.csv") -> dict[str, GpuSpec]:
    """Parse the ``gpu_specs.csv`` table into canonical key -> :class:`GpuSpec`.

    Examples
    --------
    >>> head = "gpu,variant,arch,sm_count,mem_bw_GBps,fp32_tflops,fp16_tc_tflops_dense"
    >>> specs = parse_specs_csv(head + "\\nT4,PCIe,Turing sm_75,40,320,8.1,65\\n")
    >>> specs["T4"].peak_tflops("float16"), specs["T4"].peak_tflops("bfloat16")
    (65.0, 8.1)
    """
    out: dict[str, GpuSpec] = {}
    columns = {
        "fp32": "fp32_tflops",
        "tf32": "tf32_tc_tflops_dense",
        "fp16": "fp16_tc_tflops_dense",
        "bf16": "bf16_tc_tflops_dense",
        "fp8": "fp8_tc_tflops_dense",
        "int8": "int8_tc_tops_dense",
    }
    for lineno, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        key = _KEYS.get((row.get("gpu", ""), row.get("variant", "")))
        if key is None:
            key = re.sub(r"[^A-Za-z0-9]+", "-", f"{row.get('gpu')} {row.get('variant')}").strip("-")
        sm, bw, fp32 = _num(row.get("sm_count", "")), _num(row.get("mem_bw_GBps", "")), None
        fp32 = _num(row.get("fp32_tflops", ""))
        if not sm or not bw or not fp32:
            raise InputError(f"line {lineno}: sm_count, mem_bw_GBps and fp32_tflops needed", where)
        peaks = {c: v for c, col in columns.items() if (v := _num(row.get(col, "")))}
        if "int8" not in peaks and re.search(r"sm_(61|70)\b", row.get("arch", "")):
            # compute capability 6.1 (GP102/GP104/GP106) and 7.0 (Volta, whose tensor cores
            # take fp16 only) have DP4A: four int8 products accumulated in int32 per lane and
            # clock, 4x the FP32 rate (the P4's datasheet lists "22 (dp4a)" for its 5.5
            # TFLOPS); the table leaves it blank for them. Without it the V100's int8 fell
            # back to its fp16 tensor cores, twice as fast as DP4A
            peaks["int8"] = 4 * fp32
        out[key] = GpuSpec(
            key, f"{row['gpu']} {row['variant']}", row.get("arch", ""), int(sm), bw, peaks
        )
    return out


#: Environment variable naming a folder of profiles (written by ``opsched cost fit -o DIR``)
#: to use instead of the ones shipped in the package.
PROFILES_ENV = "OPSCHED_PROFILES"
_ACTIVE: list[str] = []  # folders set by profiles_from(), innermost last


def profiles_dir() -> str:
    """The folder profiles and the spec table are read from.

    The innermost :func:`profiles_from` folder, else ``$OPSCHED_PROFILES``, else the package's
    ``opsched/cost/profiles``.
    """
    if _ACTIVE:
        return _ACTIVE[-1]
    return os.environ.get(PROFILES_ENV) or str(resources.files("opsched.cost") / "profiles")


@contextmanager
def profiles_from(folder: str | os.PathLike[str]) -> Iterator[None]:
    """Read profiles and specs from ``folder`` inside the ``with`` block (``opsched cost fit
    -o DIR`` fits with the spec table it writes there, so GPUs added to it are known)."""
    _ACTIVE.append(str(folder))
    try:
        yield
    finally:
        _ACTIVE.pop()


def load_specs() -> dict[str, GpuSpec]:
    """The spec table of the profiles in use (``gpus.json`` in :func:`profiles_dir`)."""
    return _load_specs(profiles_dir())


@cache
def _load_specs(folder: str) -> dict[str, GpuSpec]:
    path = os.path.join(folder, "gpus.json")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise InputError(f"no gpus.json in the profiles folder {folder} ({PROFILES_ENV}?); "
                         "`opsched cost fit -o DIR` writes one") from None  # fmt: skip
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"not a spec table ({e})", path) from None
    gpus = doc.get("gpus") if isinstance(doc, dict) else None
    if not isinstance(gpus, list):
        raise InputError("not a spec table (no 'gpus' list)", path)
    specs = (GpuSpec.from_dict(d, f"{path}: gpus[{i}]") for i, d in enumerate(gpus))
    return {s.key: s for s in specs}


def known_gpus() -> list[str]:
    """Canonical keys of every GPU the cost model can predict for (with or without timings).

    Examples
    --------
    >>> "H200" in known_gpus() and "T4" in known_gpus()
    True
    """
    return list(load_specs())

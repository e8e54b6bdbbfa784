"""Math mode of float32 GEMMs and convolutions: FP32 SIMT or TF32 tensor cores.

On GPUs with TF32 tensor cores (compute capability 8.0 and newer: A100, A40, L4, H100,
H200), a float32 matmul or convolution may run in TF32 (10-bit mantissa products, FP32
accumulation) at 8x (A100) the FP32 SIMT peak. Whether it does is a *library setting*, not
a property of the tensors, so the dtype alone does not say which peak bounds the kernel:

- PyTorch ``torch.backends.cudnn.allow_tf32`` (convolutions) defaults to True;
- ``torch.backends.cuda.matmul.allow_tf32`` (GEMMs) defaulted to True up to PyTorch 1.11
  and to False from 1.12 on.

The cost model makes that setting explicit. A float32 op of a *math-mode kind* (matmul and
the three convolution directions) is priced with ``dtype = "tf32"`` (the TF32 peak of
:meth:`~opsched.cost.specs.GpuSpec.peak_tflops`; dtype class ``fp32``, so the same fp32
curve) when its kind's flag is on and the GPU has a TF32 peak. :data:`PYTORCH_DEFAULT` is
the default of ``Profile.predict`` and ``apply`` (PyTorch >= 1.12: convolutions TF32,
matmuls FP32); ``allow_tf32=True`` / ``False`` turns both on / off.

The timing sources are mapped by :data:`SOURCE_MODES` from what each documents or shows:
NeuSight timed with TF32 off (its README); the HTA profiler traces of A100s ran their float32
``mm`` / ``addmm`` / ``bmm`` on ``cutlass_80_tensorop_s1688gemm`` kernels (TF32 tensor-op
GEMMs, see ``hta_kernels.csv.gz``), i.e. PyTorch < 1.12 or TF32 switched on, and the
convolutions follow PyTorch's cuDNN default; the other sources have no float32 rows on a
TF32-capable GPU. Where a profiler row lists the kernels its op launched,
:func:`kernel_math_mode` reads the mode from their names instead (``tensorop_s1688``,
``tf32``: TF32; ``sgemm``, ``scudnn``: FP32 SIMT), since cuBLAS may still pick a SIMT kernel
for some shapes with TF32 allowed.

Examples
--------
>>> from opsched.cost.specs import load_specs
>>> a100, v100 = load_specs()["A100-SXM4-80GB"], load_specs()["V100-PCIe"]
>>> conv = {"N": 8, "C": 64, "H": 56, "W": 56, "K": 64, "R": 3, "S": 3, "dtype": "float32"}
>>> math_dtype("conv2d", conv, a100)               # PyTorch default: cuDNN TF32 on
'tf32'
>>> math_dtype("matmul", {"M": 64, "N": 64, "K": 64}, a100)   # matmul TF32 off since 1.12
'float32'
>>> math_dtype("matmul", {"M": 64, "N": 64, "K": 64}, a100, allow_tf32=True)
'tf32'
>>> math_dtype("conv2d", conv, v100)               # no TF32 tensor cores on Volta
'float32'
>>> math_dtype("matmul", {"M": 64, "N": 64, "K": 64, "dtype": "float16"}, load_specs()["P100-PCIe"])
'float16_fp32math'
>>> math_dtype("matmul", {"M": 64, "N": 64, "K": 64, "dtype": "bfloat16"}, v100)  # no bf16 TCs
'float16_fp32math'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opsched.cost.specs import GpuSpec

__all__ = [
    "CONV_KINDS",
    "FP16_FP32_MATH",
    "MATH_KINDS",
    "MATMUL_KINDS",
    "PYTORCH_DEFAULT",
    "SOURCE_MODES",
    "MathMode",
    "kernel_math_mode",
    "math_dtype",
    "mode_of",
    "with_math_dtype",
]

#: Kinds whose float32 form may run on TF32 tensor cores (GEMM libraries, cuDNN).
MATMUL_KINDS = frozenset({"matmul", "attention"})
CONV_KINDS = frozenset({"conv2d", "conv2d_bwd_data", "conv2d_bwd_filter"})

#: Kinds whose arithmetic runs on tensor cores where the GPU has them.
MATH_KINDS = MATMUL_KINDS | CONV_KINDS

#: The dtype a float16 GEMM or convolution is priced at on a GPU without half-precision tensor
#: cores (before Volta: P100, P4, the Pascal and Maxwell boards), and a bfloat16 one on a GPU
#: without bfloat16 tensor cores (before Ampere): half-precision tensors, FP32
#: multiply-accumulate (cuBLAS with FP32 compute, cuDNN's pseudo-half configuration, which is
#: what PyTorch asks for), so the FP32 peak bounds it. It is priced by the GPU's own half curve
#: where it timed such ops, else by its fp32 curve (:data:`opsched.cost.features.HALF_FP32_MATH`).
#: DeepBench's P100 rows say so themselves ("16 bit inputs, 32 bit multiplication, 32 bit
#: addition").
FP16_FP32_MATH = "float16_fp32math"

#: (matmul TF32, convolution TF32).
MathMode = tuple[bool, bool]

#: PyTorch >= 1.12 defaults: ``cuda.matmul.allow_tf32 = False``, ``cudnn.allow_tf32 = True``.
PYTORCH_DEFAULT: MathMode = (False, True)

#: Timing schema (:data:`opsched.cost.data.SCHEMAS`) -> math mode its float32 rows ran in.
SOURCE_MODES: Mapping[str, MathMode] = {
    "neusight": (False, False),  # README: "TF32 off"
    "profiler_ops": (True, True),  # HTA A100 traces: TF32 tensor-op GEMM kernels
    "profiler_kernels": (True, True),
    "deepbench_gemm": (False, False),  # no rows on a TF32-capable GPU
    "deepbench_conv": (False, False),
    "vidur": (False, False),  # float16 only
    "sdpa": (False, False),  # half precision only
}


def mode_of(allow_tf32: bool | None) -> MathMode:
    """The math mode of an ``allow_tf32`` option: None = :data:`PYTORCH_DEFAULT`.

    Examples
    --------
    >>> mode_of(None), mode_of(True), mode_of(False)
    ((False, True), (True, True), (False, False))
    """
    return PYTORCH_DEFAULT if allow_tf32 is None else (bool(allow_tf32), bool(allow_tf32))


def math_dtype(
    kind: str,
    attrs: Mapping[str, Any],
    spec: GpuSpec,
    allow_tf32: bool | None = None,
    mode: MathMode | None = None,
) -> str:
    """The dtype an op is priced at: ``"tf32"`` for a float32 GEMM / conv run in TF32,
    :data:`FP16_FP32_MATH` for a float16 GEMM / conv on a GPU without half tensor cores.

    Parameters
    ----------
    kind, attrs
        The op (:mod:`opsched.ir.kinds`); ``attrs["dtype"]`` defaults to float32.
    spec
        The GPU: TF32 only where it has a TF32 peak.
    allow_tf32
        None: PyTorch's defaults (:data:`PYTORCH_DEFAULT`); True / False: both kinds on / off.
    mode
        An explicit (matmul, conv) mode; overrides ``allow_tf32``.
    """
    dtype = str(attrs.get("dtype", "float32"))
    if dtype == "float16" and kind in MATH_KINDS and not spec.half_tensor_cores:
        return FP16_FP32_MATH
    if dtype == "bfloat16" and kind in MATH_KINDS and "bf16" not in spec.peaks:
        # bfloat16 tensor cores came with Ampere: cuBLAS and cuDNN run a bfloat16 GEMM or
        # convolution on an older GPU (V100, T4, Pascal) with FP32 arithmetic
        return FP16_FP32_MATH
    if dtype != "float32" or "tf32" not in spec.peaks:
        return dtype
    mm, conv = mode if mode is not None else mode_of(allow_tf32)
    if (kind in MATMUL_KINDS and mm) or (kind in CONV_KINDS and conv):
        return "tf32"
    return dtype


def with_math_dtype(
    kind: str,
    attrs: Mapping[str, Any],
    spec: GpuSpec,
    allow_tf32: bool | None = None,
    mode: MathMode | None = None,
) -> Mapping[str, Any]:
    """``attrs`` with ``dtype`` replaced by :func:`math_dtype` (the same object if unchanged);
    a ``fused`` op's ``parts`` each get their own.

    Examples
    --------
    >>> from opsched.cost.specs import load_specs
    >>> h100 = load_specs()["H100-SXM5"]
    >>> with_math_dtype("matmul", {"M": 8, "N": 8, "K": 8}, h100, True)
    {'M': 8, 'N': 8, 'K': 8, 'dtype': 'tf32'}
    >>> part = {"kind": "matmul", "M": 8, "N": 8, "K": 8}
    >>> with_math_dtype("fused", {"parts": [part]}, h100, True)["parts"][0]["dtype"]
    'tf32'
    """
    if kind == "fused" and attrs.get("parts"):
        attrs = {**attrs, "parts": [
            {"kind": p["kind"], **with_math_dtype(p["kind"], p, spec, allow_tf32, mode)}
            for p in attrs["parts"]]}  # fmt: skip
    dt = math_dtype(kind, attrs, spec, allow_tf32, mode)
    if dt == str(attrs.get("dtype", "float32")):
        return attrs
    return {**attrs, "dtype": dt}


_TF32_MARKS = ("tensorop_s1688", "tf32", "s1688gemm", "s16816gemm")
#: ``ffma``: cuBLAS / cuDNN xmma kernels on FP32 SIMT units (``sm80_xmma_gemm_f32f32_..._ffma``).
#: cuDNN's legacy backward engines templated on ``float`` (``dgrad_engine<float, ...>``,
#: ``wgrad_alg0_engine<float, ...>``) are FP32 SIMT too; cuDNN picks them for some float32
#: convolutions with TF32 allowed (on the H200 for 10 of DeepBench's 90 training shapes).
_FP32_MARKS = ("sgemm", "scudnn", "gemv2", "gemvx", "gemmk1", "_ffma_", "dgrad_engine<float",
               "wgrad_alg0_engine<float", "wgrad_alg1_engine<float")  # fmt: skip


def kernel_math_mode(kernels: object) -> MathMode | None:
    """The math mode shown by the names of the kernels an op launched; None if they do not say.

    Examples
    --------
    >>> kernel_math_mode("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4>")
    (True, True)
    >>> kernel_math_mode("ampere_sgemm_128x64_nn"), kernel_math_mode("elementwise_kernel")
    ((False, False), None)
    """
    if not isinstance(kernels, str):
        return None
    low = kernels.lower()
    if any(m in low for m in _TF32_MARKS):
        return (True, True)
    if any(m in low for m in _FP32_MARKS):
        return (False, False)
    return None

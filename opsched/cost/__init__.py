"""The cost model: op durations from CUDA kernel timings, calibrated per GPU.

``load_profile(gpu).predict(op)`` gives an op's time in microseconds; ``apply(graph, gpu,
dtype)`` fills a whole graph (durations, output sizes, SM demands and the GPU's SM capacity).
See ``docs/cost-model.md`` for the model, the data and the measured errors.

Examples
--------
>>> from opsched.cost import known_gpus, load_profile
>>> "A100-SXM4-80GB" in known_gpus()
True
>>> load_profile("T4").predict("softmax", {"rows": 1024, "cols": 1024}) > 0
True
"""

from typing import TYPE_CHECKING

from opsched._lazy import lazy_exports

# imported at once: a submodule of the same name, once imported, would otherwise take the
# name's place in this package
from opsched.cost.apply import apply

#: Loaded on first use (:mod:`opsched._lazy`), so that the command line's modules here import
#: only what a command needs.
_LAZY: dict[str, str] = {
    "GpuSpec": "opsched.cost.specs",
    "Profile": "opsched.cost.profile",
    "known_gpus": "opsched.cost.specs",
    "load_profile": "opsched.cost.profile",
    "resolve_gpu": "opsched.cost.gpu_names",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from opsched.cost.gpu_names import resolve_gpu
    from opsched.cost.profile import Profile, load_profile
    from opsched.cost.specs import GpuSpec, known_gpus


__all__ = ["GpuSpec", "Profile", "apply", "known_gpus", "load_profile", "resolve_gpu"]

"""Pipeline scheduling: stage partition and micro-batch pipelining (see ``docs/pipeline.md``)."""

from typing import TYPE_CHECKING

from opsched._lazy import lazy_exports

#: Loaded on first use (:mod:`opsched._lazy`), so that the command line's modules here import
#: only what a command needs.
_LAZY: dict[str, str] = {
    "FORMULATIONS": "opsched.pipeline.cpsat",
    "PipelineMetrics": "opsched.pipeline.model",
    "PipelineResult": "opsched.pipeline.model",
    "balanced_partition": "opsched.pipeline.partition",
    "bottleneck": "opsched.pipeline.partition",
    "check_stages": "opsched.pipeline.model",
    "copy_name": "opsched.pipeline.model",
    "pipeline_cpsat": "opsched.pipeline.cpsat",
    "pipeline_heuristic": "opsched.pipeline.heuristic",
    "pipeline_metrics": "opsched.pipeline.model",
    "stage_capacities": "opsched.pipeline.model",
    "stage_units": "opsched.pipeline.model",
    "unroll": "opsched.pipeline.model",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from opsched.pipeline.cpsat import FORMULATIONS, pipeline_cpsat
    from opsched.pipeline.heuristic import pipeline_heuristic
    from opsched.pipeline.model import (
        PipelineMetrics,
        PipelineResult,
        check_stages,
        copy_name,
        pipeline_metrics,
        stage_capacities,
        stage_units,
        unroll,
    )
    from opsched.pipeline.partition import balanced_partition, bottleneck


__all__ = [
    "FORMULATIONS",
    "PipelineMetrics",
    "PipelineResult",
    "balanced_partition",
    "bottleneck",
    "check_stages",
    "copy_name",
    "pipeline_cpsat",
    "pipeline_heuristic",
    "pipeline_metrics",
    "stage_capacities",
    "stage_units",
    "unroll",
]

"""Pipeline scheduling: stage partition and micro-batch pipelining (see ``docs/pipeline.md``)."""

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

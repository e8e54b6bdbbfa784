"""The SM footprint of an op: how many SMs its thread blocks can keep busy at once.

A GEMM or convolution is cut into 128 x 128 output tiles (one thread block each); a
row-wise op (softmax, layernorm, rmsnorm) runs a block per row; fused attention a block per
(batch x head, 128 queries); a training batch norm with a channel count a block per channel;
anything else a block per 1,024 output elements. The count is
held between 1 and the GPU's SM count (0 for ops that launch no kernel). It is what
:func:`opsched.cost.apply` writes as each op's ``sm`` demand (docs/cost-model.md, "apply:
footprint rule and limits").

>>> sm_footprint("matmul", {"M": 4096, "N": 4096, "K": 64}, 40)
40
>>> sm_footprint("elementwise", {"numel": 4096}, 40)
4
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from opsched.cost.batch import check_op
from opsched.cost.features import ZERO_KINDS
from opsched.ir import kinds

__all__ = ["sm_footprint"]


def sm_footprint(kind: str, attrs: Mapping[str, Any], sm_count: int) -> int:
    """SMs an op of ``kind`` with ``attrs`` can keep busy on a GPU of ``sm_count`` SMs."""
    check_op(kind, attrs)
    if kind in ZERO_KINDS:
        return 0
    g = lambda k, d=1: int(attrs.get(k, d))  # noqa: E731
    if kind == "matmul":
        blocks = g("B") * math.ceil(g("M") / 128) * math.ceil(g("N") / 128)
    elif kind.startswith("conv2d"):
        p, q = kinds.conv_out_hw(attrs, kind)
        blocks = math.ceil(g("N") * p * q / 128) * math.ceil(g("K") / 128)
    elif kind in ("softmax", "layernorm", "rmsnorm"):
        blocks = g("rows")
    elif kind == "attention":
        blocks = g("B") * math.ceil(g("Sq") / 128)
    elif kind == "batchnorm" and (per_channel := kinds.batchnorm_blocks(attrs)):
        blocks = per_channel  # batch statistics: a block per channel
    else:
        blocks = math.ceil(kinds.output_numel(kind, attrs) / 1024)
    return int(min(max(blocks, 1), sm_count))

"""Checks of an ``opsched-cost-profile/1`` document before it prices anything.

``opsched cost fit`` writes these documents, but a profiles folder named by
``OPSCHED_PROFILES`` may hold hand-edited or truncated ones. A malformed one must fail when
it is loaded, with one line that names the field, not deep inside a prediction (a ``beta``
of the wrong length, a missing overhead, a floor that is not a number).

Examples
--------
>>> import json
>>> from opsched.cost.specs import profiles_dir
>>> doc = json.load(open(f"{profiles_dir()}/T4.json"))
>>> check_profile(doc, "T4.json").sm_count
40
>>> doc["curves"]["matmul"]["half"]["beta"] = [1.0, 2.0]
>>> check_profile(doc, "T4.json")
Traceback (most recent call last):
opsched.errors.InputError: T4.json: curves['matmul']['half'] 'beta' must hold 14 numbers, got 2
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from opsched.cost.boost import tree_features
from opsched.cost.features import FAMILIES, SAMPLE_ATTRS, feature_matrix
from opsched.cost.specs import GpuSpec
from opsched.cost.trees import TreeEnsemble
from opsched.errors import InputError

__all__ = ["CLASSES", "PROFILE_FORMAT", "check_profile", "check_trees"]

PROFILE_FORMAT = "opsched-cost-profile/1"
#: The dtype classes a profile has curves for.
CLASSES = ("fp32", "half", "int8")


def check_profile(doc: Any, where: str) -> GpuSpec:
    """Check ``doc`` as a profile (``where``: the file, for the message); return its spec.

    Raises :class:`~opsched.errors.InputError` naming the first field that is wrong.
    """
    if not isinstance(doc, Mapping) or doc.get("format") != PROFILE_FORMAT:
        raise InputError(f"not an {PROFILE_FORMAT} document", where)
    if not isinstance(doc.get("gpu"), str):
        raise InputError("profile 'gpu' must be a string", where)
    spec = GpuSpec.from_dict(doc.get("spec"), where)
    curves = doc.get("curves")
    if not isinstance(curves, Mapping):
        raise InputError("profile 'curves' must be an object", where)
    for fam, by_class in curves.items():
        if fam not in FAMILIES:
            raise InputError(f"curves: unknown op family {fam!r}", where)
        if not isinstance(by_class, Mapping):
            raise InputError(f"curves[{fam!r}] must be an object", where)
        width = feature_matrix(fam, [SAMPLE_ATTRS[fam]], spec).shape[1]
        for cls, c in by_class.items():
            at = f"curves[{fam!r}][{cls!r}]"
            if cls not in CLASSES:
                raise InputError(f"{at}: unknown dtype class (one of {', '.join(CLASSES)})", where)
            _check_curve(c, width, at, where)
            siblings = c.get("siblings", {})
            if not isinstance(siblings, Mapping):
                raise InputError(f"{at} 'siblings' must be an object", where)
            for kind, sc in siblings.items():
                _check_curve(sc, width, f"{at} siblings[{kind!r}]", where)
                if not isinstance(sc.get("gpu"), str):
                    raise InputError(f"{at} siblings[{kind!r}] 'gpu' must be a string", where)
    floors = {"kernel_floor": doc.get("kernel_floor")}
    family_floors = doc.get("family_floors", {})
    if not isinstance(family_floors, Mapping):
        raise InputError("profile 'family_floors' must be an object", where)
    floors |= {f"family_floors[{fam!r}]": f for fam, f in family_floors.items()}
    for at, f in floors.items():
        if f is None and at == "kernel_floor":
            continue  # a profile written before the floor existed
        if not isinstance(f, Mapping) or not _number(f.get("us")):
            raise InputError(f"{at} must be an object with a non-negative 'us'", where)
    return spec


def _check_curve(c: Any, width: int, at: str, where: str) -> None:
    if not isinstance(c, Mapping):
        raise InputError(f"{at} must be an object", where)
    beta = c.get("beta")
    if not isinstance(beta, list) or len(beta) != width:
        got = len(beta) if isinstance(beta, list) else repr(beta)
        raise InputError(f"{at} 'beta' must hold {width} numbers, got {got}", where)
    if not all(_number(b, signed=True) for b in beta):
        raise InputError(f"{at} 'beta' must hold finite numbers", where)
    overheads = c.get("overheads", {})
    if not isinstance(overheads, Mapping) or not all(map(_number, overheads.values())):
        raise InputError(f"{at} 'overheads' must map timing methods to non-negative us", where)
    # fitted on the GPU's own traced rows (opsched.cost.boost.tree_method); absent: not
    if not isinstance(c.get("profiler", False), bool):
        raise InputError(f"{at} 'profiler' must be true or false, got {c['profiler']!r}", where)


def _number(v: Any, signed: bool = False) -> bool:
    """A finite number (not a bool), non-negative unless ``signed``."""
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    return ok and (signed or v >= 0)


def check_trees(trees: Mapping[str, TreeEnsemble], spec: GpuSpec, where: str) -> None:
    """Check residual trees against the inputs they will see: a known family, and every split
    on a column that :func:`~opsched.cost.boost.tree_features` makes for it."""
    for fam, ens in trees.items():
        if fam not in FAMILIES:
            raise InputError(f"trees: unknown op family {fam!r}", where)
        x = feature_matrix(fam, [SAMPLE_ATTRS[fam]], spec)
        one = np.array([spec.key])
        width = tree_features(x, one, np.array(["fp32"]), np.array(["kernel"]),
                              {spec.key: spec}).shape[1]  # fmt: skip
        f = ens.feature[~ens.leaf]
        if f.size and (f.min() < 0 or f.max() >= width):
            raise InputError(f"trees[{fam!r}] split on a column outside its {width} inputs", where)

"""Reading a profiles folder's files: a profile's curves and the residual trees
(:mod:`opsched.cost.profile` builds :class:`~opsched.cost.profile.Profile` from them)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache
from typing import Any

import numpy as np

from opsched.cost.trees import TreeEnsemble, read_trees

__all__ = ["TREES_FILE"]

#: The shipped trees file under ``opsched/cost/profiles``
#: (:func:`opsched.cost.export.fit_profiles`).
TREES_FILE = "trees.json.gz"


def _read_curve(c: Mapping[str, Any]) -> dict[str, Any]:
    """A profile's curve with its ``beta`` (and its siblings' curves, marked ``source:
    sibling``) as arrays, converted once here rather than at every prediction."""
    out = dict(c) | {"beta": np.asarray(c["beta"], float)}
    if "siblings" in c:
        out["siblings"] = {kind: dict(sc) | {"beta": np.asarray(sc["beta"], float),
                                             "source": "sibling", "sibling": sc["gpu"]}
                           for kind, sc in c["siblings"].items()}  # fmt: skip
    return out


@cache
def _load_trees(folder: str) -> dict[str, TreeEnsemble]:
    """The residual trees of a profiles folder (``trees.json.gz``); none if the file is absent."""
    path = os.path.join(folder, TREES_FILE)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return {}
    return read_trees(raw, path)

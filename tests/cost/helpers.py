"""Shared by the cost tests: the shipped profile documents, profiles with parts removed, and
stored trees in the older list form."""

from __future__ import annotations

import copy
import json
from importlib import resources

from opsched.cost.profile import Profile
from opsched.cost.trees import _unpack


def shipped_doc(gpu: str) -> dict:
    """The shipped ``opsched-cost-profile/1`` document of ``gpu``, as parsed JSON."""
    text = resources.files("opsched.cost").joinpath(f"profiles/{gpu}.json").read_text()
    return json.loads(text)


def profile_without(gpu: str, *keys: str) -> Profile:
    """The shipped profile of ``gpu`` with the top-level ``keys`` removed (what it priced
    without, e.g., its floors)."""
    doc = copy.deepcopy(shipped_doc(gpu))
    for key in keys:
        doc.pop(key)
    return Profile(doc)


def as_lists(ensemble: dict) -> dict:
    """A stored tree ensemble with its node arrays as JSON lists (trees file format 1)."""
    return {k: v if k == "baseline" else _unpack(v).tolist() for k, v in ensemble.items()}

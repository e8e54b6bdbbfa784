"""Graph generators and the model zoo (:mod:`opsched.zoo.models`: published networks)."""

from opsched.zoo.generators import gnp, layered
from opsched.zoo.models import MODELS
from opsched.zoo.models import build as build_model

__all__ = ["MODELS", "build_model", "gnp", "layered"]

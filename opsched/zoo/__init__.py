"""Graph generators (the model zoo comes with its own issue)."""

from opsched.zoo.generators import gnp, layered

__all__ = ["gnp", "layered"]

"""GPU names as timing files, traces and users write them, mapped onto the canonical keys of
the spec table (:mod:`opsched.cost.specs`).

Examples
--------
>>> resolve_gpu("NVIDIA A100-PCIE-40GB")
'A100-PCIe-40GB'
>>> resolve_gpu("Tesla V100-DGXS-32GB")
'V100-SXM2'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from opsched.cost.specs import load_specs
from opsched.errors import InputError

__all__ = ["resolve_gpu", "variants_of"]

# Spellings seen in timing files and traces, checked in order on a squashed lower-case name
# (letters and digits only). The first pattern found wins; a pattern followed by a digit
# is another model number (``l4`` in "L40S", ``p4`` in "P40", ``a40`` in "RTX A4000") and
# does not count (:func:`_alias`).
_ALIASES: tuple[tuple[str, str], ...] = (
    ("h200", "H200"),
    ("h100pcie", "H100-PCIe"),
    ("h10080gbpcie", "H100-PCIe"),
    ("h100", "H100-SXM5"),
    ("pg509", "A100-SXM4-40GB"),
    ("unknownsm80", "A100-SXM4-40GB"),
    ("a100pcie40", "A100-PCIe-40GB"),
    ("a10080gbpcie", "A100-PCIe-80GB"),
    ("a100pcie80", "A100-PCIe-80GB"),
    ("a100pcie", "A100-PCIe-40GB"),
    ("a100sxm440", "A100-SXM4-40GB"),
    ("a10040gbpcie", "A100-PCIe-40GB"),
    ("a10040gb", "A100-SXM4-40GB"),
    ("a100", "A100-SXM4-80GB"),
    ("v100pcie", "V100-PCIe"),
    ("v10016gbpcie", "V100-PCIe"),
    ("v10032gbpcie", "V100-PCIe"),
    ("v100", "V100-SXM2"),
    ("p100", "P100-PCIe"),
    ("a40", "A40"),
    ("l4", "L4"),
    ("t4", "T4"),
    ("p4", "P4"),
    ("1080ti", "GTX-1080-Ti"),
    ("titanxpascal", "Titan-X-Pascal"),
    ("titanxp", "Titan-Xp"),
    ("titanx", "Titan-X-Maxwell"),
    ("m40", "M40"),
)


_VENDOR_WORDS = ("nvidia", "tesla", "geforce", "gtx")


def _model_chars(name: str) -> list[tuple[str, int]]:
    """The letters and digits of ``name`` in lower case, vendor words removed, each with its
    index in ``name``."""
    chars = [(c, i) for i, c in enumerate(name.lower()) if c.isalnum()]
    for word in _VENDOR_WORDS:
        text = "".join(c for c, _ in chars)
        for at in reversed([m.start() for m in re.finditer(word, text)]):
            del chars[at : at + len(word)]
    return chars


def _alias(name: str) -> str | None:
    """The key of the first alias found in ``name`` (squashed: lower case, letters and digits,
    without vendor words) whose last character is not followed by a digit in ``name`` itself.

    The check is made on the name as written, so a memory size after a space still counts
    ("H100 80GB") while a longer model number does not ("L40S", "P40", "RTX A4000").

    Examples
    --------
    >>> _alias("NVIDIA L4"), _alias("NVIDIA L40S"), _alias("Tesla P40"), _alias("Tesla M40 24GB")
    ('L4', None, None, 'M40')
    """
    chars = _model_chars(name)
    squashed = "".join(c for c, _ in chars)
    for pattern, key in _ALIASES:
        for m in re.finditer(re.escape(pattern), squashed):
            after = chars[m.end() - 1][1] + 1
            if not name[after : after + 1].isdigit():
                return key
    return None


def _squash(text: Any) -> str:
    """Lower case, letters and digits only: how GPU names and keys are compared."""
    return re.sub(r"[^a-z0-9]", "", str(text).lower())


def resolve_gpu(name: str, specs: Mapping[str, Any] | None = None) -> str:
    """Canonical key of a GPU name as written in a timing file, a trace or on the command line.

    Raises
    ------
    InputError
        For a name no known GPU matches; the message lists the known ones.

    Examples
    --------
    >>> resolve_gpu("NVIDIA A100 40GB PCIe"), resolve_gpu("NVIDIA H100 80GB PCIe")
    ('A100-PCIe-40GB', 'H100-PCIe')
    >>> resolve_gpu("Tesla V100-PCIE-32GB"), resolve_gpu("NVIDIA A100-SXM4-40GB")
    ('V100-PCIe', 'A100-SXM4-40GB')
    >>> resolve_gpu("NVIDIA H20")
    Traceback (most recent call last):
    opsched.errors.InputError: unknown GPU 'NVIDIA H20'; known: ...
    """
    if not isinstance(name, str):
        raise TypeError(
            f"a GPU name must be a str, got {type(name).__name__} {name!r} (e.g. 'T4'; "
            "opsched.cost.known_gpus() lists them)"
        )
    specs = load_specs() if specs is None else specs
    if name in specs:
        return name
    keys = {key: _squash(key) for key in specs}
    squashed = _squash(name)
    for key, sk in keys.items():
        if sk == squashed:
            return key
    alias = _alias(name)
    if alias is not None and alias in specs:
        return alias
    squashed = "".join(c for c, _ in _model_chars(name))
    # a GPU added to gpu_specs.csv ("RTX-4090-PCIe") under the name torch reports for it
    # ("NVIDIA GeForce RTX 4090"): the one key that starts with the name, where the model
    # number ends ("H20" is not the H200, "Tesla M4" not the M40)
    n = len(squashed)
    starts = [key for key, sk in keys.items()
              if n and sk.startswith(squashed) and not sk[n : n + 1].isdigit()]  # fmt: skip
    if len(starts) == 1:
        return starts[0]
    raise InputError(f"unknown GPU {name!r}; known: {', '.join(specs)}")


def variants_of(name: str, specs: Mapping[str, Any] | None = None) -> list[str]:
    """The known GPUs a bare model name such as ``"A100"`` could mean, when it could mean more
    than one (else ``[]``): those whose key begins with the name's model letters and digits.
    :func:`resolve_gpu` still picks one (the first alias); callers say which.

    Examples
    --------
    >>> variants_of("A100")
    ['A100-SXM4-40GB', 'A100-SXM4-80GB', 'A100-PCIe-40GB', 'A100-PCIe-80GB']
    >>> variants_of("NVIDIA A100 80GB PCIe"), variants_of("H200"), variants_of("A100-SXM4-80GB")
    ([], [], [])
    """
    specs = load_specs() if specs is None else specs
    if name in specs:
        return []
    model = "".join(c for c, _ in _model_chars(name))
    found = [key for key in specs if model and _squash(key).startswith(model)]
    return found if len(found) > 1 else []

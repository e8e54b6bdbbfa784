"""The model switches the memory-cap benchmarks share (``bench_memory.py``,
``bench_zoo_memory.py``): each ``--no-...`` flag turns one idea of the CP-SAT model off, to
compare it with the shipped model side by side (docs/cpsat-model.md).

>>> import argparse
>>> ap = argparse.ArgumentParser()
>>> add_switches(ap)
>>> a = ap.parse_args(["--no-overlap", "--no-split"])
>>> params_off(a)["overlap"], params_off(a)["cases"]
(False, True)
>>> off_flags(a), without(a)
(' --no-split --no-overlap', ', without the split at cut ops, without the two-unit overlap bound')
"""

from __future__ import annotations

import argparse

#: ``Params`` field -> what a run goes without when its ``--no-`` flag is set (the flag is
#: the field with dashes: ``cap_orders`` -> ``--no-cap-orders``)
SWITCHES: dict[str, str] = {
    "lifetimes": "the least tensor lifetimes",
    "cap_orders": "the orders the memory cap forces",
    "serial_check": "the one-unit check of the cap",
    "nested": "the nested heads",
    "downsets": "the down-set search",
    "split": "the split at cut ops",
    "overlap": "the two-unit overlap bound",
    "cases": "the case split on exclusive tensors",
}


def add_switches(ap: argparse.ArgumentParser) -> None:
    """Add one ``--no-...`` flag per entry of :data:`SWITCHES`."""
    for field, what in SWITCHES.items():
        ap.add_argument(f"--no-{field.replace('_', '-')}", action="store_true",
                        help=f"without {what}, to compare")  # fmt: skip


def params_off(a: argparse.Namespace) -> dict[str, bool]:
    """``Params`` keyword arguments: each switch on unless its flag is set."""
    return {field: not getattr(a, f"no_{field}") for field in SWITCHES}


def _set(a: argparse.Namespace) -> list[str]:
    return [field for field in SWITCHES if getattr(a, f"no_{field}")]


def off_flags(a: argparse.Namespace) -> str:
    """The flags set, as a command line would give them (for a reproduce line)."""
    return "".join(f" --no-{field.replace('_', '-')}" for field in _set(a))


def without(a: argparse.Namespace) -> str:
    """``", without ..."`` for each flag set (for a table's caption)."""
    return "".join(f", without {SWITCHES[field]}" for field in _set(a))

"""The memory-cap benchmarks' model switches (benchmarks/_cap_switches.py): each names a
field of ``Params``, and a run's reproduce line sets the same switches again."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
from pathlib import Path

from opsched.solver.cpsat import Params

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "_cap_switches.py"
_spec = importlib.util.spec_from_file_location("_cap_switches", _PATH)
assert _spec is not None and _spec.loader is not None
sw = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sw)


def _parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    sw.add_switches(ap)
    return ap.parse_args(argv)


def test_every_switch_is_a_params_field_that_defaults_on() -> None:
    fields = {f.name: f.default for f in dataclasses.fields(Params)}
    assert set(sw.SWITCHES) <= set(fields)
    assert all(fields[name] is True for name in sw.SWITCHES)
    assert sw.params_off(_parse([])) == dict.fromkeys(sw.SWITCHES, True)


def test_the_reproduce_flags_set_the_same_switches() -> None:
    a = _parse(["--no-cases", "--no-cap-orders"])
    off = sw.params_off(a)
    assert [k for k, on in off.items() if not on] == ["cap_orders", "cases"]
    assert sw.off_flags(a) == " --no-cap-orders --no-cases"
    assert _parse(sw.off_flags(a).split()) == a
    assert sw.without(a) == (", without the orders the memory cap forces, "
                             "without the case split on exclusive tensors")  # fmt: skip
    Params(**off)  # every key a keyword Params takes

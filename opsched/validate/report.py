"""What the validator returns: :class:`ValidationReport`, a list of :class:`Violation`.

>>> r = ValidationReport([Violation("precedence", "'b' starts at 1 before 'a' ends at 2",
...                                 ("a", "b"), 1.0)])
>>> r.valid, r.kinds()
(False, {'precedence'})
>>> print(r.summary())
invalid: 1 violation(s)
  [precedence] at t=1 'b' starts at 1 before 'a' ends at 2
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ValidationReport", "Violation"]


@dataclass(frozen=True)
class Violation:
    """One broken rule: its ``kind``, a message, the ops involved and when."""

    kind: str
    message: str
    ops: tuple[str, ...] = ()
    time: float | None = None

    def __str__(self) -> str:
        at = f" at t={self.time:g}" if self.time is not None else ""
        return f"[{self.kind}]{at} {self.message}"


@dataclass
class ValidationReport:
    """The validator's verdict: ``valid`` iff there are no violations.

    A result without a schedule (INFEASIBLE, or UNKNOWN with no ops) breaks nothing, so it is
    ``valid``, but there was nothing to check: ``checked`` is False, and a filter for usable
    schedules wants ``report.valid and report.checked`` (or ``schedule.has_schedule``).
    """

    violations: list[Violation] = field(default_factory=list)
    makespan: float | None = None
    peak_memory: int | None = None
    #: False for a result without a schedule (nothing was checked)
    checked: bool = True

    def __repr__(self) -> str:
        # one line: a report of thousands of violations would flood a notebook
        if not self.checked:
            return "<ValidationReport: no schedule to check>"
        if self.valid:
            return (f"<ValidationReport valid: makespan {self.makespan:g}, "
                    f"peak memory {self.peak_memory} B>")  # fmt: skip
        counts: dict[str, int] = {}
        for v in self.violations:
            counts[v.kind] = counts.get(v.kind, 0) + 1
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))
        return (f"<ValidationReport invalid: {len(self.violations)} violation(s) ({kinds}); "
                f"first: {self.violations[0]}>")  # fmt: skip

    @property
    def valid(self) -> bool:
        return not self.violations

    def __bool__(self) -> bool:
        return self.valid

    def kinds(self) -> set[str]:
        return {v.kind for v in self.violations}

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "checked": self.checked,
            "makespan": self.makespan,
            "peak_memory": self.peak_memory,
            "violations": [
                {"kind": v.kind, "message": v.message, "ops": list(v.ops), "time": v.time}
                for v in self.violations
            ],
        }

    def summary(self) -> str:
        if not self.checked or (self.valid and self.makespan is None):
            return "no schedule to check (the solver found none)"
        if self.valid:
            return f"valid: makespan {self.makespan:g}, peak memory {self.peak_memory} B"
        lines = [f"invalid: {len(self.violations)} violation(s)"]
        lines += [f"  {v}" for v in self.violations[:50]]
        if len(self.violations) > 50:
            lines.append(f"  ... and {len(self.violations) - 50} more")
        return "\n".join(lines)

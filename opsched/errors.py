"""Exceptions raised by opsched.

Every error that bad input can cause derives from :class:`OpschedError` and carries a one-line
message that names the problem and where it is (file, op, line). The CLI prints that line and
exits with status 2; it never shows a traceback for these.

:class:`OpschedError` is a :class:`ValueError` (bad input is a bad value), so code that
guards a call with ``except ValueError`` catches opsched's refusals too.
"""

from __future__ import annotations

__all__ = ["GraphError", "InputError", "OpschedError", "ProblemError", "ScheduleFormatError"]


class OpschedError(ValueError):
    """Base class of every error opsched raises on purpose.

    Examples
    --------
    >>> import opsched
    >>> try:
    ...     opsched.Machine(units=0)
    ... except ValueError as e:  # every opsched error is a ValueError
    ...     print(type(e).__name__, "-", e)
    ProblemError - units must be a positive integer, got 0
    """

    def __init__(self, message: str, where: str | None = None) -> None:
        self.message = message
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)

    def located(self, where: str) -> OpschedError:
        """Return a copy of this error with ``where`` prefixed (e.g. the file it came from)."""
        loc = f"{where}: {self.where}" if self.where else where
        return type(self)(self.message, loc)


class InputError(OpschedError):
    """A file could not be read: missing, malformed, truncated or of an unknown format."""


class GraphError(OpschedError):
    """The op graph is not valid: duplicate names, unknown deps, cycles, bad numbers."""


class ProblemError(OpschedError):
    """The machine or problem definition is not valid (units, resources, memory cap)."""


class ScheduleFormatError(OpschedError):
    """A schedule document is malformed or does not match its graph."""

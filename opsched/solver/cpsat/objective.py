"""Objective terms of the CP-SAT model; each is added only when used."""

from __future__ import annotations

from opsched.solver.cpsat.variables import Variables

__all__ = ["Objective"]


class Objective:
    """Sets what the model minimises and any bound carried over from an earlier stage."""

    def __init__(self, variables: Variables) -> None:
        self.v = variables
        self.m = variables.model

    def minimise_makespan(self) -> None:
        assert self.v.makespan is not None
        self.m.minimize(self.v.makespan)

    def minimise_peak(self) -> None:
        assert self.v.peak is not None
        self.m.minimize(self.v.peak)

    def makespan_at_most(self, ticks: int) -> None:
        assert self.v.makespan is not None
        self.m.add(self.v.makespan <= ticks)

    def peak_at_most(self, quanta: int) -> None:
        assert self.v.peak is not None
        self.m.add(self.v.peak <= quanta)

"""The exact Pareto front of makespan versus peak memory (epsilon-constraint method).

Start from the lexicographic optimum (least makespan, then least peak at that makespan).
Then repeat: require a peak strictly below the last point's, find the least makespan under
that cap, then the least peak at that makespan; stop when no schedule fits. Every point is
non-dominated, and when every stage is proven optimal the list is the whole front.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opsched.errors import OpschedError, ProblemError
from opsched.problem import Objective, Problem, check_callable, require_problem
from opsched.schedule import Schedule, Status
from opsched.solver.cpsat.solve import solve_cpsat
from opsched.solver.defaults import DEFAULT_WORKERS, check_seconds, check_workers
from opsched.solver.scaling import choose_scaling

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ParetoFront", "ParetoPoint", "pareto_front"]


@dataclass(frozen=True)
class ParetoPoint:
    """One non-dominated (makespan, peak memory) pair and the schedule that reaches it."""

    makespan: float
    peak_memory: int
    proven: bool
    schedule: Schedule


@dataclass
class ParetoFront:
    """Points sorted by increasing makespan (so decreasing peak memory)."""

    graph: str
    points: list[ParetoPoint] = field(default_factory=list)
    complete: bool = False  #: every stage proven and the search ran to infeasibility
    #: why no schedule exists at all (an empty front proven so); None otherwise
    reason: str | None = None
    wall_time_s: float = 0.0
    #: why the front is not complete (time limit, ``max_points``, a point not proven); None
    #: when it is
    stopped: str | None = None

    def __repr__(self) -> str:
        # the points' schedules are left out (each is a whole schedule)
        front = ", ".join(f"({p.makespan:g}, {p.peak_memory})" for p in self.points[:8])
        more = f", ... {len(self.points) - 8} more" if len(self.points) > 8 else ""
        state = "complete" if self.complete else "incomplete"
        return f"<ParetoFront {self.graph}: {state}, (makespan, peak) {front}{more}>"

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(
            {
                "makespan": [p.makespan for p in self.points],
                "peak_memory": [p.peak_memory for p in self.points],
                "proven": [p.proven for p in self.points],
            }
        )

    def summary(self) -> str:
        pts = ", ".join(f"({p.makespan:g}, {p.peak_memory})" for p in self.points)
        state = "complete" if self.complete else f"incomplete: {self.stopped}"
        return f"Pareto front of {self.graph} ({state}, {self.wall_time_s:.2f} s): {pts}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "graph": self.graph,
            "complete": self.complete,
            "stopped": self.stopped,
            "wall_time_s": self.wall_time_s,
            "points": [
                {"makespan": p.makespan, "peak_memory": p.peak_memory, "proven": p.proven}
                for p in self.points
            ],
        }

    def plot(self, ax: Any = None) -> Any:
        """Step plot of the front (matplotlib, ``pip install opsched[plot]``); returns the axes.

        Proven points are filled, points not proven hollow; the title says when the front is
        incomplete (why: :attr:`stopped`)."""
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            raise OpschedError("plotting needs matplotlib: pip install 'opsched[plot]'") from None

        from opsched.viz.plots import bytes_axis, new_axes

        if ax is None:
            ax = new_axes(plt, (5, 3.5))
        xs = [p.makespan for p in self.points]
        ys = [p.peak_memory for p in self.points]
        ax.step(xs, ys, where="post", color="tab:blue")
        # an unproven point may be dominated by a schedule not found: drawn apart from the rest
        for proven, face in ((True, "tab:blue"), (False, "none")):
            pts = [(p.makespan, p.peak_memory) for p in self.points if p.proven is proven]
            if pts:
                ax.scatter(*zip(*pts, strict=True), facecolors=face, edgecolors="tab:blue",
                           zorder=3, label="proven" if proven else "not proven")  # fmt: skip
        ax.set_xlabel("makespan")
        bytes_axis(ax, "peak memory")
        state = "" if self.complete else f" (incomplete: {self.stopped or 'not proven'})"
        ax.set_title(f"{self.graph}: makespan vs peak memory{state}", fontsize=8)
        return ax


def pareto_front(
    problem: Problem,
    *,
    time_limit: float = 60.0,
    point_time_limit: float = 10.0,
    num_workers: int = DEFAULT_WORKERS,
    max_points: int = 1000,
    progress: Callable[[ParetoPoint], None] | None = None,
) -> ParetoFront:
    """Compute the makespan / peak-memory Pareto front of ``problem`` with CP-SAT.

    The problem's memory cap, if any, bounds the whole front. ``progress``, if given, is
    called with each point as it is found (a later point with the same makespan and a lower
    peak replaces it in the front). The front is ``complete`` when every point is proven and
    the search ran until no schedule was left below the last peak; otherwise ``stopped`` says
    why not (the time limit, ``max_points`` points found, a point not proven in
    ``point_time_limit``, no schedule found nor refuted: the solver's reason).

    Examples
    --------
    Two independent ops of 8 bytes each, one unit each on a 2-unit machine: run them together
    (makespan 1, peak 16) or one after the other (makespan 2, peak 8).

    >>> from opsched.ir import Op, OpGraph
    >>> from opsched.problem import Machine
    >>> g = OpGraph((Op("a", 1, output_bytes=8), Op("b", 1, output_bytes=8)))
    >>> f = pareto_front(Problem(g, Machine(units=2)), point_time_limit=5)
    >>> [(p.makespan, p.peak_memory) for p in f.points], f.complete
    ([(1.0, 16), (2.0, 8)], True)
    """
    require_problem(problem, "pareto_front")
    check_callable(progress, "progress")
    t0 = time.perf_counter()
    deadline = t0 + check_seconds(time_limit)
    check_seconds(point_time_limit, "point_time_limit")
    check_workers(num_workers)
    if isinstance(max_points, bool) or not isinstance(max_points, int) or max_points < 1:
        raise ProblemError(f"max_points must be an integer >= 1, got {max_points!r}")
    front = ParetoFront(problem.graph.name)
    cap = problem.memory_cap
    all_proven = True
    stopped: str | None = None
    quantum = choose_scaling(problem.graph).memory_quantum
    if problem.graph.num_ops == 0:  # nothing to schedule: the one point (0, persistent)
        r = solve_cpsat(problem, Objective.MAKESPAN_THEN_MEMORY, time_limit=point_time_limit)
        if r.status is Status.OPTIMAL and r.makespan is not None and r.peak_memory is not None:
            front.points.append(ParetoPoint(r.makespan, r.peak_memory, True, r))
            front.complete = True
        front.wall_time_s = time.perf_counter() - t0
        return front
    while True:
        if len(front.points) >= max_points:
            stopped = f"stopped at max_points={max_points}"
            break
        left = deadline - time.perf_counter()
        if left <= 0:
            stopped = f"stopped at the time limit ({time_limit:g} s)"
            break
        p = problem if cap is None else problem.with_machine(memory_cap=cap)
        r = solve_cpsat(
            p, Objective.MAKESPAN_THEN_MEMORY,
            time_limit=min(point_time_limit, left), num_workers=num_workers,
        )  # fmt: skip
        if r.status is Status.INFEASIBLE:
            if not front.points:  # nothing fits the problem's own cap
                front.reason = str(r.info.get("reason", "the memory cap is too tight"))
            break
        if not r.has_schedule or r.makespan is None or r.peak_memory is None:
            below = "" if cap is None else f" with a peak of at most {cap}"
            # the solver's reason: the time limit, or a rounded model that is infeasible
            # (which no longer point_time_limit would change)
            why = r.info.get("reason") or "time limit reached before any schedule was found"
            stopped = f"no schedule{below} found, nor refuted: {why}"
            break
        proven = r.status is Status.OPTIMAL
        if not proven and all_proven:
            all_proven = False
            stopped = f"the point of makespan {r.makespan:g} is not proven optimal"
        # every earlier point has a higher peak, so one not ending sooner is dominated: the
        # last point where makespans tie, or an unproven point that a later solve beat
        front.points = [q for q in front.points if q.makespan < r.makespan]
        front.points.append(ParetoPoint(r.makespan, r.peak_memory, proven, r))
        if progress is not None:
            progress(front.points[-1])
        cap = r.peak_memory - quantum  # every peak is persistent + a multiple of it
        if cap < problem.graph.persistent_bytes:
            break
    front.complete = all_proven and stopped is None
    front.stopped = None if front.complete else stopped
    front.wall_time_s = time.perf_counter() - t0
    return front

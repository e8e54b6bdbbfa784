"""A text Gantt chart for terminals and logs."""

from __future__ import annotations

from opsched.schedule import Schedule

__all__ = ["gantt_text"]


def gantt_text(schedule: Schedule, width: int = 60) -> str:
    """Render ``schedule`` as one row per unit, then one row per op without a unit.

    Each op is drawn over its interval, scaled so the makespan spans ``width`` columns, and
    labelled with as much of its name as fits.

    Examples
    --------
    >>> from opsched.demo import seed_problem
    >>> from opsched.heuristics import greedy
    >>> print(gantt_text(greedy(seed_problem(units=2)), width=12))
    unit 0 |InCoBNReAdOu|
    unit 1 |    Co      |
    t: 0 .. 6
    """
    ops = [o for o in schedule.ops if o.end > o.start]
    if not ops or not schedule.makespan:
        return "(empty schedule)"
    scale = width / schedule.makespan
    rows: dict[str, list[str]] = {}
    keyed = sorted(ops, key=lambda o: (o.unit is None, o.unit or 0, o.start))
    for o in keyed:
        label = f"unit {o.unit}" if o.unit is not None else o.name
        row = rows.setdefault(label, [" "] * width)
        a = min(width - 1, round(o.start * scale))
        b = max(a + 1, min(width, round(o.end * scale)))
        text = (o.name + "=" * width)[: b - a]
        row[a:b] = list(text)
    pad = max(len(k) for k in rows)
    lines = [f"{k.ljust(pad)} |{''.join(v)}|" for k, v in rows.items()]
    lines.append(f"t: 0 .. {schedule.makespan:g}")
    return "\n".join(lines)

"""A text Gantt chart for terminals and logs."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from opsched.schedule import Schedule

__all__ = ["HTML_ROWS", "gantt_text", "html_table"]


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


#: rows of a schedule's notebook table (``_repr_html_``); the rest are counted, not shown
HTML_ROWS = 50


def html_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], total: int) -> str:
    """A bold title over a table, every cell HTML-escaped, then how many of ``total`` rows
    were left out."""

    def line(tag: str, cells: Sequence[str]) -> str:
        return "<tr>" + "".join(f"<{tag}>{escape(c)}</{tag}>" for c in cells) + "</tr>"

    body = "".join(line("td", r) for r in rows)
    more = f"<p>... {total - len(rows)} more ops</p>" if total > len(rows) else ""
    return f"<p><b>{escape(title)}</b></p><table>{line('th', header)}{body}</table>{more}"

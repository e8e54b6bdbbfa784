"""Rendering a :class:`~opsched.report.build.ReportData` as HTML and Markdown.

The HTML page carries plotly.js inline (one copy, no CDN), so it opens offline; its tables
are plain HTML. The Markdown has the same tables and links the PNGs.
"""

from __future__ import annotations

import html
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from opsched.report.build import ReportData

__all__ = ["fmt", "render_html", "render_markdown"]

_DEFINITIONS = [
    "Makespans and peaks are recomputed from each schedule after the independent validator "
    "accepted it; an invalid schedule is an ERROR.",
    "Proven optimum of an instance: a valid OPTIMAL result of an exact scheduler (objective "
    "makespan, or makespan then memory) or a known optimum from the built-in tables (STG, "
    "PSPLIB J30). Gaps "
    "<code>100 (makespan - optimum) / optimum</code> are taken only over such instances; "
    "<em>optimal share</em> counts a job without a schedule as not optimal.",
    "Wins: the schedulers with the best makespan found on an instance (ties all win).",
    "Performance profile (Dolan and More 2002): share of instances on which a scheduler is "
    "within a factor tau of the best makespan found, over instances every scheduler ran on.",
    "Peak-memory gap: peak above the least peak any scheduler reached on the instance.",
]


def fmt(x: Any, digits: int = 2) -> str:
    """A table cell: ``-`` for missing, fixed digits for floats.

    >>> fmt(None), fmt(float("nan")), fmt(3.14159), fmt(7), fmt(2.0)
    ('-', '-', '3.14', '7', '2')
    """
    if x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA:
        return "-"
    if isinstance(x, float):
        return str(int(x)) if x.is_integer() and abs(x) < 1e15 else f"{x:.{digits}f}"
    return str(x)


_PERCENT_SHARE = ("optimal_share", "least_peak_share")


def _cell(col: str, v: Any) -> str:
    if col in _PERCENT_SHARE and isinstance(v, float) and not math.isnan(v):
        return f"{100 * v:.1f} %"
    if col.endswith("_s") and isinstance(v, float):
        return "-" if math.isnan(v) else f"{v:.3g}"
    return fmt(v)


def _html_table(df: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for _, row in df.iterrows():
        cells = "".join(f"<td>{html.escape(_cell(str(c), row[c]))}</td>" for c in df.columns)
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _md_table(df: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(str(c) for c in df.columns) + " |"]
    lines.append("|" + "---|" * len(df.columns))
    for _, row in df.iterrows():
        # a "|" in a cell (a set label, an error text) had ended the cell early and shifted
        # the rest of the row into the wrong columns
        cells = (_cell(str(c), row[c]).replace("|", "\\|") for c in df.columns)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _sections(data: ReportData) -> list[tuple[str, pd.DataFrame]]:
    conflicts = data.optima[data.optima["source"] == "conflict"].reset_index()
    out = [
        ("Gap to the proven optimum, per scheduler", data.gaps),
        ("Gap to the proven optimum, per set, units, memory cap and scheduler",
         data.gaps_by_group),
        ("Wins", data.wins),
        ("Time to solution and how runs ended", data.times),
        ("Peak memory", data.peaks),
    ]  # fmt: skip
    if len(conflicts):
        out.append(("Conflicts (left out of the gaps)", conflicts))
    errors = data.results[data.results["status"].isin(["ERROR", "TIMEOUT"])]
    if len(errors):
        first = errors[["graph", "units", "cap", "scheduler", "status", "error"]].copy()
        first["error"] = (
            first["error"].fillna("").map(lambda e: e.splitlines()[0][:160] if e else "")
        )
        out.append((f"Failed jobs ({len(errors)}; first 20)", first.head(20)))
    return out


def _env_rows(data: ReportData) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for r in data.runs:
        env = json.loads(r.get("environment") or "{}")
        pk = ", ".join(f"{k} {v}" for k, v in env.get("packages", {}).items())
        rows.append(
            (
                f"run {r['run_id']} ({r['executor']}, {r['workers']} workers, "
                f"{r['submitted']} jobs)",
                f"{env.get('host', '?')}: {env.get('cpu', '?')} x{env.get('cpu_count', '?')}, "
                f"{env.get('platform', '?')}, Python {env.get('python', '?')}; {pk}",
            )
        )
    hosts = sorted(str(h) for h in data.results["host"].dropna().unique())
    rows.append(("job hosts", ", ".join(hosts) or "-"))
    e = data.environment
    pk = ", ".join(f"{k} {v}" for k, v in e.get("packages", {}).items())
    rows.append(("report made on", f"{e['host']}: {e['cpu']}, Python {e['python']}; {pk}"))
    return rows


def _left_out(s: dict[str, Any]) -> str:
    """The summary's sentences on jobs the tables do not cover (empty when none)."""
    out = ""
    if s["unfinished_jobs"]:
        out += (
            f" Not finished: {s['unfinished_jobs']} jobs of the experiment file have no result "
            "yet (a run stopped or still going); the tables cover the finished ones only, "
            "so schedulers may be compared on different instances."
        )
    if s["earlier_jobs_left_out"]:
        out += (
            f" Left out: {s['earlier_jobs_left_out']} stored jobs of an earlier version of the "
            "experiment file."
        )
    return out


def render_html(data: ReportData, figures: list[tuple[str, Any]], png_dir: str) -> str:
    """The self-contained HTML page (plotly.js inline)."""
    from plotly.offline import get_plotlyjs

    s = data.summary()
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>opsched report: {html.escape(', '.join(data.experiments))}</title>",
        "<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}"
        "table{border-collapse:collapse;margin:.5em 0 1.5em}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
        "th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}</style>",
        f"<script>{get_plotlyjs()}</script></head><body>",
        f"<h1>opsched report: {html.escape(', '.join(data.experiments))}</h1>",
        f"<p>{s['jobs']} jobs on {s['instances']} instances "
        f"({s['with_proven_optimum']} with a proven optimum); statuses: "
        + html.escape(", ".join(f"{k} {v}" for k, v in sorted(s["statuses"].items())))
        + f". Store: <code>{html.escape(data.db)}</code>. Static PNGs: "
        f"<code>{html.escape(png_dir)}/</code>." + html.escape(_left_out(s)) + "</p><ul>",
        *(f"<li>{d}</li>" for d in _DEFINITIONS),
        "</ul>",
    ]
    for title, table in _sections(data):
        parts.append(f"<h2>{html.escape(title)}</h2>{_html_table(table)}")
    parts.append("<h2>Figures</h2>")
    for title, fig in figures:
        parts.append(f"<h3>{html.escape(title)}</h3>")
        parts.append(fig.to_html(full_html=False, include_plotlyjs=False, default_height="420px"))
    for inst in data.instances:
        if "figure" not in inst:
            continue
        opt = fmt(inst["optimum"])
        parts.append(
            f"<h3>Instance {html.escape(str(inst['graph']))} "
            f"({html.escape(str(inst['set_label']))}; optimum {opt})</h3>"
        )
        parts.append(inst["figure"].to_html(full_html=False, include_plotlyjs=False))
    parts.append("<h2>Machine and versions</h2><table>")
    parts += [
        f"<tr><th>{html.escape(k)}</th><td style='text-align:left'>{html.escape(v)}</td></tr>"
        for k, v in _env_rows(data)
    ]
    parts.append("</table></body></html>")
    return "\n".join(parts)


def render_markdown(data: ReportData, png_dir: Path, md_dir: Path, pngs: list[str]) -> str:
    """The Markdown report; PNG links are relative to the Markdown file's folder."""
    s = data.summary()
    rel = Path(os.path.relpath(png_dir.resolve(), md_dir.resolve()))
    lines = [
        f"# opsched report: {', '.join(data.experiments)}",
        "",
        f"{s['jobs']} jobs on {s['instances']} instances ({s['with_proven_optimum']} with a "
        "proven optimum); statuses: "
        + ", ".join(f"{k} {v}" for k, v in sorted(s["statuses"].items()))
        + "."
        + _left_out(s),
        "",
        *(f"- {d.replace('<code>', '`').replace('</code>', '`')}" for d in _DEFINITIONS),
    ]
    lines = [ln.replace("<em>", "*").replace("</em>", "*") for ln in lines]
    for title, table in _sections(data):
        lines += ["", f"## {title}", "", _md_table(table)]
    lines += ["", "## Figures", ""]
    lines += [f"![{n.removesuffix('.png')}]({(rel / n).as_posix()})" for n in pngs]
    lines += ["", "## Machine and versions", ""]
    lines += [f"- {k}: {v}" for k, v in _env_rows(data)]
    return "\n".join(lines) + "\n"

"""Building a report from a results store: numbers, figures, and the files they go to.

:func:`build_report` reads the store once, computes every table of
:mod:`opsched.report.stats`, draws the figures of :mod:`opsched.report.figures`, and only then
writes the HTML page (self-contained: plotly.js inline, no network needed), the PNGs and the
optional Markdown, each atomically; an error before that leaves no file behind.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from opsched._files import check_writable, note_input, write_bytes_atomic, write_text_atomic
from opsched.errors import InputError

__all__ = ["ReportData", "build_report", "collect"]

GROUP_BY = ("set_label", "units", "cap", "scheduler")


@dataclass
class ReportData:
    """Everything a report shows, computed from the store."""

    db: str
    experiments: list[str]
    results: pd.DataFrame
    optima: pd.DataFrame
    gaps: pd.DataFrame
    gaps_by_group: pd.DataFrame
    wins: pd.DataFrame
    times: pd.DataFrame
    peaks: pd.DataFrame
    profile: pd.DataFrame
    runs: list[dict[str, Any]]
    environment: dict[str, Any]
    instances: list[dict[str, Any]] = field(default_factory=list)
    #: stored jobs left out: of an earlier version of an experiment's file (a setting edited
    #: since made new jobs; ``load_results``' ``current`` column)
    earlier: int = 0
    #: current jobs with no result yet (a stopped or running ``bench``): the tables cover
    #: the finished ones only, so each scheduler may be measured on other instances
    unfinished: int = 0

    def summary(self) -> dict[str, Any]:
        """Headline counts (also the CLI's ``--json`` output)."""
        df = self.results
        return {
            "jobs": len(df),
            "instances": int(df["instance_id"].nunique()),
            "with_proven_optimum": int(self.optima["optimum"].notna().sum()),
            "conflicts": int((self.optima["source"] == "conflict").sum()),
            "statuses": {str(k): int(v) for k, v in df["status"].value_counts().items()},
            "schedulers": sorted(df["scheduler"].unique().tolist()),
            "earlier_jobs_left_out": self.earlier,
            "unfinished_jobs": self.unfinished,
        }


def _cap_label(row: pd.Series) -> str:
    if pd.notna(row["cap_fraction"]):
        return f"{100 * row['cap_fraction']:.6g}% of peak"
    if pd.notna(row["cap_bytes"]):
        from opsched.units import format_bytes

        return format_bytes(float(row["cap_bytes"]))
    return "none"


def _cap_labels(df: pd.DataFrame) -> pd.Series:
    """Each job's cap setting as the tables group it: one label per setting (two sizes or
    fractions that print alike get their exact bytes or more digits, so their rows are not
    pooled)."""
    labels = df.apply(_cap_label, axis=1) if len(df) else pd.Series([], dtype=object)
    setting = df["cap_fraction"].map(repr) + "|" + df["cap_bytes"].map(repr)
    shared = setting.groupby(labels).nunique()
    for label in shared[shared > 1].index:
        at = (labels == label) & df["cap_bytes"].notna()
        labels[at] = labels[at] + df.loc[at, "cap_bytes"].map(lambda b: f" ({int(b):,} B)")
        at = (labels == label) & df["cap_fraction"].notna()
        labels[at] = df.loc[at, "cap_fraction"].map(lambda x: f"{100 * x:.15g}% of peak")
    return labels


def collect(
    db: str | os.PathLike[str],
    experiment: str | None = None,
    instances: tuple[str, ...] = (),
    n_instances: int = 2,
) -> ReportData:
    """Read the store and compute every table of the report (nothing is written).

    ``instances`` picks the instances drawn as Gantt charts and memory curves (instance ids
    or graph names); by default the ``n_instances`` with the largest gap to the optimum (or,
    without optima, the largest spread of makespans).
    """
    from opsched.experiments.runner import environment
    from opsched.experiments.store import ResultStore
    from opsched.report import stats

    with ResultStore(db, create=False) as store:
        df = store.frame(experiment)
        earlier = int((~df["current"]).sum())  # of an earlier version of an experiment's file
        df = df[df["current"]].reset_index(drop=True)
        if df.empty:
            what = f"experiment {experiment!r}" if experiment else "any experiment"
            more = (f"; {earlier} finished jobs are of earlier versions of the experiment "
                    "files, none current") if earlier else ""  # fmt: skip
            raise InputError(f"no finished jobs of {what}{more}", str(db))
        _refuse_overlapping_experiments(df, str(db))
        df["cap"] = _cap_labels(df)
        df["units"] = df["units"].astype(object).where(df["units"].notna(), "unlimited")
        d = stats.with_gaps(df)
        chosen = _choose(d, instances, n_instances, str(db))
        drawn = [_instance(store, d, inst) for inst in chosen]
        runs = store.runs()
        exps = sorted(df["experiment"].unique().tolist())
        unfinished = store.unfinished(experiment)
    return ReportData(
        db=str(db),
        experiments=exps,
        results=d,
        optima=stats.instance_optima(df),
        gaps=stats.gap_table(df),
        gaps_by_group=stats.gap_table(df, GROUP_BY),
        wins=stats.win_table(df),
        times=stats.time_table(df),
        peaks=stats.peak_memory_table(df),
        profile=stats.performance_profile(df),
        runs=[r for r in runs if r["experiment"] in exps],
        environment=environment(),
        instances=drawn,
        earlier=earlier,
        unfinished=unfinished,
    )


def _choose(d: pd.DataFrame, wanted: tuple[str, ...], n: int, db: str) -> list[str]:
    if wanted:
        out: list[str] = []
        for w in wanted:
            hit = d.loc[(d["instance_id"] == w) | (d["graph"] == w), "instance_id"].unique()
            if not len(hit):
                raise InputError(f"--instance {w!r}: no such instance id or graph name", db)
            out.extend(h for h in hit if h not in out)
        return out
    v = d[d["makespan"].notna()]
    if v.empty or n <= 0:
        return []
    score = v.groupby("instance_id")["gap_percent"].max()
    if score.isna().all():
        ms = v.groupby("instance_id")["makespan"]
        score = (ms.max() - ms.min()) / ms.min().where(ms.min() > 0)
    score = score.fillna(-1.0)
    ranked = sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))
    return [k for k, _ in ranked[:n]]


def _instance(store: Any, d: pd.DataFrame, inst: str) -> dict[str, Any]:
    from opsched.ir.jsonio import graph_from_dict
    from opsched.problem import Machine, Problem
    from opsched.schedule import Schedule

    mine = d[d["instance_id"] == inst]
    rows = store.instance_schedules(inst, set(mine["job_id"]))
    first = mine.iloc[0]
    info = {
        "instance_id": inst,
        "graph": first["graph"],
        "set_label": first["set_label"],
        "units": first["units"],
        "cap": first["cap"],
        "optimum": first["optimum"],
        "problem": None,
        "schedules": [],
    }
    if not rows:
        return info
    g = graph_from_dict(store.graph_json(rows[0]["graph_hash"]))
    r0 = rows[0]
    cap = r0["memory_cap"]
    info["problem"] = Problem(
        g, Machine(units=r0["units"], resources=r0["resources"], memory_cap=cap),
        r0["objective"],
    )  # fmt: skip
    info["schedules"] = [Schedule.from_dict(r["schedule"]) for r in rows]
    return info


def _refuse_overlapping_experiments(df: pd.DataFrame, where: str) -> None:
    """Raise if two experiments ran the same instance with the same scheduler: their runs
    (another time limit, say) would be pooled into one row and counted twice."""
    per_pair = df.groupby(["instance_id", "scheduler"])["experiment"].nunique()
    both = per_pair[per_pair > 1]
    if both.empty:
        return
    inst, sched = both.index[0]
    names = sorted(df.loc[(df["instance_id"] == inst) & (df["scheduler"] == sched),
                          "experiment"].unique())  # fmt: skip
    graph = df.loc[df["instance_id"] == inst, "graph"].iloc[0]
    raise InputError(
        f"experiments {', '.join(map(repr, names))} both ran {sched} on {graph} "
        f"({len(both)} such pairs): their results would be pooled; report one at a time "
        f"with --experiment",
        where,
    )


def build_report(
    db: str | os.PathLike[str],
    html: str | os.PathLike[str],
    *,
    markdown: str | os.PathLike[str] | None = None,
    png_dir: str | os.PathLike[str] | None = None,
    experiment: str | None = None,
    instances: tuple[str, ...] = (),
    n_instances: int = 2,
) -> ReportData:
    """Write the HTML report of ``db`` (and PNGs, and optionally Markdown); return its data.

    PNGs go to ``png_dir`` (default: ``<html stem>_figures`` next to the HTML file).

    Examples
    --------
    >>> import tempfile, os
    >>> from opsched.experiments import parse_config, run_experiment
    >>> cfg = parse_config('''
    ... [experiment]
    ... name = "doc"
    ... [[graphs]]
    ... generate = "layered"
    ... ops = 8
    ... [machines]
    ... units = [2]
    ... [schedulers]
    ... names = ["cpsat", "greedy"]
    ... ''')
    >>> d = tempfile.mkdtemp()
    >>> _ = run_experiment(cfg, os.path.join(d, "r.sqlite"), workers=1, progress=False)
    >>> rep = build_report(os.path.join(d, "r.sqlite"), os.path.join(d, "r.html"))
    >>> rep.summary()["with_proven_optimum"], sorted(os.listdir(os.path.join(d, "r_figures")))[0]
    (1, 'gap.png')
    """
    from opsched.report import figures as F
    from opsched.report.render import render_html, render_markdown

    html_path = Path(html)
    pngs_dir = (
        Path(png_dir) if png_dir is not None else html_path.with_name(f"{html_path.stem}_figures")
    )
    # every output checked before any is written (a bad --markdown leaves no page behind),
    # the store among the inputs (-o r.sqlite had written the figures, then refused)
    note_input(db)
    check_writable(html_path, markdown)
    taken = {os.path.realpath(p) for p in (db, html_path, markdown) if p is not None}
    if os.path.realpath(pngs_dir) in taken:
        raise InputError("is the store or a report file; choose another folder for the figures",
                         str(pngs_dir))  # fmt: skip
    if pngs_dir.exists() and not pngs_dir.is_dir():
        raise InputError("is a file, not a folder (for the figures)", str(pngs_dir))
    # the folder is made (parents too) only after the report is computed: one under a file
    # had failed there, with an internal error
    above = next(p for p in pngs_dir.absolute().parents if p.exists())
    if not above.is_dir():
        raise InputError(f"{str(above)!r} is a file, not a folder (for the figures)",
                         str(pngs_dir))  # fmt: skip
    from opsched.report.stats import timed, with_peak_gaps

    data = collect(db, experiment, instances, n_instances)
    df = data.results
    times = timed(df)  # as the time table counts them: errors had drawn as fast runs
    plotly_figs: list[tuple[str, Any]] = [
        ("Gap to the proven optimum (%)", F.plotly_box(df, "gap_percent", "Gap to optimum (%)")),
        ("Performance profile", F.plotly_profile(data.profile)),
        ("Time to solution (s)", F.plotly_box(times, "wall_time_s", "Wall time (s)", log=True)),
    ]
    pngs: dict[str, bytes] = {
        "gap.png": F.png_box(df, "gap_percent", "Gap to the proven optimum (%)"),
        "profile.png": F.png_profile(data.profile),
        "time.png": F.png_box(times, "wall_time_s", "Wall time (s)", log=True),
    }

    peaks = with_peak_gaps(df)
    if peaks["peak_gap_percent"].notna().any():
        plotly_figs.append(
            ("Peak memory above the least peak found (%)",
             F.plotly_box(peaks, "peak_gap_percent", "Peak-memory gap (%)"))
        )  # fmt: skip
        pngs["peak.png"] = F.png_box(peaks, "peak_gap_percent", "Peak-memory gap (%)")
    for k, inst in enumerate(data.instances):
        if inst["problem"] is None:
            continue
        title = f"{inst['graph']} ({inst['units']} units, cap {inst['cap']})"
        inst["figure"] = F.plotly_instance(inst["problem"], inst["schedules"], title)
        inst["png"] = f"instance{k + 1}.png"
        pngs[inst["png"]] = F.png_instance(inst["problem"], inst["schedules"], title)
    page = render_html(data, plotly_figs, pngs_dir.name)
    md = render_markdown(data, pngs_dir, Path(markdown).parent, list(pngs)) if markdown else None
    # everything computed: now write
    pngs_dir.mkdir(parents=True, exist_ok=True)
    for name, blob in pngs.items():
        write_bytes_atomic(blob, pngs_dir / name)
    write_text_atomic(page, html_path)
    if markdown and md is not None:
        write_text_atomic(md, markdown)
    return data

"""The ``opsched cost`` command group: predict, evaluate, fit, apply, show."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import click

from opsched._clikit import FiniteFloat, _emit_json, handle_errors, json_option, progress_lines

__all__ = ["register"]


def _write_table(df: object, path: Path) -> None:
    import gzip

    from opsched._files import write_bytes_atomic

    data = df.to_csv(index=False).encode()  # type: ignore[attr-defined]
    if path.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    write_bytes_atomic(data, path)


@click.group("cost")
def cost() -> None:
    """GPU cost model calibrated from measured CUDA kernel timings."""


@cost.command("predict")
@click.option("--gpu", default=None, help="GPU for every row (default: each row's gpu column).")
@click.option("--input", "-i", "input_", required=True, type=click.Path(path_type=Path),
              help="Timing table (.csv or .csv.gz) in any kernel-timings schema.")  # fmt: skip
@click.option("--output", "-o", required=True, type=click.Path(path_type=Path),
              help="Where to write the rows plus predicted_time_us (.csv or .csv.gz).")  # fmt: skip
@handle_errors
def predict(gpu: str | None, input_: Path, output: Path) -> None:
    """Predict the time of every row of a timing table."""
    from opsched.cost.data import read_table
    from opsched.cost.evaluate import predict_table

    _check_gpu_option(gpu)
    out = predict_table(read_table(input_), gpu, str(input_))
    no_gpu = out.attrs["_opsched"]["no_gpu"]
    bad = out.attrs["_opsched"]["impossible"]
    bad_rows = len({row for row, _ in bad})
    skipped = out.attrs["_opsched"]["skipped"]
    other = int(out["predicted_time_us"].isna().sum()) - no_gpu - bad_rows - len(skipped)
    _write_table(_as_given(input_, out), output)
    notes = [f"{no_gpu} rows without a GPU name, give --gpu to price them"] if no_gpu else []
    notes += [_left_out(skipped)] if skipped else []
    notes += [f"{other} rows not priced"] if other > 0 else []
    if bad:
        row, why = bad[0]
        notes += [f"{bad_rows} rows with a shape no kernel can have (data row {row + 1}: {why})"]
    note = f" (left empty: {'; '.join(notes)})" if notes else ""
    click.echo(f"wrote {len(out)} rows to {output}{note}{_read_as_aten(out)}")


def _as_given(path: Path, priced: Any) -> Any:
    """The table at ``path`` with every cell as its file spells it, plus ``priced``'s
    prediction columns: the numeric reading the prices come from turns a column of whole
    numbers with a blank into floats (``24`` -> ``24.0``, exact only below 2**53) and reads
    ``NA`` or ``null`` as a blank, which writing ``priced`` itself would have put in the output.
    """
    import pandas as pd

    text = pd.read_csv(path, dtype=str, keep_default_na=False, low_memory=False)
    if len(text) != len(priced):  # the same reader on the same file: never expected
        return priced
    for col in priced.attrs["_opsched"]["columns"]:
        text[col] = priced[col].to_numpy()
    return text


def _read_as_aten(out: Any) -> str:
    """A note on the NeuSight-schema rows whose op NeuSight's rules do not name, which are
    priced as the profiler's ATen ops of that name (:func:`opsched.cost.sources.neusight_op`).
    """
    from opsched.cost.sources import neusight_named

    if out.attrs["_opsched"]["schema"] != "neusight" or "op" not in out.columns:
        return ""
    priced = out["predicted_time_us"].notna()
    ops = [str(o).strip() for o, p in zip(out["op"], priced, strict=True)
           if p and isinstance(o, str) and o.strip()]  # fmt: skip
    other = [o for o in ops if not neusight_named(o)]
    if not other:
        return ""
    shown = _first_five([repr(n) for n in sorted(set(other))])
    return f" ({len(other)} rows of ops NeuSight's rules do not name, read as ATen ops: {shown})"


def _first_five(names: list[str]) -> str:
    """``names`` joined, the first five of them and how many more.

    >>> _first_five(list("abcdefg"))
    'a, b, c, d, e and 2 more'
    """
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _left_out(skipped: list[tuple[int, str, str]]) -> str:
    """One phrase on the rows :func:`~opsched.cost.evaluate.predict_table` left out
    (:data:`opsched.cost.data.Skipped`): ops of no rule and dtypes of no class, named (the
    first five) with the first data row of each, and the rows of no readable shape.

    >>> _left_out([(4, "op", "'x'"), (6, "shape", ""), (7, "dtype", "float64")])
    ... # doctest: +NORMALIZE_WHITESPACE
    "1 rows of ops without a shape rule: 'x' (first: data row 5); 1 rows of dtypes without a
    class: float64 (first: data row 8); 1 rows without a readable shape"
    """
    from opsched.cost.data import NO_OP

    parts = []
    bare = [row for row, kind, name in skipped if kind == "op" and name == NO_OP]
    if bare:
        parts.append(f"{len(bare)} kernel rows without an op and of no launch rule "
                     f"(first: data row {bare[0] + 1})")  # fmt: skip
    skipped = [s for s in skipped if not (s[1] == "op" and s[2] == NO_OP)]
    for what, phrase in (("op", "ops without a shape rule"), ("dtype", "dtypes without a class")):
        rows = [(row, name) for row, kind, name in skipped if kind == what]
        if rows:
            names = sorted({name for _, name in rows})
            shown = _first_five(names)
            first = rows[0][0] + 1
            parts.append(f"{len(rows)} rows of {phrase}: {shown} (first: data row {first})")
    unread = sum(kind == "shape" for _, kind, _ in skipped)
    if unread:
        parts.append(f"{unread} rows without a readable shape")
    return "; ".join(parts)


def _check_gpu_option(gpu: str | None) -> None:
    """An unknown ``--gpu`` is the option's fault, not the file's: say so before reading."""
    from opsched.cost.gpu_names import resolve_gpu
    from opsched.errors import InputError

    if gpu is not None:
        try:
            resolve_gpu(gpu)
        except InputError as e:
            raise e.located("--gpu") from None


@cost.command("evaluate")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--gpu", default=None, help="GPU for every row (default: each row's gpu column).")
@json_option
@handle_errors
def evaluate(file: Path, gpu: str | None, as_json: bool) -> None:
    """Median / mean absolute % error per GPU and family, next to the plain roofline."""
    from opsched.cost.data import read_table
    from opsched.cost.evaluate import errors, predict_table
    from opsched.errors import InputError

    _check_gpu_option(gpu)
    pred = predict_table(read_table(file), gpu, str(file))
    try:
        table = errors(pred)
    except InputError as e:
        raise e.located(str(file)) from None
    no_gpu = pred.attrs["_opsched"]["no_gpu"]
    if no_gpu:
        click.echo(f"{file}: {no_gpu} rows without a GPU name not scored (--gpu prices "
                   "every row as one GPU)", err=True)  # fmt: skip
    left = _left_out(pred.attrs["_opsched"]["skipped"])
    if left:
        click.echo(f"{file}: not scored: {left}", err=True)
    bad = table.attrs.get("unmeasured", [])
    if bad:
        shown = ", ".join(map(str, bad[:5])) + (", ..." if len(bad) > 5 else "")
        click.echo(f"{file}: {len(bad)} rows not scored, their measured time is no time (text, "
                   f"infinite or below 0; data rows {shown})", err=True)  # fmt: skip
    if as_json:
        _emit_json(table.to_dict(orient="records"))
        return
    buf = io.StringIO()
    w = max([18, *(len(str(f)) for f in table["family"])])  # "(kernel)" rows are longer
    buf.write(f"{'gpu':16s} {'family':{w}s}  rows   median%   mean%  roof-med%  roof-mean%\n")
    for r in table.itertuples(index=False):
        buf.write(f"{r.gpu:16s} {r.family:{w}s} {r.rows:5d} {r.median_ape:9.1f} {r.mean_ape:7.1f}"
                  f" {r.roofline_median_ape:10.1f} {r.roofline_mean_ape:11.1f}\n")  # fmt: skip
    click.echo(buf.getvalue().rstrip())


@cost.command("fit")
@click.option("--data", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder of timing tables (default: datasets/kernel-timings).")  # fmt: skip
@click.option("--add", "extra", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Another timing table to fit (collected rows); repeatable.")  # fmt: skip
@click.option("--output", "-o", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder for the profiles (default: the package's cost/profiles).")  # fmt: skip
@click.option("--quiet", "-q", is_flag=True, help="No progress lines on stderr.")
@handle_errors
def fit(data: Path | None, extra: tuple[Path, ...], output: Path | None, quiet: bool) -> None:
    """Rebuild the per-GPU profiles from the timing data (deterministic).

    To calibrate a card of your own: time it with `opsched cost collect --device cuda`, add
    its row to a copy of gpu_specs.csv if it is not there (--data FOLDER with the copy and the
    tables), fit with --add ROWS.csv -o MY_PROFILES, and point OPSCHED_PROFILES at
    MY_PROFILES for every later opsched call.
    """
    from opsched.cost.export import fit_profiles

    written = fit_profiles(data, output, extra, progress=None if quiet else progress_lines())
    click.echo(f"wrote {len(written)} files to {written[0].parent}")


@cost.command("apply")
@click.argument("graph", type=click.Path(path_type=Path))
@click.option("--gpu", required=True,
              help="GPU name, e.g. A100-SXM4-80GB, H100-SXM5, T4 (an unknown name lists the "
                   "known ones; a bare A100, H100 or V100 means the SXM board: A100-SXM4-80GB, "
                   "H100-SXM5, V100-SXM2).")  # fmt: skip
@click.option(
    "--dtype", default=None, help="Precision of every op, e.g. float16 (default: each op's)."
)
@click.option("--tick", "tick_us", type=FiniteFloat(min=0, min_open=True), default=None,
              help="Integer durations in ticks of this many microseconds.")  # fmt: skip
@click.option("--tf32", "tf32", type=click.Choice(["pytorch", "on", "off"]), default="pytorch",
              show_default=True,
              help="float32 GEMMs/convs on TF32 tensor cores (sm_80+): PyTorch's defaults "
                   "(convs TF32, matmuls FP32; a traced op whose kernel names show its math "
                   "is priced so), both, or neither.")  # fmt: skip
@click.option("--output", "-o", required=True, type=click.Path(path_type=Path))
@handle_errors
def apply_cmd(
    graph: Path, gpu: str, dtype: str | None, tick_us: float | None, tf32: str, output: Path
) -> None:
    """Fill a graph's durations (us), output sizes and SM demands for one GPU."""
    from opsched.cost.apply import apply
    from opsched.errors import GraphError, ProblemError
    from opsched.importers import read_graph
    from opsched.ir import write_graph_json
    from opsched.ir.kinds import DTYPE_BYTES

    allow = {"pytorch": None, "on": True, "off": False}[tf32]
    _check_gpu_option(gpu)  # the options' faults named as theirs, before the file's
    if dtype is not None and dtype not in DTYPE_BYTES:
        raise ProblemError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPE_BYTES)}", "--dtype")
    g0 = read_graph(graph)
    try:
        g = apply(g0, gpu, dtype, tick_us, allow_tf32=allow)
    except GraphError as e:  # an op the model cannot price: say which file it is in
        raise e.located(str(graph)) from None
    write_graph_json(g, output)
    total = sum(op.duration for op in g.ops)
    work = f"{total:.1f} us" if tick_us is None else f"{total:.0f} ticks of {tick_us:g} us"
    click.echo(f"wrote {output}: {len(g.ops)} ops, {work} of work, {g.resources['sm']} SMs")


@cost.command("show")
@click.argument("gpu")
@json_option
@handle_errors
def show(gpu: str, as_json: bool) -> None:
    """Where a GPU's predictions come from: its own timings, a same-chip GPU's, or the pool."""
    from opsched.cost.profile import load_profile

    prof = load_profile(gpu)
    rows = prof.sources()
    s = prof.spec
    if as_json:
        _emit_json({"gpu": prof.gpu, "name": s.name, "arch": s.arch, "sm_count": s.sm_count,
                    "mem_bw_gbps": s.mem_bw_gbps, "kernel_floor_us": prof.kernel_floor,
                    "family_floors_us": prof.family_floors,
                    "half_tensor_cores": s.half_tensor_cores, "curves": rows})  # fmt: skip
        return
    buf = io.StringIO()
    buf.write(f"{prof.gpu}: {s.name}, {s.arch}, {s.sm_count} SMs, {s.mem_bw_gbps:g} GB/s; "
              f"kernel floor {prof.kernel_floor:g} us\n")  # fmt: skip
    if prof.family_floors:
        floors = ", ".join(f"{f} {us:g}" for f, us in sorted(prof.family_floors.items()))
        buf.write(f"family floors (us): {floors}\n")
    buf.write(f"{'family':18s} {'class':5s} {'curve':7s} {'rows':>7s}  "
              f"{'per call':15s} {'kernel':15s} profiler\n")  # fmt: skip
    for r in rows:
        line = (f"{r['family']:18s} {r['class']:5s} {r['source']:7s} {r['rows']:7d}  "
                f"{r['call']:15s} {r['kernel']:15s} {r['profiler']}")  # fmt: skip
        buf.write(line + "\n")
    buf.write(
        "own: fitted on this GPU's timings; a GPU name: borrowed from that same-chip GPU; "
        "pooled: the curve of all GPUs through this GPU's specs; donor: its memory-bound "
        "kernels' curve"
    )
    if not s.half_tensor_cores:
        buf.write(
            "\nno tensor cores: float16 GEMMs and convolutions run FP32 arithmetic, priced at "
            "the FP32 peak by a half curve fitted on such timings (own or a same-chip GPU's), "
            "else by the fp32 curve"
        )
    click.echo(buf.getvalue())


def register(main: click.Group) -> None:
    """Add the ``cost`` group to the ``opsched`` command."""
    main.add_command(cost)

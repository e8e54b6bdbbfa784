"""CLI commands ``opsched bench`` and ``opsched results``."""

from __future__ import annotations

from pathlib import Path

import click

from opsched._files import write_bytes_atomic
from opsched.errors import InputError

__all__ = ["register", "write_table"]


def write_table(df: object, path: Path, fmt: str | None) -> str:
    """Write a DataFrame as CSV or Parquet atomically; ``fmt`` defaults from the suffix.

    Examples
    --------
    >>> import pandas as pd, tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "t.csv")
    >>> write_table(pd.DataFrame({"a": [1, 2]}), out, None), open(out).read()
    ('csv', 'a\\n1\\n2\\n')
    """
    import pandas as pd

    assert isinstance(df, pd.DataFrame)
    path = Path(path)
    if fmt is None:
        fmt = "parquet" if path.suffix.lower() in (".parquet", ".pq") else "csv"
    if fmt == "csv":
        data = df.to_csv(index=False).encode("utf-8")
    else:
        import io

        buf = io.BytesIO()
        try:
            df.to_parquet(buf, index=False)
        except ImportError:
            raise InputError("parquet output needs pyarrow: pip install pyarrow") from None
        data = buf.getvalue()
    write_bytes_atomic(data, path)
    return fmt


def register(main: click.Group) -> None:
    """Add ``bench`` and ``results`` to the ``opsched`` command group."""
    from opsched._clikit import _emit_json, handle_errors, json_option

    @main.command()
    @click.argument("experiment", type=click.Path(path_type=Path))
    @click.option("--db", type=click.Path(path_type=Path), required=True, help="SQLite store.")
    @click.option(
        "--executor", type=click.Choice(["local", "dask"]), default="local", show_default=True
    )
    @click.option("--cluster", default=None, help="Dask scheduler address, tcp://HOST:PORT.")
    @click.option(
        "--workers",
        type=click.IntRange(min=1),
        default=2,
        show_default=True,
        help="Worker processes (local) or local Dask workers when no --cluster is given.",
    )
    @click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
    @json_option
    @handle_errors
    def bench(
        experiment: Path,
        db: Path,
        executor: str,
        cluster: str | None,
        workers: int,
        quiet: bool,
        as_json: bool,
    ) -> None:
        """Run an experiment file's jobs, storing each result in DB as it finishes.

        Rerunning the same command resumes: finished jobs are not run again.
        """
        from opsched.experiments.runner import run_experiment

        s = run_experiment(
            experiment, db, executor=executor, workers=workers, cluster=cluster,
            progress=not quiet,
        )  # fmt: skip
        if as_json:
            _emit_json(s.to_dict())
            return
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(s.statuses.items())) or "-"
        left = "; ".join(f"{k} ({n})" for k, n in s.left_out.items())
        click.echo(
            f"{s.experiment}: {s.jobs} jobs, {s.skipped} already finished, {s.ran} run "
            f"({statuses}) in {s.seconds:.1f} s -> {db}"
            + (f"; left out, the scheduler cannot take them: {left}" if left else "")
        )

    @main.command()
    @click.argument("db", type=click.Path(path_type=Path))
    @click.option("--format", "fmt", type=click.Choice(["csv", "parquet"]), default=None,
                  help="Output format (default: from the file suffix, else csv).")  # fmt: skip
    @click.option("-o", "--output", type=click.Path(path_type=Path), required=True)
    @click.option("--experiment", default=None, help="Only this experiment.")
    @click.option("--schedules", is_flag=True, help="Include each schedule's JSON.")
    @json_option
    @handle_errors
    def results(
        db: Path,
        fmt: str | None,
        output: Path,
        experiment: str | None,
        schedules: bool,
        as_json: bool,
    ) -> None:
        """Export the finished jobs of a results database as CSV or Parquet."""
        from opsched._files import check_writable
        from opsched.experiments.store import ResultStore, load_results

        check_writable(output)  # before reading the store (a folder that is a file had failed
        # only at the write, with an internal error)
        if experiment is not None:
            with ResultStore(db, create=False) as store:
                known = store.experiments()
            if experiment not in known:
                raise InputError(f"--experiment {experiment!r}: not in the store (it has: "
                                 f"{', '.join(known) or 'none'})", str(db))  # fmt: skip
        df = load_results(db, experiment, schedules=schedules)
        used = write_table(df, output, fmt)
        if as_json:
            _emit_json({"rows": len(df), "format": used, "output": str(output)})
        else:
            click.echo(f"{len(df)} rows -> {output} ({used})")

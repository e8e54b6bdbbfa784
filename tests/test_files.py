"""Writing outputs (opsched._files) and what loading the command line costs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from opsched._files import write_bytes_atomic
from opsched.errors import InputError


def test_write_under_a_file_is_one_error(tmp_path: Path) -> None:
    # the clean-up of the temporary had raised NotADirectoryError past the one-line error
    (tmp_path / "afile").write_text("x")
    with pytest.raises(InputError, match="cannot write"):
        write_bytes_atomic(b"data", tmp_path / "afile" / "out.csv")


def test_loading_the_command_line_leaves_the_heavy_libraries_out() -> None:
    # every command paid about 2 s of CPU importing these through the packages' re-exports
    # before its first line ran; they now load when a command needs them
    code = (
        "import sys, opsched.cli, opsched\n"
        "heavy = ('ortools', 'pandas', 'numba', 'scipy', 'sklearn', 'torch', 'onnx')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
        "opsched.solve_cpsat, opsched.critical_path\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == ""
    assert "ortools" in out[1] and "numba" in out[1]  # a re-exported name loads its module


def test_reexported_names_are_the_functions_not_modules() -> None:
    # a submodule of the same name (opsched.validate, opsched.hetero.heft, opsched.cost.apply)
    # must not take the function's place once it has been imported
    code = (
        "import opsched.validate.checker, opsched.hetero.heft, opsched.cost.apply\n"
        "import opsched, opsched.hetero, opsched.cost\n"
        "print(all(callable(f) for f in (opsched.validate, opsched.hetero.heft,"
        " opsched.cost.apply)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux's /proc")
def test_write_to_a_link_to_a_pipe_writes_into_the_pipe() -> None:
    # /dev/stdout under `| head` is a link to /proc/self/fd/1, whose target reads
    # "pipe:[N]": resolving it gave a path that does not exist, and the write failed
    r, w = os.pipe()
    try:
        write_bytes_atomic(b"data", f"/proc/self/fd/{w}")
        assert os.read(r, 16) == b"data"
    finally:
        os.close(r)
        os.close(w)


def test_a_failed_rename_puts_back_the_files_renamed_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the renames at a command's end had not been undone together: with the third failing,
    # the first had already replaced its file and the second created its own
    from opsched import _files

    (tmp_path / "a.txt").write_text("old a")
    real = os.replace

    def failing(src: object, dst: object) -> None:
        if Path(str(dst)).name == "c.txt":
            raise PermissionError(13, "Permission denied")
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(_files.os, "replace", failing)
    failed = pytest.raises(InputError, match=r"c\.txt: cannot write: Permission denied")
    with failed, _files.guarding_outputs():
        _files.write_text_atomic("new a", tmp_path / "a.txt")
        _files.write_text_atomic("new b", tmp_path / "b.txt")
        _files.write_text_atomic("new c", tmp_path / "c.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]  # no temporary, no copy
    assert (tmp_path / "a.txt").read_text() == "old a"


def test_renames_that_all_succeed_leave_no_second_names(tmp_path: Path) -> None:
    from opsched import _files

    (tmp_path / "a.txt").write_text("old a")
    with _files.guarding_outputs():
        _files.write_text_atomic("new a", tmp_path / "a.txt")
        _files.write_text_atomic("new b", tmp_path / "b.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]
    assert (tmp_path / "a.txt").read_text() == "new a"


@pytest.mark.skipif(not Path("/dev/stdout").exists(), reason="needs /dev/stdout")
def test_an_output_piped_to_stdout_is_not_followed_by_the_wrote_line(tmp_path: Path) -> None:
    # `cost predict -o /dev/stdout | ...` had its "wrote 2 rows" line after the CSV rows
    rows = tmp_path / "rows.csv"
    src = Path(__file__).parents[1] / "datasets" / "kernel-timings" / "deepbench_gemm.csv"
    rows.write_text("".join(src.read_text().splitlines(keepends=True)[:3]))
    r = subprocess.run(
        [sys.executable, "-m", "opsched", "cost", "predict", "-i", str(rows), "-o", "/dev/stdout"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    lines = r.stdout.splitlines()
    assert len(lines) == 3 and lines[0].endswith(",predicted_time_us")
    assert "wrote 2 rows to /dev/stdout" in r.stderr


@pytest.mark.skipif(not Path("/dev/stdout").exists(), reason="needs /dev/stdout")
@pytest.mark.parametrize(
    "args",
    [["generate", "layered", "--ops", "5"], ["zoo", "export", "squeezenet1_1"]],
)
def test_a_json_output_may_be_a_pipe_whatever_its_name(args: list[str]) -> None:
    # the commands that refuse an output not ending in .json refused /dev/stdout too
    import json

    r = subprocess.run([sys.executable, "-m", "opsched", *args, "-o", "/dev/stdout"],
                       capture_output=True, text=True, check=True)  # fmt: skip
    assert json.loads(r.stdout)["format"] == "opsched-graph/1"
    assert r.stderr.startswith("wrote /dev/stdout")


def test_an_output_that_is_a_folder_is_refused_before_wrote_is_said(tmp_path: Path) -> None:
    # the staged rename onto the folder failed only when the command ended, after it had
    # printed "wrote dir.json: ..."
    (tmp_path / "dir.json").mkdir()
    r = subprocess.run(
        [sys.executable, "-m", "opsched", "generate", "layered", "--ops", "5", "-o",
         str(tmp_path / "dir.json")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().endswith("dir.json: is a directory, not a file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.json"]

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

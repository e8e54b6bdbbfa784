"""The README's Python example runs and prints what it says."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

from opsched.datasets import dataset_path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_example_runs(tmp_path: Path) -> None:
    text = README.read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    assert len(code.strip().splitlines()) <= 12  # "a 10-line example", give or take
    code = code.replace('"datasets/', f'"{dataset_path()}/')
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    lines = out.getvalue().splitlines()
    # the comment in the README promises these two numbers
    assert lines[0] == "55.0 66.0"
    assert lines[1].startswith("cpsat on rand0000: OPTIMAL, makespan 66,")
    assert lines[1].endswith("True")
    assert (tmp_path / "rand0000.schedule.json").exists()


def test_readme_names_the_test_command() -> None:
    text = README.read_text()
    assert 'pip install -e ".[test]" && python -m pytest' in text
    assert "python3 -m pytest" in (README.parent / ".ci" / "run").read_text()


def test_readme_second_example_costs_and_schedules_a_zoo_graph() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[1], "README.md", "exec"), {})
    heft, best = map(float, out.getvalue().split())
    assert 0 < best <= heft  # the portfolio includes HEFT's insertion placement

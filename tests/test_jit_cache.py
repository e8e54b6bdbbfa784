"""numba's cache and kernels that call another file's kernels (opsched._jit.kernels_digest).

A cached kernel is checked against its own file's time stamp only, so a kernel file that
imports kernels from another keeps a digest of that file's kernels; these tests fail when
the two part, naming the constant to update (which changes the importing file, so numba
compiles it afresh).
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import opsched
from opsched._jit import kernels_digest

#: (module whose kernels import kernels, its digest constant, the module they come from)
DIGESTS = [
    ("opsched.heuristics._insertion", "LIST_KERNELS", "opsched.heuristics._kernels"),
    ("opsched.heuristics._serial", "LIST_KERNELS", "opsched.heuristics._kernels"),
    ("opsched.heuristics._nondelay_res", "LIST_KERNELS", "opsched.heuristics._kernels"),
    ("opsched.solver._downset_labels", "TABLE_KERNELS", "opsched.solver._downset_table"),
    ("opsched.solver._downset_labels", "STEP_KERNELS", "opsched.solver._downset_label_steps"),
]


@pytest.mark.parametrize(("module", "constant", "source"), DIGESTS)
def test_each_digest_matches_the_kernels_it_names(module: str, constant: str, source: str) -> None:
    have = getattr(importlib.import_module(module), constant)
    now = kernels_digest(importlib.import_module(source))
    assert have == now, f"{source}'s kernels changed: set {module}.{constant} = {now!r}"


def test_every_kernel_file_importing_kernels_keeps_a_digest() -> None:
    # a new cross-file import of kernels must come with a digest (and a row above)
    root = Path(opsched.__file__).parent
    found = set()
    for path in root.rglob("*.py"):
        text = path.read_text()
        if "@kernel" not in text:
            continue
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        for other in re.findall(r"^from (opsched\.[\w.]+) import", text, re.M):
            if other == "opsched._jit":
                continue
            src = importlib.import_module(other)
            if any(getattr(getattr(src, n), "py_func", None) is not None for n in vars(src)):
                found.add((module, other))
    assert found == {(m, s) for m, _, s in DIGESTS}


def test_the_digest_follows_a_kernel_s_source(tmp_path: Path) -> None:
    import types

    from opsched._jit import kernel

    def make(body: str) -> types.ModuleType:
        m = types.ModuleType("opsched_digest_probe")
        code = f"def f(x):\n    return {body}\n"
        src = tmp_path / f"probe_{len(list(tmp_path.iterdir()))}.py"
        src.write_text(code)
        exec(compile(code, str(src), "exec"), m.__dict__)
        m.f = kernel(m.f)
        return m

    assert kernels_digest(make("x + 1")) != kernels_digest(make("x + 2"))
    assert kernels_digest(make("x + 1")) == kernels_digest(make("x + 1"))

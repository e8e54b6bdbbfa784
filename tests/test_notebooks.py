"""Every notebook in ``notebooks/`` runs from top to bottom without an error.

The notebooks are stored without outputs; this executes each one in a fresh ``python3``
kernel (installed from ipykernel if missing), with the notebook's folder as working
directory and this checkout first on the kernel's ``PYTHONPATH`` (so the notebooks test this
source tree, installed or not), and fails on the first cell that raises.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))


def _ensure_kernel() -> None:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        from ipykernel.kernelspec import install

        install(user=True)


def test_notebooks_are_present() -> None:
    assert {p.name for p in PATHS} >= {
        "quickstart.ipynb",
        "heuristic_vs_optimal.ipynb",
        "memory_aware.ipynb",
        "cost_model.ipynb",
    }


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_stored_without_outputs(path: Path) -> None:
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, path.name


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_runs(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    _ensure_kernel()
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(REPO) + (os.pathsep + old if old else ""))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=120,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()  # raises CellExecutionError, naming the cell, on any error
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not any(o.get("output_type") == "error" for o in cell.outputs)

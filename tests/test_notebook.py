"""examples/notebook.ipynb runs from top to bottom (nbclient, a fresh kernel), on the model the
project makes itself, and says what it should: the device agrees with the reference."""

from __future__ import annotations

import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.qemu
def test_the_notebook_runs(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(REPO / "examples" / "notebook.ipynb", as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}).execute()
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "float32 within 1e-5: True" in text
    assert "int8 outputs bit-exact with the reference: True" in text
    assert "profile.svg" in str([c.outputs for c in nb.cells if c.cell_type == "code"])

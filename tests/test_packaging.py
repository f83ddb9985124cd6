"""A plain `pip install .` (a wheel, not editable) must be able to deploy: the wheel ships
runtime_c/, boards/ and templates/ as microcompile/_data/."""

import importlib.metadata
import os
import subprocess
import sys
import zipfile

import pytest

from skip_budget import NOT_INSTALLED, OFFLINE
from tests.conftest import REPO


def test_wheel_contains_runtime_boards_and_templates(tmp_path):
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0 and "No matching distribution" in p.stderr:
        pytest.skip(f"{OFFLINE} (hatchling)")
    assert p.returncode == 0, p.stderr
    wheel, = tmp_path.glob("microcompile-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for tracked in ("runtime_c", "boards", "templates"):
        files = subprocess.run(["git", "ls-files", tracked], cwd=REPO, capture_output=True, text=True).stdout.split()
        if not files:  # not a git checkout: compare with the tree instead
            files = [str(f.relative_to(REPO)) for f in (REPO / tracked).rglob("*") if f.is_file()]
        missing = [f for f in files if f"microcompile/_data/{f}" not in names]
        assert not missing, f"not in the wheel: {missing}"
    # the cycle estimate builds its QEMU plugin from this source at run time
    assert "microcompile/project/qemu_plugin/mc_profile.c" in names


def _installed_as_wheel() -> bool:
    try:
        dist = importlib.metadata.distribution("microcompile")
    except importlib.metadata.PackageNotFoundError:
        return False
    return any(str(f).startswith("microcompile/_data/") for f in dist.files or [])


@pytest.mark.skipif(not _installed_as_wheel(), reason=NOT_INSTALLED)
def test_installed_package_deploys_outside_the_checkout(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # cwd is outside the checkout, so `import microcompile` finds the installed copy.
    probe = subprocess.run([sys.executable, "-c", "import microcompile, microcompile.resources as r; "
                            "print(microcompile.__file__); print(r.resource_dir('runtime_c'))"],
                           cwd=tmp_path, env=env, capture_output=True, text=True)
    assert probe.returncode == 0, probe.stderr
    imported = probe.stdout.splitlines()[0]
    assert not imported.startswith(str(REPO / "microcompile")), f"imported from the checkout, not the wheel: {imported}"
    p = subprocess.run([sys.executable, "-m", "microcompile", "boards"], cwd=tmp_path, env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0 and "nucleo-f446re" in p.stdout, p.stderr
    # And a whole deploy on the host board, which needs templates/, runtime_c/ and boards/.
    script = ("from microcompile.frontend.tflite import write_tflite\n"
              "from microcompile.ir import Graph, Node, Tensor\n"
              "t = {n: Tensor(n, (1, 8), 'float32') for n in ('x', 'y')}\n"
              "g = Graph('tiny', t, (Node('softmax', 's', ('x',), ('y',), {'beta': 1.0}),), ('x',), ('y',))\n"
              "open('tiny.tflite', 'wb').write(write_tflite(g))\n")
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, check=True)
    d = subprocess.run([sys.executable, "-m", "microcompile", "deploy", "tiny.tflite", "--board=host", "-o", "proj"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert d.returncode == 0 and "outputs match reference: yes" in d.stdout, d.stdout + d.stderr

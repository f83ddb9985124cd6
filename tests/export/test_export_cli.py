"""`microcompile export` on the command line: what it prints, and a clear exit 2 (before any
compile) for every mistake: names that cannot be C names or collide, a directory that is not
an earlier export, options that do not go together. Hostile names in the model reach every
format only escaped."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import microcompile as mc
from support.cli_run import run_cli_inprocess
from support.digits import build_graph, load_digits_split, train
from support.names import hostile_names, patch, placeholder


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    from microcompile.frontend.tflite.writer import write_tflite
    tmp = tmp_path_factory.mktemp("cli")
    (xtr, ytr), _ = load_digits_split()
    path = tmp / "digits-v2.tflite"
    path.write_bytes(write_tflite(build_graph(train(xtr, ytr, epochs=5))))
    return path


def test_export_prints_the_names_and_writes_the_library(model, tmp_path):
    r = run_cli_inprocess("export", model, "--board", "host", "--format", "make", "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    # the file stem digits-v2 becomes the C name digits_v2
    assert "digits_v2: include/digits_v2.h, digits_v2_model" in r.stdout and "DIGITS_V2_ARENA_BYTES" in r.stdout
    d = json.loads((tmp_path / "out" / "microcompile.json").read_text())
    assert d["format"] == "make" and d["models"][0]["name"] == "digits_v2"
    assert (tmp_path / "out" / "microcompile.mk").is_file() and (tmp_path / "out" / "include" / "digits_v2.h").is_file()
    r = run_cli_inprocess("export", model, "--board", "host", "--name", "mnist", "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr                 # into the earlier export: replaced
    assert not (tmp_path / "out" / "include" / "digits_v2.h").exists()
    assert not (tmp_path / "out" / "microcompile.mk").exists() and (tmp_path / "out" / "CMakeLists.txt").is_file()


@pytest.mark.parametrize("args, message", [
    (["--name", "1st"], "is not a C identifier"),
    (["--name", "mc_model"], "is reserved"),
    (["--name", "a" * 41], "longer than 40"),
    (["--emulate"], "--emulate selects the QEMU twin's board support: it needs --bsp"),
    (["--calibration", "x.npy"], "--calibration is only used with --quantize"),
    (["--quantize", "int8"], "--quantize int8 needs --calibration"),
])
def test_mistakes_are_exit_2_before_any_work(model, tmp_path, args, message):
    r = run_cli_inprocess("export", model, "--board", "host", "-o", tmp_path / "out", *args)
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert "hint:" in r.stderr and not (tmp_path / "out").exists()


def test_two_models_with_one_name_are_refused(model, tmp_path):
    other = tmp_path / "x" / "DIGITS-V2.tflite"
    other.parent.mkdir()
    other.write_bytes(model.read_bytes())
    r = run_cli_inprocess("export", model, other, "--board", "host", "-o", tmp_path / "out")
    assert r.returncode == 2 and "would collide" in r.stderr, r.stderr


def test_a_directory_that_is_not_an_export_is_left_alone(model, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "main.c").write_text("int main(void) { return 0; }\n")
    r = run_cli_inprocess("export", model, "--board", "host", "-o", out)
    assert r.returncode == 2 and "is not a microcompile export" in r.stderr
    assert (out / "main.c").read_text() == "int main(void) { return 0; }\n" and len(list(out.iterdir())) == 1


def test_a_cmsis_pack_for_the_host_is_refused(model, tmp_path):
    r = run_cli_inprocess("export", model, "--board", "host", "--format", "cmsis-pack", "-o", tmp_path / "out")
    assert r.returncode == 2 and "not the host board" in r.stderr
    assert not (tmp_path / "out").exists()


def test_the_api_exports_one_model_and_several(model, tmp_path):
    cm = mc.compile(model, "host")
    one = cm.export(tmp_path / "one", format="make", name="digits")
    assert one.description["models"][0]["name"] == "digits" and "include/digits.h" in one.files
    two = mc.export([cm, mc.compile(model, "host", name="again")], tmp_path / "two", format="cmake")
    assert [m["name"] for m in two.description["models"]] == ["digits_v2", "again"]
    with pytest.raises(mc.UserError, match="different boards"):
        mc.export([cm, mc.compile(model, "mps2-an386")], tmp_path / "three")


def test_hostile_names_reach_every_format_escaped(tmp_path):
    """Tensor names of random hostile bytes (every control character, quotes, backslashes,
    markup, invalid UTF-8): the exported C compiles with -Werror, the .pdsc validates,
    README.md keeps each name inside one code span of one table row."""
    import subprocess

    import xmlschema
    from microcompile.frontend.tflite.writer import write_tflite
    from microcompile.ir import Graph, verify

    (xtr, ytr), _ = load_digits_split()
    g = build_graph(train(xtr, ytr, epochs=2))
    new = {name: placeholder(i) for i, name in enumerate(g.tensors)}
    g = verify(Graph(g.name, {new[k]: t.replace(name=new[k]) for k, t in g.tensors.items()},
                     tuple(n.replace(inputs=tuple(new.get(i, i) for i in n.inputs),
                                     outputs=tuple(new[o] for o in n.outputs)) for n in g.nodes),
                     tuple(new[i] for i in g.inputs), tuple(new[o] for o in g.outputs)))
    hostile = hostile_names(random.Random(7), len(new))
    # the input's and the output's names (shown in README.md) with what would end a code span or
    # a table cell, open markup or a C comment, whatever the random draw gave
    names = list(new.values())
    for k, crafted in ((names.index(g.inputs[0]), b"in`put|<b>*/\n`"), (names.index(g.outputs[0]), b"ou|t`\\x\"?")):
        hostile[k] = crafted.ljust(len(hostile[k]), b"_")
    path = tmp_path / "hostile.tflite"
    path.write_bytes(patch(write_tflite(g), dict(zip(new.values(), hostile))))
    cm = mc.compile(path, "mps2-an386")
    schema = xmlschema.XMLSchema(str(Path(__file__).resolve().parents[1] / "fixtures" / "cmsis" / "PACK.xsd"))
    for fmt in ("make", "cmsis-pack", "arduino", "zephyr"):
        out = cm.export(tmp_path / fmt, format=fmt, name="h")
        rows = [line for line in (out.directory / "README.md").read_text().splitlines()
                if line.startswith(("| input", "| output"))]
        assert len(rows) == 2 and all(line.count("`") == 2 and line.count("|") == 8 for line in rows), rows
    schema.validate(str(tmp_path / "cmsis-pack" / "microcompile.microcompile_h.pdsc"))
    src = tmp_path / "make"
    for c in sorted((src / "models").rglob("*.c")) + sorted((src / "runtime").rglob("*.c")):
        subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16",
                        "-O2", "-Wall", "-Wextra", "-Werror", f"-I{src / 'include'}", "-c", str(c), "-o",
                        str(tmp_path / "x.o")], check=True)


def test_export_quantizes_a_float_model_first(model, tmp_path):
    (xtr, _), _ = load_digits_split()
    import numpy as np
    np.save(tmp_path / "cal.npy", xtr[:40].reshape(40, 1, 64).astype(np.float32))
    r = run_cli_inprocess("export", model, "--board", "host", "--format", "make", "--quantize", "int8",
                          "--calibration", tmp_path / "cal.npy", "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    kernels = (tmp_path / "out" / "models" / "digits_v2" / "digits_v2.c").read_text()
    assert "fully_connected" in kernels and "int8_t" in kernels       # int8 kernels, not float ones
    r = run_cli_inprocess("export", model, model, "--board", "host", "--quantize", "int8",
                          "--calibration", tmp_path / "cal.npy", "-o", tmp_path / "two")
    assert r.returncode == 2 and "--quantize takes one model" in r.stderr

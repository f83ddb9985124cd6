"""`microcompile profile`'s outputs from a profile of the host agent: the table, the JSON with
exactly its stated keys, the CSV, the bar chart, and the message when matplotlib is missing."""

import csv
import json
import subprocess
import sys

import pytest

import microcompile as mc
from microcompile.report import profile as profile_report
from microcompile.errors import UserError
from support import multi_op_models as M

@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("profile")
    path = M.write("residual_int8", tmp)
    with mc.compile(path, "host").emulate(tmp / "p") as dev:
        return dev.profile(), tmp


def test_json_has_exactly_the_stated_keys(profiled):
    r, _ = profiled
    assert set(r.report) == {"unit", "total", "layers"} and r.report["unit"] == "ns"
    assert [set(x) for x in r.report["layers"]] == [{"name", "op", "macs", "count"}] * len(r.rows)
    assert r.report["layers"][0]["name"] == "conv_2d_0" and r.report["layers"][0]["op"] == "conv2d+RELU"
    assert sum(x["count"] for x in r.report["layers"]) <= r.report["total"]
    json.dumps(r.report)


def test_table_rows_totals_and_figures(profiled):
    r, _ = profiled
    table = profile_report.format_table(r.rows, r.unit, r.total, r.plain_total, ["arena 1 bytes"])
    lines = table.splitlines()
    assert lines[0].split()[:6] == ["#", "name", "layer(s)", "op", "output", "MACs"]
    assert "MACs/ns" in lines[0] and "share" in lines[0]
    assert sum(1 for ln in lines if ln.lstrip().startswith(tuple("0123456789"))) == len(r.rows)
    total_line = next(ln for ln in lines if ln.split()[:1] == ["total"])
    assert f"{sum(x.macs for x in r.rows):,}" in total_line and "100.0%" in total_line
    assert "hook overhead" in table and table.endswith("arena 1 bytes")


def test_csv(profiled, tmp_path):
    r, _ = profiled
    profile_report.write_csv(r.rows, r.unit, tmp_path / "p.csv")
    rows = list(csv.DictReader(open(tmp_path / "p.csv")))
    assert [x["name"] for x in rows] == [x.name for x in r.rows]
    assert abs(sum(float(x["share"]) for x in rows) - 1.0) < 1e-4
    assert rows[0]["output_shape"] == "x".join(map(str, r.rows[0].shape)) and rows[0]["unit"] == "ns"


def test_plot_is_an_svg_bar_per_layer(profiled, tmp_path):
    pytest.importorskip("matplotlib")
    r, _ = profiled
    profile_report.write_plot(r.rows, r.unit, tmp_path / "p.svg", "residual on host")
    svg = (tmp_path / "p.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert all(row.name in svg for row in r.rows)


def test_plot_without_matplotlib_names_the_extra(profiled, tmp_path, monkeypatch):
    r, _ = profiled
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(UserError, match="matplotlib") as e:
        profile_report.write_plot(r.rows, r.unit, tmp_path / "p.svg", "t")
    assert "microcompile[plot]" in e.value.hint and not (tmp_path / "p.svg").exists()


def test_cli_errors_exit_2_without_traceback(profiled, tmp_path):
    _, tmp = profiled
    model = tmp / "residual_int8.tflite"

    def cli(*args):
        p = subprocess.run([sys.executable, "-m", "microcompile", *map(str, args)], capture_output=True, text=True,
                           timeout=600)
        assert "Traceback" not in p.stderr, p.stderr
        return p
    p = cli("run", model, "--board=stm32", "--emulate", "--port", "/dev/ttyACM0")
    assert p.returncode == 2 and "exclude each other" in p.stderr
    p = cli("run", model, "--board=host", "--repeat", "3", "-o", tmp_path / "r")
    assert p.returncode == 2 and "--repeat needs --input" in p.stderr
    p = cli("profile", model, "--board=host", "--port", "/dev/ttyACM0")
    assert p.returncode == 2 and "no serial port" in p.stderr

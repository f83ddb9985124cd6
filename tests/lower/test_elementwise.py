"""int8 ADD through per-input rescale tables (the default schedule's, schedule/tabulate.py) and
through the lowering's arithmetic: every one of the 256 entries of both tables is
exercised (inputs sweep -128..127) against the numpy interpreter, for equal shapes (one flat
loop) and broadcast shapes, with random and power-of-two scales and every activation."""

from __future__ import annotations

import numpy as np
import pytest

from support.lower_cases import build_graph, cases, matches, reference, run_lowered
from microcompile.tir import nodes as tir
from microcompile.lower import lower_node
from microcompile.schedule import default_schedule

SHAPES = {"equal": ((1, 16, 16, 2), (1, 16, 16, 2)), "broadcast-channel": ((1, 8, 8, 4), (4,)),
          "broadcast-both": ((2, 1, 16, 8), (1, 4, 1, 8))}
ACTS = ("NONE", "RELU", "RELU6")


def _graph(shapes: str, act: str, pot: bool, seed: int = 0):
    base = cases("add", "int8", 1, seed=seed)[0]
    return build_graph(dict(base, shapes=SHAPES[shapes], activation=act, pot_scales=pot,
                            index=f"{shapes}-{act}-{pot}"))


def _sweep(g) -> dict[str, np.ndarray]:
    """Inputs that hold every int8 value, in different orders for the two inputs."""
    out = {}
    for k, name in enumerate(g.inputs):
        t = g.tensors[name]
        vals = (np.arange(t.size) * (1 if k == 0 else 255) + 17 * k) % 256 - 128
        out[name] = vals.astype(np.int8).reshape(t.shape)
    return out


@pytest.mark.parametrize("pot", [False, True])
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("shapes", SHAPES)
def test_add_tables_match_interpreter(shapes, act, pot):
    g = _graph(shapes, act, pot, seed=len(act))
    lowered = lower_node(g, g.nodes[0])
    assert not any(b.scope == "const" for b in lowered.buffers)    # the arithmetic; tables are a schedule's
    f, _ = default_schedule(lowered, None)
    assert {b.name for b in f.buffers if b.scope == "const"} == {"rescale_a", "rescale_b"}
    loops = [n for n in tir.walk(f.body) if isinstance(n, tir.For)]
    assert len(loops) == (1 if shapes == "equal" else len([d for d in g.tensors["out"].shape if d > 1]))
    ins = _sweep(g)
    assert matches(run_lowered(g, f, ins), reference(g, ins))
    assert matches(run_lowered(g, lowered, ins), reference(g, ins))


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an385"])
@pytest.mark.parametrize("act", ["NONE", "RELU"])
@pytest.mark.parametrize("shapes", ["equal", "broadcast-both"])
def test_add_on_cortex_m_matches_interpreter(shapes, act, board, tmp_path):
    from support.qemu_cases import deploy_graph
    g = _graph(shapes, act, False, seed=3)
    assert deploy_graph(g, _sweep(g), board, tmp_path)["verified"]

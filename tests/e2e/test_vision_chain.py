"""A multi-op model of the vision family, through the whole compiler, on the host and in QEMU,
against LiteRT BUILTIN_REF: conv2d -> max_pool2d -> pad_v2 -> transpose_conv2d ->
resize_bilinear -> pad -> resize_nearest_neighbor -> mean (int8 byte-equal, float32 1e-5).

The model is written with the project's own TFLite writer, so the frontend's converters
for these ops are exercised on a chain, not only on single ops.
"""

import numpy as np
import pytest

from support import flows
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, QuantParams, Tensor, ops, verify
from microcompile.ir.compare import compare
from tests.litert_ref import run_reference

# (op, attrs, whether its output gets a fresh int8 quantization); weights are added below.
CHAIN = [
    ("conv2d", {"stride": (1, 1), "padding": (1, 1, 1, 1), "activation": "RELU"}, True),
    ("max_pool2d", {"filter": (2, 2), "stride": (2, 2), "padding": (0, 0, 0, 0)}, False),
    ("pad_v2", {"pads": ((0, 0), (1, 0), (0, 1), (0, 0)), "value": 3}, False),
    ("transpose_conv2d", {"stride": (2, 2), "padding": (0, 0, 0, 0), "output_hw": (11, 11)}, True),
    ("resize_bilinear", {"size": (7, 9), "half_pixel_centers": True}, False),
    ("pad", {"pads": ((0, 0), (2, 1), (0, 0), (0, 0))}, False),
    ("resize_nearest_neighbor", {"size": (12, 12), "align_corners": True}, False),
    ("mean", {"axes": (1, 2), "keep_dims": True}, True),
]


def chain_graph(dtype: str, seed: int = 3) -> Graph:
    rng = np.random.default_rng(seed)
    int8 = dtype == "int8"

    def act_q():
        return QuantParams((float(np.float32(rng.uniform(0.02, 0.08))),), (int(rng.integers(-20, 20)),)) if int8 else None

    tensors = {"x": Tensor("x", (1, 8, 8, 3), dtype, act_q())}
    nodes, prev = [], "x"
    for k, (op, attrs, fresh) in enumerate(CHAIN):
        inputs = [prev]
        if op in ("conv2d", "transpose_conv2d"):
            cin = tensors[prev].shape[-1]
            shape = (4, 3, 3, cin)
            if int8:
                wq = QuantParams(tuple(float(np.float32(s)) for s in rng.uniform(0.005, 0.02, 4)), (0,) * 4, 0)
                w = Tensor(f"w{k}", shape, "int8", wq, rng.integers(-127, 128, shape, dtype=np.int8))
                bq = QuantParams(tuple(float(np.float32(tensors[prev].quant.s) * np.float32(s)) for s in wq.scale),
                                 (0,) * 4, 0)
                b = Tensor(f"b{k}", (4,), "int32", bq, rng.integers(-500, 500, 4, dtype=np.int32))
            else:
                w = Tensor(f"w{k}", shape, "float32", data=rng.normal(0, 0.3, shape).astype(np.float32))
                b = Tensor(f"b{k}", (4,), "float32", data=rng.normal(0, 0.3, 4).astype(np.float32))
            tensors.update({w.name: w, b.name: b})
            inputs += [w.name, b.name]
        node = Node(op, f"{op}_{k}", tuple(inputs), (f"t{k}",), attrs)
        probe = Graph("probe", tensors, (node,), (), ())
        ((shape, _),) = ops.get(op).infer(probe, node)
        quant = (act_q() if fresh else tensors[prev].quant) if int8 else None
        tensors[f"t{k}"] = Tensor(f"t{k}", shape, dtype, quant)
        nodes.append(node)
        prev = f"t{k}"
    return verify(Graph(f"vision_chain_{dtype}", tensors, tuple(nodes), ("x",), (prev,)))


def _input(graph: Graph, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = graph.tensors["x"]
    if t.dtype == "int8":
        return rng.integers(-128, 128, t.shape, dtype=np.int8)
    return rng.normal(0, 1, t.shape).astype(np.float32)


BOARDS = [pytest.param("host", id="host", marks=pytest.mark.heavy),
          pytest.param("mps2-an386", id="mps2-an386", marks=pytest.mark.qemu)]


@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_vision_chain_matches_litert(dtype, board, tmp_path):
    graph = chain_graph(dtype)
    model = tmp_path / f"{graph.name}.tflite"
    model.write_bytes(write_tflite(graph))
    x = _input(graph, 11)
    np.save(tmp_path / "x.npy", x)
    result = flows.deploy(model, board, tmp_path / "project", emulate=board != "host",
                           input_path=tmp_path / "x.npy", progress=lambda s: None)
    ((name, ref),) = run_reference(model.read_bytes(), {"x": x}).items()
    got = result.outputs[name]
    if dtype == "int8":
        assert got.tobytes() == ref.tobytes(), f"{np.abs(got.astype(int) - ref.astype(int)).max()} max diff"
    else:
        assert compare(got, ref.reshape(got.shape)).equal
    assert result.report["verified"]

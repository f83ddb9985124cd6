"""Instructions per inference of the issue-13 kernels (16x8, LSTM, GRU, SVDF) next to their MACs.

    python benchmarks/new_kernels.py [--boards mps2-an386 mps2-an385] [--only NAME ...] [--all-layers]
                                     [--skip-kernels] [--skip-models]

Two tables per board.

Kernels: single ops on fixed shapes (the test plans' builders, tests/ir/op_cases*.py, with
fixed seeds), each 16x8 op next to the same op in int8 and each recurrent op in int8 next to
float32, side by side in one firmware; per-kernel instructions from the profiled inference
(random inputs, seed 0; outputs checked bit for bit against the interpreter).

Models: every model of the corpus (tests/fixtures/corpus, made by the fixture scripts there) plus the
PyTorch MobileNet quantized 16x8 and the ResNet quantized int8 by our PTQ (calibrated on 16
standard-normal samples, seed 0) is deployed with `deploy --emulate` on each board, on
BENCHMARK.md's deterministic input (one warm-up inference, then one counted; per-layer
instructions from a third, profiled inference). mps2-an386 is a Cortex-M4F (DSP and FPU:
the 16x8 SMLALD kernels); mps2-an385 a Cortex-M3 (portable kernels, soft float). Every
output is checked against the interpreter (bit-exact for int8/int16, 1e-5 for float32);
the script exits 1 if any is not. Figures are exact and repeatable.

Per model, the rows of the layers that run a new kernel (int16 activations, or an
lstm/gru/svdf op) are printed with their MACs, instructions and instructions per MAC;
--all-layers prints every layer. A recurrent layer's MACs count every gate matmul of every
time step.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]   # this checkout, and the tests' shared helpers (tests/support)

import microcompile as mc  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "corpus"
# (op, dtypes, fixed plan choices): everything else from the plan's first case, seed 1.
_CONV = {"batch": 1, "per_channel": True, "pot_scales": False, "rect": False, "activation": "NONE", "dilation": 1}
KERNELS = [
    ("conv2d", ("int16", "int8"), dict(_CONV, hw=16, cin=16, cout=16, kernel=3, stride=1, padding="SAME")),
    ("depthwise_conv2d", ("int16", "int8"), dict(_CONV, hw=16, cin=16, multiplier=1, kernel=3, stride=1,
                                                 padding="SAME", bias=True)),
    ("transpose_conv2d", ("int16", "int8"), dict(_CONV, hw=8, cin=16, cout=8, kernel=3, stride=2,
                                                 padding="SAME", bias=True)),
    ("fully_connected", ("int16", "int8"), {"in_shape": (1, 256), "units": 64, "keep_num_dims": False,
                                            "activation": "NONE", "per_channel": True, "bias": True,
                                            "pot_scales": False}),
    ("add", ("int16", "int8"), {"shapes": ((1, 16, 16, 16), (1, 16, 16, 16)), "activation": "NONE",
                                "pot_scales": False}),
    ("mul", ("int16", "int8"), {"shapes": ((1, 16, 16, 16), (1, 16, 16, 16)), "activation": "NONE",
                                "pot_scales": False}),
    ("logistic", ("int16", "int8"), {"shape": (1, 16, 16, 16)}),
    ("tanh", ("int16", "int8"), {"shape": (1, 16, 16, 16)}),
    ("softmax", ("int16", "int8"), {"shape": (1, 64), "beta": 1.0}),
    ("lstm", ("int8", "float32"), {"batch": 1, "time": 16, "features": 16, "units": 32, "time_major": False,
                                   "cell_clip": 0.0, "cell_log2": -11, "weight_std": 0.3}),
    ("svdf", ("int8", "float32"), {"batch": 1, "features": 40, "units": 32, "rank": 1, "memory": 8,
                                   "activation": "RELU", "bias": True}),
]
# (row name, model file, PTQ activations or None)
MODELS = [("keras_lstm_int8", "keras_lstm_int8.tflite", None), ("keras_lstm_f32", "keras_lstm_f32.tflite", None),
          ("keras_gru_int8", "keras_gru_int8.tflite", None), ("keras_gru_f32", "keras_gru_f32.tflite", None),
          ("svdf_kws_int8", "svdf_kws_int8.tflite", None), ("svdf_kws_f32", "svdf_kws_f32.tflite", None),
          ("unet16x8", "unet16x8.tflite", None), ("dilated_int8", "dilated_int8.tflite", None),
          ("dilated_f32", "dilated_f32.tflite", None), ("torch_lstm", "torch_lstm.onnx", None),
          ("torch_gru", "torch_gru.onnx", None), ("torch_mobilenet int8", "torch_mobilenet.onnx", "int8"),
          ("torch_resnet int8", "torch_resnet.onnx", "int8")]
RECURRENT = {"lstm", "gru", "svdf"}


def _calibration(path: Path, tmp: Path) -> Path:
    import onnx
    dims = [d.dim_value for d in onnx.load(str(path)).graph.input[0].type.tensor_type.shape.dim]
    out = tmp / "cal.npy"
    np.save(out, np.random.default_rng(0).normal(0, 1, (16, *dims[1:])).astype(np.float32))
    return out


def _deploy(path: Path, board: str, activations: str | None, tmp: Path) -> mc.DeployResult:
    model = path if activations is None else mc.quantize(path, _calibration(path, tmp), activations=activations)
    return mc.compile(model, board).deploy(tmp / "project", emulate=True)


def _kernel_cases():
    import importlib
    from support.op_cases import cases

    for family in ("op_cases_s16", "op_cases_recurrent"):   # they add their plans to op_cases'
        importlib.import_module(family)

    out = []
    for op, dtypes, fixed in KERNELS:
        for dtype in dtypes:
            case = dict(cases(op, dtype, 1, seed=1)[0], **fixed)
            if op in ("logistic", "tanh") and dtype == "int16":
                case["in_scale"] = None
            case.update({k: False for k in ("const_rhs", "pot_scales") if k in case})
            out.append(case)
    return out


def kernel_table(board: str) -> bool:
    """One firmware with every KERNELS case side by side on `board`; prints one row per kernel."""
    from support.op_cases import build_graph, random_inputs
    from support.qemu_cases import deploy_graph, merge_graphs
    from microcompile.ir import ops

    all_cases = _kernel_cases()
    graphs = [build_graph(c) for c in all_cases]
    g = merge_graphs(graphs, "new_kernels")
    inputs = {}
    for k, sub in enumerate(graphs):
        inputs.update({f"g{k}.{name}": a for name, a in random_inputs(sub, k).items()})
    with tempfile.TemporaryDirectory() as tmp:
        r = deploy_graph(g, inputs, board, Path(tmp))
    # one per single-op graph; the reader names layer k "<op>_<k>" (file order), and the
    # compiler may run them in another order (memory-driven ordering), so sort by k
    rows = sorted(r["layers"], key=lambda row: int(row["name"].rsplit("_", 1)[1]))
    assert len(rows) == len(graphs), [row["op"] for row in rows]
    print(f"\n{board}: kernels ({'verified' if r['verified'] else 'NOT VERIFIED'} against the interpreter)")
    print(f"  {'op':<18} {'dtype':<8} {'shape':<34} {'MACs':>9} {'instructions':>13} {'instr/MAC':>9} "
          f"{'per element':>11}")
    for k, (case, sub) in enumerate(zip(all_cases, graphs)):
        node = sub.nodes[0]
        row = rows[k]
        assert row["op"] == node.op, (row, node.op)
        shape = " ".join("x".join(map(str, sub.tensors[i].shape)) for i in node.inputs[:1])
        shape += " -> " + "x".join(map(str, sub.tensors[node.outputs[0]].shape))
        n_out = int(np.prod(sub.tensors[node.outputs[0]].shape))
        ins, macs = row["instructions"], int(ops.get(node.op).macs(sub, node))
        per_mac = f"{ins / macs:>9.2f}" if macs else f"{'':>9}"
        print(f"  {case['op']:<18} {case['dtype']:<8} {shape:<34} {macs:>9,} {ins:>13,} {per_mac} {ins / n_out:>11.1f}")
    return bool(r["verified"])


def _is_new(graph, row: dict) -> bool:
    node = next(n for n in graph.nodes if n.name == row["name"])
    return node.op in RECURRENT or any(graph.tensors[t].dtype == "int16" for t in node.outputs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", nargs="+", default=["mps2-an386", "mps2-an385"])
    ap.add_argument("--only", nargs="+", metavar="NAME", help="benchmark only these rows (e.g. unet16x8)")
    ap.add_argument("--all-layers", action="store_true", help="print every layer, not only the new kernels")
    ap.add_argument("--skip-kernels", action="store_true", help="no single-kernel table")
    ap.add_argument("--skip-models", action="store_true", help="no model table")
    args = ap.parse_args(argv)
    all_ok = True
    for board in args.boards:
        if not args.skip_kernels:
            all_ok &= kernel_table(board)
        if args.skip_models:
            continue
        header = (f"{'model':<22} {'MACs':>9} {'instructions':>13} {'instr/MAC':>9} {'arena':>7} {'state':>6} "
                  f"{'code':>7} {'weights':>8} {'ok':>3}")
        print(f"\n{board}\n{header}\n{'-' * len(header)}")
        layer_rows = []
        for name, file, activations in MODELS:
            if args.only and name not in args.only and name.split()[0] not in args.only:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    res = _deploy(CORPUS / file, board, activations, Path(tmp))
                except mc.UserError as e:
                    print(f"{name:<22} error: {e.message}")
                    all_ok = False
                    continue
            r, graph = res.report, res.built.compiled.graph
            all_ok &= r["verified"]
            print(f"{name:<22} {r['macs']:>9,} {r['instructions']:>13,} {r['instructions'] / max(r['macs'], 1):>9.2f} "
                  f"{r['arena_bytes']:>7,} {r['state_bytes']:>6,} {r['flash_bytes'] - r['weights_bytes']:>7,} "
                  f"{r['weights_bytes']:>8,} {'yes' if r['verified'] else 'NO':>3}")
            layer_rows += [(name, row, graph.tensors[next(n for n in graph.nodes if n.name == row["name"]).outputs[0]].dtype)
                           for row in r["layers"] if args.all_layers or _is_new(graph, row)]
        print(f"\n{board}: per layer")
        print(f"  {'model':<22} {'layer':<26} {'op':<18} {'dtype':<7} {'MACs':>9} {'instructions':>13} {'instr/MAC':>9}")
        for name, row, dtype in layer_rows:
            ins = row["instructions"]
            per = f"{ins / row['macs']:>9.2f}" if ins and row["macs"] else f"{'':>9}"
            print(f"  {name:<22} {row['name'][:26]:<26} {row['op']:<18} {dtype:<7} {row['macs']:>9,} "
                  f"{ins if ins is not None else '-':>13,} {per}" if ins is not None else
                  f"  {name:<22} {row['name'][:26]:<26} {row['op']:<18} {dtype:<7} {row['macs']:>9,} {'-':>13} {per}")
    print("\ncode = flash - weights; state = the recurrent state buffer (not in the arena).")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())

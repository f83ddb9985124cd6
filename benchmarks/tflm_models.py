"""Every .tflite model in a TensorFlow Lite Micro checkout, and what microcompile does with it.

    python benchmarks/tflm_models.py PATH_TO_TFLITE_MICRO [--only SUBSTRING ...] [--seed N] [--deploy BOARD]

For each model (found under PATH, sorted): does TFLM's host interpreter (`tflite-micro`) run
it on random inputs? If not, it is out of the count (a model TFLM itself cannot run: test
fixtures of malformed files, models of ops TFLM's Python package does not register). Then
microcompile reads it and runs its interpreter (the reference every device build is checked
against) on the same inputs, compared with LiteRT's reference kernels (BUILTIN_REF) where
LiteRT runs the model, else with TFLM, as ir/compare.py defines a match: bit for bit for
integer outputs, float32 within 1e-5 relative (plus a millionth of the output's largest
magnitude). With --deploy BOARD (a QEMU twin such as mps2-an386)
each model is also built as firmware, run once on the emulated board on the same inputs, and
the device's outputs are compared with the oracle in the same way. Statuses:

  equal (LiteRT) / equal (TFLM)   every output equal to the oracle
  differs                         an output differs (printed with the largest difference)
  refused                         microcompile's error, first line (what a user sees, exit 2)

The run is deterministic (inputs from --seed). The repository does not hold TFLM's models;
the closing notes quote this script's table.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import microcompile as mc  # noqa: E402
from microcompile.errors import UserError  # noqa: E402
from microcompile.frontend.tflite import load_tflite  # noqa: E402
from microcompile.ir.compare import compare  # noqa: E402
from microcompile.reference import interp  # noqa: E402
from support.op_cases import random_inputs  # noqa: E402


def _oracle(which: str, path: Path, inputs: list[np.ndarray]) -> list[np.ndarray] | None:
    """TFLM's or LiteRT's outputs, run in a child process: both abort the process on some files."""
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(Path(tmp) / "in.npz", *inputs)
        p = subprocess.run([sys.executable, __file__, "--oracle-one", which, str(path), tmp], capture_output=True)
        if p.returncode != 0:
            return None
        with np.load(Path(tmp) / "out.npz") as z:
            return [z[f"arr_{k}"] for k in range(len(z.files))]


def _oracle_one(which: str, path: Path, tmp: Path) -> int:
    with np.load(tmp / "in.npz") as z:
        inputs = [z[f"arr_{k}"] for k in range(len(z.files))]
    outputs = (_tflm_run if which == "tflm" else _litert)(path.read_bytes(), inputs)
    if outputs is None:
        return 1
    np.savez(tmp / "out.npz", *outputs)
    return 0


def _tflm_run(data: bytes, inputs: list[np.ndarray]) -> list[np.ndarray] | None:
    from tflite_micro.python.tflite_micro import runtime
    try:
        it = runtime.Interpreter.from_bytes(data, arena_size=max(1 << 20, 16 * len(data)))
        for k, x in enumerate(inputs):
            it.set_input(x, k)
        it.invoke()
        outputs, k = [], 0
        while True:     # the interpreter does not say how many outputs there are
            try:
                outputs.append(np.array(it.get_output(k), copy=True))
            except Exception:
                return outputs
            k += 1
    except Exception:      # TFLM refuses the model or these inputs: out of the count
        return None


def _litert(data: bytes, inputs: list[np.ndarray]) -> list[np.ndarray] | None:
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
        it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
        for d, x in zip(it.get_input_details(), inputs):
            it.set_tensor(d["index"], x)
        it.invoke()
        return [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]
    except Exception:      # LiteRT refuses it (TFLM's signal ops, old metadata): TFLM is the oracle
        return None


def _compared(got: np.ndarray, want: np.ndarray):
    """The project's one definition of "outputs match" (ir/compare.py), the oracle's shape taken
    where only the stored shape differs (TFLM keeps a model's stale stored shapes)."""
    got = np.asarray(got)
    return compare(got.reshape(want.shape) if got.size == want.size else got, want)


def survey(path: Path, seed: int, board: str | None = None) -> tuple[str, str]:
    data = path.read_bytes()
    try:
        g = load_tflite(data, name=path.stem)
    except UserError as e:
        g, refusal = None, str(e).splitlines()[0]
    inputs = None
    if g is not None:
        feed = random_inputs(g, seed)
        inputs = [feed[name] for name in g.inputs]
    else:
        inputs = _inputs_from_file(data, seed)
    tflm = _oracle("tflm", path, inputs) if inputs is not None else None
    if tflm is None:
        return "not run by TFLM", ""
    if g is None:
        return "refused", refusal
    litert = _oracle("litert", path, inputs)
    oracle, name = (litert, "LiteRT") if litert is not None else (tflm, "TFLM")
    runs = {"interpreter": interp.run(g, dict(zip(g.inputs, inputs)))}
    if board is not None:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                r = mc.compile(g, board).deploy(Path(tmp) / "p", inputs=dict(zip(g.inputs, inputs)), emulate=True)
            except UserError as e:
                return "refused", f"on {board}: {str(e).splitlines()[0]}"
            runs[board] = r.outputs
    for where, got in runs.items():
        for k, want in enumerate(oracle):
            c = _compared(got[g.outputs[k]], want)
            if not c.equal:
                return "differs", f"{where}, output {k} vs {name}: max |diff| {c.max_abs_diff:g}"
    return f"equal ({name})", ""


def _inputs_from_file(data: bytes, seed: int) -> list[np.ndarray] | None:
    """Random inputs from the file's own input tensors (for a model our reader refuses)."""
    import tflite
    types = {0: np.float32, 2: np.int32, 7: np.int16, 9: np.int8, 3: np.uint8, 15: np.uint32, 4: np.int64, 6: np.bool_}
    try:
        m = tflite.Model.GetRootAs(data, 0)
        sg = m.Subgraphs(0)
        rng = np.random.default_rng(seed)
        out = []
        for i in range(sg.InputsLength()):
            t = sg.Tensors(sg.Inputs(i))
            shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
            dt = types.get(t.Type())
            if dt is None:
                return None
            x = rng.normal(0, 1, shape) if dt == np.float32 else rng.integers(0, 2 if dt == np.bool_ else 100, shape)
            out.append(np.asarray(x).astype(dt))
        return out
    except Exception:
        return None


def main() -> int:
    if sys.argv[1:2] == ["--oracle-one"]:
        return _oracle_one(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path, help="a TFLite Micro checkout (its .tflite files are searched)")
    ap.add_argument("--only", nargs="*", default=[], help="models whose path contains one of these")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--deploy", metavar="BOARD", help="also run each model on this board's QEMU twin")
    a = ap.parse_args()
    paths = sorted(p for p in a.root.rglob("*.tflite") if not a.only or any(s in str(p) for s in a.only))
    counts: dict[str, int] = {}
    for p in paths:
        status, detail = survey(p, a.seed, a.deploy)
        key = status.split(" (")[0]
        counts[key] = counts.get(key, 0) + 1
        print(f"{status:<16} {p.relative_to(a.root)}" + (f"  {detail}" if detail else ""), flush=True)
    run = sum(v for k, v in counts.items() if k != "not run by TFLM")
    print(f"\n{len(paths)} models; TFLM runs {run}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 1 if counts.get("differs") else 0


if __name__ == "__main__":
    sys.exit(main())

"""Instructions per inference of TFLite Micro's audio front end (the signal ops) on the emulated boards.

    python benchmarks/audio_frontend.py [--boards mps2-an385 mps2-an386 mps3-an547] [--tflm PATH]

The project's own preprocessor (tests/support/audio_frontend.py: TFLM's micro_speech
preprocessor op for op, 30 ms of 16 kHz int16 audio -> 40 log mel energies, int8 or float32
features) is deployed with `deploy --emulate` on each board on one deterministic frame (a
1 kHz tone at a tenth of full scale plus noise, seed 0); every output is compared with TFLM's
interpreter (the oracle of these ops) and the script exits 1 on any difference. Per layer:
MACs (the RFFT's as 2 N log2 N, the filter bank's as two per weight), instructions from the
profiled inference, and instructions per output element. With --tflm PATH (a TFLite Micro
checkout), TFLM's own audio_preprocessor_int8/_float.tflite run the same way.

Figures are exact and repeatable (QEMU instruction counts, ../shared/BENCHMARK.md). TFLM's
own kernels for these ops were not built on the same harness, so there is no peer column.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import microcompile as mc  # noqa: E402
from microcompile.frontend.tflite import load_tflite, write_tflite  # noqa: E402
from support.audio_frontend import audio_frontend_graph  # noqa: E402
from tflm_ref import tflm_interpreter  # noqa: E402

TFLM_MODELS = ("tensorflow/lite/micro/examples/micro_speech/models/audio_preprocessor_int8.tflite",
               "tensorflow/lite/micro/examples/micro_speech/models/audio_preprocessor_float.tflite")


def frame() -> np.ndarray:
    rng = np.random.default_rng(0)
    tone = 3000 * np.sin(2 * np.pi * 1000 * np.arange(480) / 16000) + rng.normal(0, 300, 480)
    return np.clip(tone, -32768, 32767).astype(np.int16).reshape(1, 480)


def run(name: str, data: bytes, board: str) -> bool:
    g = load_tflite(data, name=name)
    x = frame()
    tf = tflm_interpreter(data, arena_size=1 << 20)
    tf.set_input(x, 0)
    tf.invoke()
    want = np.array(tf.get_output(0), copy=True)
    with tempfile.TemporaryDirectory() as tmp:
        res = mc.compile(g, board).deploy(Path(tmp) / "p", inputs=x, emulate=True)
    r = res.report
    ok = bool(res.verified) and np.array_equal(res.outputs[g.outputs[0]], want)
    print(f"\n{board}  {name}: {r['instructions']:,} instructions, {r['macs']:,} MACs, arena {r['arena_bytes']:,} B, "
          f"state {r['state_bytes']:,} B, code {r['flash_bytes'] - r['weights_bytes']:,} B, weights "
          f"{r['weights_bytes']:,} B; equal to TFLM: {'yes' if ok else 'NO'}")
    print(f"  {'layer':<44} {'op':<32} {'MACs':>7} {'instructions':>13} {'per output':>10}")
    for row in r["layers"]:
        node = next(n for n in g.nodes if n.name == row["name"])
        n_out = max(g.tensors[node.outputs[0]].size, 1)
        ins = row["instructions"]
        print(f"  {row['name'][:44]:<44} {row['op']:<32} {row['macs']:>7,} {ins if ins is not None else 0:>13,} "
              f"{(ins or 0) / n_out:>10.1f}")
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", nargs="+", default=["mps2-an385", "mps2-an386", "mps3-an547"])
    ap.add_argument("--tflm", type=Path, help="a TFLite Micro checkout: also run its audio preprocessors")
    a = ap.parse_args(argv)
    models = [(f"audio_frontend_{kind}", write_tflite(audio_frontend_graph(kind))) for kind in ("int8", "float")]
    if a.tflm is not None:
        models += [(Path(p).stem, (a.tflm / p).read_bytes()) for p in TFLM_MODELS]
    ok = True
    for board in a.boards:
        for name, data in models:
            ok &= run(name, data, board)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""The compiler's own cost: compile time and peak host memory against model size.

    PYTHONPATH=. python benchmarks/compile_cost.py [--sizes 64x2 256x2 512x2 512x5] [--keep DIR]

Each model is a stack of float32 3x3 convolutions (C -> C channels on a 4x4 map, so almost
all of it is weights; 512x5 holds 11.8 M parameters, 47 MB, about a PyTorch ResNet-18),
written with microcompile's own TFLite writer. Each is compiled for the host board
(`mc.compile`: import, passes, lowering, scheduling, planning, C and weights) in a
fresh Python process, which reports its wall time and peak RSS (VmHWM; Linux). Printed per
model: file size, compile seconds, peak RSS, and RSS above the tiny model's, per byte of
model. Wall time depends on the machine and its load; run it on a quiet one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

# Peak RSS is VmHWM of /proc/self/status: per address space, so it starts afresh at exec
# (ru_maxrss would carry the parent's, which holds the models it just wrote).
_CHILD = r"""
import json, re, sys, time
from pathlib import Path
import microcompile as mc
mc.compile      # loads the API's modules before the clock starts
t0 = time.perf_counter()
cm = mc.compile(sys.argv[1], "host")
weights = cm.manifest["weights_bytes"]
del cm          # removes its artifact directory, as leaving the temporary directory did
elapsed = time.perf_counter() - t0
hwm = int(re.search(r"VmHWM:\s+(\d+) kB", Path("/proc/self/status").read_text()).group(1))
print(json.dumps({"seconds": elapsed, "rss_kib": hwm, "weights": weights}))
"""


def conv_stack(channels: int, layers: int, seed: int = 0) -> bytes:
    from microcompile.frontend.tflite.writer import write_tflite
    from microcompile.ir import Graph, Node, Tensor, ops, verify

    rng = np.random.default_rng(seed)
    tensors = {"x": Tensor("x", (1, 4, 4, channels), "float32")}
    nodes, prev = [], "x"
    for k in range(layers):
        w = Tensor(f"w{k}", (channels, 3, 3, channels), "float32",
                   data=rng.normal(0, 0.05, (channels, 3, 3, channels)).astype(np.float32))
        b = Tensor(f"b{k}", (channels,), "float32", data=rng.normal(0, 0.1, channels).astype(np.float32))
        tensors.update({w.name: w, b.name: b, f"y{k}": Tensor(f"y{k}", (1, 4, 4, channels), "float32")})
        nodes.append(Node("conv2d", f"conv{k}", (prev, w.name, b.name), (f"y{k}",),
                          dict(ops.get("conv2d").attrs, padding=(1, 1, 1, 1), activation="RELU")))
        prev = f"y{k}"
    return write_tflite(verify(Graph(f"convs_{channels}x{layers}", tensors, tuple(nodes), ("x",), (prev,))))


def measure(path: Path) -> dict:
    env = dict(os.environ)
    p = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, env=env)
    if p.returncode:
        raise SystemExit(f"compiling {path} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["64x2", "256x2", "512x2", "512x5"],
                    help="CHANNELSxLAYERS per model (the first is the baseline for RSS)")
    ap.add_argument("--keep", type=Path, help="write the models here instead of a temporary directory")
    args = ap.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="compile-cost-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"{'model':<14} {'file MB':>8} {'seconds':>8} {'s/MB':>6} {'peak RSS MB':>12} {'RSS - base MB':>14} "
          f"{'(RSS - base) / file':>20}")
    base = None
    for spec in args.sizes:
        c, n = (int(v) for v in spec.split("x"))
        path = work / f"convs_{c}x{n}.tflite"
        path.write_bytes(conv_stack(c, n))
        r = measure(path)
        mb = path.stat().st_size / 1e6
        rss = r["rss_kib"] / 1024
        base = rss if base is None else base
        print(f"{spec:<14} {mb:>8.2f} {r['seconds']:>8.2f} {r['seconds'] / mb:>6.2f} {rss:>12.1f} {rss - base:>14.1f} "
              f"{(rss - base) / mb:>20.2f}")
    if args.keep is None:
        for p in work.glob("*.tflite"):
            p.unlink()
        work.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The fused layer norms and attention heads (transform/fuse_rows.py) against their ops run
one by one, on the transformer fixtures, on a board's QEMU twin.

    PYTHONPATH=. python3 benchmarks/fused_rows.py [--board mps2-an386]

For the keyword transformer and the tiny ViT (tests/fixtures/pytorch), float and int8
(microcompile's PTQ, the layer norms' div and sqrt kept float, as benchmarks/pytorch_models.py
quantizes them), compiled twice: fused (the default) and with CompileOptions(fuse_rows=False).
Each row: instructions per inference (QEMU -icount, BENCHMARK.md), the instructions of the
layer-norm and attention kernels (profile: the fused kernels, or the sum of the ops they
stand for), the arena, and whether the device output equals the reference interpreter (the
unfused graph's). Instructions are exact and deterministic; the arena is the planned one.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import microcompile as mc  # noqa: E402
from microcompile.compiler.options import CompileOptions  # noqa: E402
from pytorch_models import FIXTURES, transformer_int8  # noqa: E402   (this folder's)


def measure(model, board: str, x: np.ndarray, fuse: bool, work: Path) -> dict:
    cm = mc.compile(model, board, name="m", options=CompileOptions(fuse_rows=fuse))
    # the fused nodes: this compilation's, or (ops kept apart) a fused one's, for their bodies
    fused = cm.graph if fuse else mc.compile(model, "host", name="m").graph
    groups = [n for n in fused.nodes if n.op in ("layer_norm", "attention")]
    # a kernel of a layer norm or attention head: the fused node, or one of its ops
    owner = {n.name: n.op for n in groups} if fuse else \
        {m.name: n.op for n in groups for m in n.attrs["body"].graph.nodes}
    r = cm.deploy(work / f"deploy_{fuse}", inputs=x, emulate=True)
    with cm.emulate(work / f"profile_{fuse}") as dev:
        rows = dev.profile(x).rows
    spent = {"layer_norm": 0, "attention": 0}
    for row in rows:
        if row.name in owner:
            spent[owner[row.name]] += row.count
    return {"instructions": r.report["instructions"], "arena": r.report["arena_bytes"], "verified": r.verified,
            **spent}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="mps2-an386")
    args = ap.parse_args()
    print(f"board {args.board}\n")
    print("| model | ops | instructions | layer norms | attention | arena B | equals reference |")
    print("|---|---|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in ("kws_transformer", "tiny_vit"):
            x, int8 = transformer_int8(name)
            for label, model in (("float", FIXTURES / f"{name}.pt2"), ("int8", int8)):
                for fuse in (False, True):
                    m = measure(model, args.board, x, fuse, work)
                    print(f"| {name} {label} | {'fused' if fuse else 'one by one'} | {m['instructions']:,} | "
                          f"{m['layer_norm']:,} | {m['attention']:,} | {m['arena']:,} | "
                          f"{'yes' if m['verified'] else 'NO'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

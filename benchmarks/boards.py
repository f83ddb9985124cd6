"""A model's flash and RAM use on every board (the fit report), and whether it fits.

    python benchmarks/boards.py [--model PATH] [--models DIR]

Default model: kws_ref_model from ../shared/models. For every board (the host excepted) the
model is compiled with the board's kernel set, linked with the board's banked linker script,
and measured from the ELF (`microcompile deploy` prints the same fit report). Nothing runs: the
real boards have never run anything here, so this is size, not speed. A board the model does
not fit shows what does not fit and the first hint. Exit status 0.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import microcompile as mc
from microcompile.project import FitError
from microcompile.project.fit import FLASH_KEYS, RAM_KEYS
from microcompile.schedule import kernel_set


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared" / "models")
    ap.add_argument("--model", type=Path, help="a .tflite/.onnx model (default: kws_ref_model)")
    args = ap.parse_args(argv)
    model = args.model or args.models / "kws_ref_model.tflite"
    print(f"{model.name}: flash and RAM use per board (bytes; stack = the static call-graph bound)")
    header = (f"{'board':<17} {'core':<13} {'kern':<4} {'code':>7} {'weights':>8} {'rodata':>7} {'flash':>8} "
              f"{'of':>9} {'arena':>7} {'data+bss':>8} {'stack':>6} {'RAM':>8} {'of':>9}  fits")
    print(header)
    print("-" * len(header))
    for board in mc.boards():
        name = board.name
        if board.is_host:
            continue
        head = f"{name:<17} {board.target.core:<13} {kernel_set(board.target):<4}"
        with tempfile.TemporaryDirectory() as tmp:
            try:
                fit = mc.compile(model, board).build(Path(tmp) / "p").fit
            except FitError as e:
                print(f"{head} does not fit: {e.report.problems[0]}; would help: {e.report.hints[0] if e.report.hints else '-'}")
                continue
        n = fit.needs
        flash = sum(n.get(k, 0) for k in FLASH_KEYS)
        ram = sum(n.get(k, 0) for k in RAM_KEYS)
        code_bank, ram_bank = board.mcu.bank(fit.where.code), board.mcu.bank(fit.where.ram)
        print(f"{head} {n['code']:>7,} {n['weights']:>8,} {n['rodata']:>7,} {flash:>8,} {code_bank.size:>9,} "
              f"{n['arena']:>7,} {n['data'] + n['bss']:>8,} {fit.stack.bytes:>6,} {ram:>8,} {ram_bank.size:>9,}  yes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

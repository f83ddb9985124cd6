"""Throughput of the host agent on QEMU: bytes/s each way, round-trip times, and the protocol's
cost per inference next to the inference itself.

    PYTHONPATH=. python3 benchmarks/agent_throughput.py [--model kws_ref_model] [--board mps2-an386] [-n 20]

Builds the agent firmware for the model (../shared/models/<model>.tflite), starts the board's QEMU
twin and measures over one session:
  - round trip of STATS (a 13-byte request, a 30-byte reply): median wall time;
  - host->device: SET_INPUT frames of a full chunk, device->host: GET_OUTPUT/GET_TENSOR frames of
    a full chunk; payload bytes per second (wall time, so it depends on the machine and its load);
  - one `Session.run` (inputs up, RUN, outputs down): median wall time, and the RUN alone;
  - the device's protocol work per inference (decoding, CRC, copying, replying: the agent's
    service ticks, which exclude the wait for bytes and the inference) in instructions, next to
    the inference's instructions (both exact under -icount);
  - the bytes on the wire per inference, and what they take on a real 115200-baud UART.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import microcompile as mc
from microcompile.deploy import model_inputs
from microcompile.device import protocol as P

MODELS = Path(__file__).resolve().parent.parent.parent / "shared" / "models"


def _median_ms(fn, n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="kws_ref_model")
    ap.add_argument("--board", default="mps2-an386")
    ap.add_argument("-n", type=int, default=20, help="repetitions per figure (medians)")
    args = ap.parse_args(argv)
    model = MODELS / f"{args.model}.tflite"
    if not model.is_file():
        print(f"{model} not found", file=sys.stderr)
        return 2
    board = mc.board(args.board)
    cm = mc.compile(model, board)
    with tempfile.TemporaryDirectory(prefix="mc-agent-bench-") as tmp:
        x = model_inputs(cm.graph)          # the deterministic input
        inputs = [x[n] for n in cm.graph.inputs]
        # the agent firmware built in tmp, on the board's QEMU twin
        with cm.emulate(Path(tmp), timeout=30) as dev:
            s = dev.session
            info = s.info()
            chunk = info.chunk_bytes
            rtt = _median_ms(lambda: s._request(P.CMD_STATS, b""), args.n)

            up_bytes = min(chunk, info.inputs[0].bytes)
            blob = bytes(up_bytes)
            up_ms = _median_ms(lambda: s._request(P.CMD_SET_INPUT, P.set_input_request(0, 0, blob)), args.n)
            s.run(inputs)
            # Down: the largest tensor right after its kernel (a full chunk per frame).
            entry = max(range(len(info.tensors)), key=lambda i: info.tensors[i].bytes)
            t = info.tensors[entry]
            s.tensor(t.name)
            down_bytes = min(chunk, t.bytes)
            down_ms = _median_ms(lambda: s._request(P.CMD_GET_TENSOR, P.get_tensor_request(entry, 0, down_bytes)),
                                 args.n)

            before = s.stats()
            run_ms = _median_ms(lambda: s.run(inputs), args.n)
            after = s.stats()
            infer = s.last_ticks * info.per_count
            bytes_before = s.link.bytes_out + s.link.bytes_in
            s.run(inputs)
            wire = s.link.bytes_out + s.link.bytes_in - bytes_before
            # RUN alone (inputs set first, outside the timing).
            def run_only():
                s._set_inputs([np.asarray(v).tobytes() for v in inputs])
                t0 = time.perf_counter()
                s._run()
                return time.perf_counter() - t0
            run_alone = 1000 * statistics.median(run_only() for _ in range(args.n))
    runs = after.runs - before.runs
    service = (after.service_ticks - before.service_ticks) // max(runs, 1) * info.per_count
    uart_ms = 1000 * wire * 10 / 115200
    print(f"agent throughput: {args.model} on {args.board} (QEMU {board.emulator.machine}), chunk {chunk} bytes, "
          f"medians of {args.n}")
    print(f"  round trip, STATS (no payload)            {rtt:8.2f} ms")
    print(f"  host -> device, SET_INPUT of {up_bytes:5d} bytes {up_ms:8.2f} ms   {up_bytes / up_ms:8.1f} kB/s")
    print(f"  device -> host, GET_TENSOR of {down_bytes:4d} bytes {down_ms:8.2f} ms   {down_bytes / down_ms:8.1f} kB/s")
    print(f"  Session.run (inputs up, RUN, outputs down) {run_ms:8.2f} ms   (RUN alone {run_alone:.2f} ms)")
    print(f"  inference                                 {infer:12,} {info.unit}")
    print(f"  protocol work on the device per inference {service:12,} {info.unit} "
          f"({100 * service / infer:.3f}% of the inference)")
    print(f"  bytes on the wire per inference           {wire:12,}  (at 115200 baud: {uart_ms:.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

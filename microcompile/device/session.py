"""A session with an agent firmware: info, run, profile, tensor, reset.

Every command is one request frame and one reply, within `timeout` seconds. A reply
that arrives corrupted, or an error saying the request arrived corrupted, makes the
session send the same request again (same sequence number: the agent answers a retry
from its stored reply, so nothing runs twice), at most `retries` times. Silence makes
it send again too, spread over the timeout; after that it raises DeviceTimeout.

A device that restarted (its BOOT frame, or a "no session" error) is opened again, its
build id checked, and the interrupted operation done once more from the start: `run`
sends its inputs again. A different build id is BuildIdMismatch, naming both.
"""

from __future__ import annotations

import array
import struct
import sys
import time
from dataclasses import dataclass, field

from microcompile.device import frame as fr
from microcompile.device import protocol as P
from microcompile.errors import DeviceError, UserError


class DeviceTimeout(DeviceError):
    """The device did not answer within the timeout."""


class LinkError(DeviceError):
    """Frames kept arriving corrupted, beyond the retries."""


class AgentError(DeviceError):
    """The agent refused a command (an error status in its reply)."""

    def __init__(self, message: str, code: int, detail: int, hint: str | None = None):
        super().__init__(message, hint)
        self.code, self.detail = code, detail


class BuildIdMismatch(DeviceError):
    """The device runs another build than the one expected (another model, or an old build)."""


class _Restarted(Exception):
    """The device restarted under us: open the session again and redo the operation."""


@dataclass(frozen=True)
class Output:
    spec: P.TensorSpec
    data: bytes

    def values(self) -> array.array:
        """The elements as a flat stdlib array (protocol.DTYPE_CODES: int8 'b', float32 'f', ...)."""
        a = array.array(P.DTYPE_CODES[self.spec.dtype])
        a.frombytes(self.data)
        if sys.byteorder != "little":
            a.byteswap()
        return a

    def numpy(self):
        """The tensor as a numpy array of its shape (needs numpy)."""
        import numpy as np

        dtype = {"int8": "i1", "float32": "<f4", "int32": "<i4", "int16": "<i2", "uint32": "<u4",
                 "uint64": "<u8"}[self.spec.dtype]
        return np.frombuffer(self.data, dtype=dtype).reshape(self.spec.shape).copy()


@dataclass(frozen=True)
class Profile:
    unit: str                           # "cycles", "instructions" or "ns"
    total: int                          # the profiled run, in `unit` (hooks included)
    kernels: tuple[P.KernelSpec, ...]
    counts: tuple[int, ...]             # per kernel, in `unit`


@dataclass
class Stats:
    good_frames: int
    bad_frames: int
    service_ticks: int
    runs: int


@dataclass
class _Link:
    """Counters of what the link did, for tests and the benchmark."""

    sent_frames: int = 0
    resent: int = 0
    bad_frames: int = 0
    restarts: int = 0
    bytes_out: int = 0
    bytes_in: int = 0
    events: list = field(default_factory=list)


class Session:
    """Talk to an agent firmware over `transport` (device.transport). Use as a context
    manager, or call close(); the transport is closed with the session."""

    def __init__(self, transport, *, timeout: float = 10.0, retries: int = 3,
                 expect_build_id: str | None = None):
        self.transport = transport
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.expect_build_id = expect_build_id
        self.link = _Link()
        self._decoder = fr.Decoder()
        self._seq = 0
        self._info: P.Info | None = None
        self._last_inputs: list[bytes] | None = None
        self._junk = bytearray()        # bytes that were not frames, for error messages
        self._queue: list = []          # frames read but not yet looked at
        self.last_ticks = 0             # counter ticks of the last RUN

    # ---- the public operations ----

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.transport.close()

    def info(self) -> P.Info:
        """The firmware's description (opens the session on first use)."""
        if self._info is None:
            self.open()
        return self._info

    def open(self) -> P.Info:
        """(Re)open the session: read INFO and check the build id."""
        data = self._read_info()
        try:
            info = P.parse_info(data)
        except ValueError as e:
            raise DeviceError(f"the device's info is garbled: {e}") from None
        self._info = info
        if self.expect_build_id is not None and info.build_id != self.expect_build_id:
            raise BuildIdMismatch(
                f"the device runs build {info.build_id} (model {info.model!r}), but this build is "
                f"{self.expect_build_id}: it was flashed with another model or an older build",
                hint="flash the firmware of this build (microcompile run/profile flash it when the ids "
                     "differ; or `make flash` in the project directory)")
        return info

    def run(self, inputs) -> list[Output]:
        """Send the inputs (a list in model order, or a dict by name; bytes or numpy arrays),
        run the model once and return its outputs. `last_ticks` holds the run's counter ticks."""
        data = self._input_bytes(inputs)

        def op():
            self._set_inputs(data)
            self.last_ticks, _ = self._run()
            return self._outputs()
        result = self._recovering(op)
        self._last_inputs = data
        return result

    def profile(self, inputs=None) -> Profile:
        """Run once with the per-kernel hook (inputs: as for run; default the last run's)
        and return every kernel's count and the run's total, in the counter's unit."""
        data = self._input_bytes(inputs) if inputs is not None else self._need_last_inputs()

        def op():
            self._set_inputs(data)
            ticks, _ = self._run(profile=True)
            return ticks, self._kernel_ticks()
        ticks, per_kernel = self._recovering(op)
        self._last_inputs = data
        info = self.info()
        return Profile(info.unit, info.to_units(ticks), info.kernels, tuple(info.to_units(t) for t in per_kernel))

    def tensor(self, name: str, inputs=None) -> Output:
        """A planned tensor (a kernel's output, by name) for the given inputs (default: the last
        run's), read right after its kernel ran: the run stops there, as later kernels may reuse
        its memory. A model input is returned as it was sent."""
        data = self._input_bytes(inputs) if inputs is not None else self._need_last_inputs()
        info = self.info()
        for k, spec in enumerate(info.inputs):
            if spec.name == name:
                return Output(spec, data[k])
        entry = next((i for i, t in enumerate(info.tensors) if t.name == name), None)
        if entry is None:
            raise UserError(f"the firmware has no tensor named {name!r}",
                            hint="tensors: " + ", ".join(t.name for t in info.tensors[:8])
                                 + (" ..." if len(info.tensors) > 8 else ""))
        spec = info.tensors[entry]

        def op():
            self._set_inputs(data)
            self._run(end=spec.kernel + 1)
            return self._read_chunks(lambda off, n: (P.CMD_GET_TENSOR, P.get_tensor_request(entry, off, n)),
                                     spec.bytes)
        out = Output(spec, self._recovering(op))
        self._last_inputs = data
        return out

    def reset(self) -> P.Info:
        """Restart the device (RESET), wait for its BOOT frame and open the session again."""
        self.info()
        self._request(P.CMD_RESET, b"")
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if any(isinstance(f, fr.Frame) and f.type == P.MSG_BOOT for f in self._frames(deadline - time.monotonic())):
                break
        self._last_inputs = None
        return self.open()

    def stats(self) -> Stats:
        self.info()
        return Stats(*struct.unpack("<IIII", self._recovering(lambda: self._request(P.CMD_STATS, b""))[:16]))

    # ---- operations made of requests ----

    def _recovering(self, op):
        """Run `op`; if the device restarted under it, open the session again and run it once more."""
        self.info()
        try:
            return op()
        except _Restarted:
            self.link.restarts += 1
            self.open()
        try:
            return op()
        except _Restarted:
            raise DeviceError("the device restarted again during the retried command",
                              hint="check its power supply and reset line; see the console for faults") from None

    def _need_last_inputs(self) -> list[bytes]:
        if self._last_inputs is None:
            raise UserError("no inputs: pass inputs, or call run(inputs) first")
        return self._last_inputs

    def _input_bytes(self, inputs) -> list[bytes]:
        specs = self.info().inputs
        if isinstance(inputs, dict):
            missing = [s.name for s in specs if s.name not in inputs]
            if missing:
                raise UserError(f"inputs lack {', '.join(map(repr, missing))}",
                                hint="pass one array per model input: " + ", ".join(s.name for s in specs))
            inputs = [inputs[s.name] for s in specs]
        elif not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        if len(inputs) != len(specs):
            raise UserError(f"the model has {len(specs)} inputs, got {len(inputs)}")
        out = []
        for spec, x in zip(specs, inputs):
            data = x.tobytes() if hasattr(x, "tobytes") else bytes(x)
            if len(data) != spec.bytes:
                raise UserError(f"input {spec.name!r} is {len(data)} bytes, the model takes {spec.bytes} "
                                f"({spec.dtype} {list(spec.shape)})")
            out.append(data)
        return out

    def _set_inputs(self, data: list[bytes]) -> None:
        chunk = self.info().chunk_bytes
        for index, blob in enumerate(data):
            for off in range(0, max(len(blob), 1), chunk):
                self._request(P.CMD_SET_INPUT, P.set_input_request(index, off, blob[off:off + chunk]))

    def _run(self, profile: bool = False, end: int = P.RUN_ALL) -> tuple[int, int]:
        ticks, ran = struct.unpack("<IH", self._request(P.CMD_RUN, P.run_request(profile, end))[:6])
        return ticks, ran

    def _outputs(self) -> list[Output]:
        outs = []
        for index, spec in enumerate(self.info().outputs):
            data = self._read_chunks(lambda off, n, i=index: (P.CMD_GET_OUTPUT, P.get_output_request(i, off, n)),
                                     spec.bytes)
            outs.append(Output(spec, data))
        return outs

    def _kernel_ticks(self) -> list[int]:
        n = len(self.info().kernels)
        ticks: list[int] = []
        while len(ticks) < n:
            reply = self._request(P.CMD_PROFILE, P.profile_request(len(ticks)))
            first, count = struct.unpack_from("<HH", reply)
            if first != len(ticks) or count == 0 or len(reply) < 4 + 4 * count:
                raise DeviceError(f"garbled profile page (first {first}, count {count})")
            ticks += struct.unpack_from(f"<{count}I", reply, 4)
        return ticks

    def _read_chunks(self, make, total: int) -> bytes:
        out = bytearray()
        chunk = self.info().chunk_bytes
        while len(out) < total:
            type_, payload = make(len(out), min(chunk, total - len(out)))
            data = self._request(type_, payload)
            if not data:
                raise DeviceError(f"the device sent no bytes at offset {len(out)} of {total}")
            out += data
        return bytes(out[:total])

    def _read_info(self) -> bytes:
        data = bytearray()
        total = None
        while total is None or len(data) < total:
            reply = self._request(P.CMD_INFO, P.info_request(len(data)))
            if len(reply) < 4:
                raise DeviceError("the device's INFO reply is too short")
            (total,) = struct.unpack_from("<I", reply)
            if len(reply) == 4 and len(data) < total:
                raise DeviceError("the device's INFO stopped short")
            data += reply[4:]
        return bytes(data[:total])

    # ---- one request, one reply ----

    def _next_seq(self) -> int:
        seq = self._seq
        self._seq = 0 if self._seq >= fr.SEQ_NONE - 1 else self._seq + 1
        return seq

    def _send(self, wire: bytes) -> None:
        self.transport.write(wire)
        self.link.bytes_out += len(wire)

    def _frames(self, wait: float) -> list:
        """Frames (and FrameErrors) that arrived: those left over from the last read first."""
        if self._queue:
            items, self._queue = self._queue, []
            return items
        data = self.transport.read(max(wait, 0.0))
        if not data:
            return []
        self.link.bytes_in += len(data)
        items = self._decoder.feed(data)
        if self._decoder.busy and not items and len(self._junk) < 256:
            self._junk += data[:256 - len(self._junk)]
        return items

    def _request(self, type_: int, payload: bytes) -> bytes:
        """Send one request and return its reply's payload after an OK status."""
        seq = self._next_seq()
        wire = b"\0" + fr.encode(type_, seq, payload)
        start = time.monotonic()
        deadline = start + self.timeout
        interval = self.timeout / (self.retries + 1)
        attempts = 1
        self._send(wire)
        self.link.sent_frames += 1
        next_send = start + interval
        while True:
            now = time.monotonic()
            if now >= deadline:
                raise self._timeout(type_, attempts)
            resend = False
            items = self._frames(min(deadline, next_send) - now)
            for k, item in enumerate(items):
                if isinstance(item, fr.FrameError):
                    self.link.bad_frames += 1
                    resend = True
                    continue
                self._junk.clear()
                if item.type == P.MSG_BOOT:
                    if type_ != P.CMD_INFO:
                        raise _Restarted()
                    resend = True          # INFO sent before the device was up: ask again
                    continue
                if item.type == P.MSG_ERROR and len(item.payload) >= 5:
                    code, detail = struct.unpack_from("<BI", item.payload)
                    if code in P.RESEND:
                        self.link.bad_frames += 1
                        resend = True
                    elif code == P.ERR_OVERSIZE:
                        raise DeviceError(f"the device takes frames of at most {detail} bytes; this request "
                                          f"was larger", hint="a bug: the host must respect the chunk size")
                    continue
                if item.seq != seq or item.type != (type_ | P.REPLY) or not item.payload:
                    continue               # a late reply to an earlier request or retry
                self._queue = items[k + 1:] + self._queue    # e.g. a BOOT right after a RESET reply
                return self._status(type_, item)
            if resend or time.monotonic() >= next_send:
                if attempts > self.retries:
                    if resend:
                        raise LinkError(f"the link corrupted every one of {attempts} tries of a "
                                        f"{_command_name(type_)} request",
                                        hint="check the cable, the baud rate and that nothing else uses the port")
                    next_send = deadline   # no retries left: wait out the deadline
                    continue
                attempts += 1
                self.link.resent += 1
                self._send(wire)
                next_send = time.monotonic() + interval

    def _status(self, type_: int, reply: fr.Frame) -> bytes:
        status = reply.payload[0]
        if status == P.OK:
            return reply.payload[1:]
        detail = struct.unpack_from("<I", reply.payload, 1)[0] if len(reply.payload) >= 5 else 0
        if status in (P.ERR_NO_SESSION, P.ERR_SEQUENCE):
            raise _Restarted()
        if status == P.ERR_VERSION:
            raise DeviceError(f"the firmware speaks protocol version {detail}, this microcompile "
                              f"{fr.VERSION}", hint="flash a firmware built by this microcompile")
        what = P.ERROR_NAMES.get(status, f"error {status}")
        raise AgentError(f"the device refused {_command_name(type_)}: {what} (detail {detail})", status, detail)

    def _timeout(self, type_: int, attempts: int) -> DeviceTimeout:
        name = getattr(self.transport, "name", "the device")
        if self._junk:
            sample = bytes(self._junk[:60]).decode("ascii", errors="replace").replace("\n", "\\n")
            return DeviceTimeout(
                f"{name} sends bytes that are not agent frames (starting {sample!r}) and did not answer "
                f"{_command_name(type_)} within {self.timeout:g} s",
                hint="the board runs other firmware (a self-test?): flash the agent build "
                     "(microcompile run/profile do), or check the baud rate")
        return DeviceTimeout(f"{name} did not answer {_command_name(type_)} within {self.timeout:g} s "
                             f"({attempts} tries)",
                             hint="check that the board is powered, connected and runs the agent firmware "
                                  "(microcompile run flashes it); a long inference needs a larger --timeout")


def _command_name(type_: int) -> str:
    names = {P.CMD_INFO: "INFO", P.CMD_SET_INPUT: "SET_INPUT", P.CMD_RUN: "RUN", P.CMD_GET_OUTPUT: "GET_OUTPUT",
             P.CMD_GET_TENSOR: "GET_TENSOR", P.CMD_PROFILE: "PROFILE", P.CMD_RESET: "RESET", P.CMD_STATS: "STATS"}
    return names.get(type_, f"command 0x{type_:02x}")

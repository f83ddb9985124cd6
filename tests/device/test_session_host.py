"""The Session against the real agent firmware built for the host board (a process on pipes),
through a transport that corrupts, truncates or swallows bytes: every fault the link can have
ends in the right answer or in a clear error, and the agent keeps serving.

The model is multi_op_models' residual_int8 (conv, add, depthwise, pool, fc, softmax)."""

import struct
import time
from contextlib import contextmanager

import pytest

from microcompile import project
from microcompile.device import (AgentError, BuildIdMismatch, DeviceTimeout, LinkError, PipeTransport, Session,
                                 frame as fr, protocol as P)
from microcompile.reference import interp
from support.host_agent_build import built  # noqa: F401  (fixture)


class Faulty:
    """A transport wrapper: `out_faults` / `in_faults` map the index of a write / a non-empty
    read to a function that changes its bytes (None: drop them)."""

    def __init__(self, inner, out_faults=None, in_faults=None, silent=False):
        self.inner, self.name = inner, "faulty link"
        self.out_faults, self.in_faults = dict(out_faults or {}), dict(in_faults or {})
        self.silent = silent
        self.writes = self.reads = 0

    def write(self, data):
        fault = self.out_faults.pop(self.writes, "keep")
        self.writes += 1
        if self.silent:
            return
        if fault != "keep":
            data = fault(data) if fault else b""
        self.inner.write(data)

    def read(self, timeout):
        if self.silent:
            time.sleep(min(timeout, 0.05))
            return b""
        data = self.inner.read(timeout)
        if data:
            fault = self.in_faults.pop(self.reads, "keep")
            self.reads += 1
            if fault != "keep":
                data = fault(data) if fault else b""
        return data

    def close(self):
        self.inner.close()


def flip(data: bytes) -> bytes:
    """Change one byte inside the first frame (never into a delimiter)."""
    b = bytearray(data)
    k = next(i for i in range(len(b) // 2, len(b)) if b[i] not in (0, 1))
    b[k] ^= 0x01
    return bytes(b)


def cut(data: bytes) -> bytes:
    """Keep the first half: the frame's end (and its delimiter) never comes."""
    return data[:len(data) // 2]


@contextmanager
def session(built, wrap=None, **kw):
    with project.host_agent(built["project"]) as proc:
        t = PipeTransport(proc.stdin, proc.stdout)
        if wrap is not None:
            t = wrap(t)
        kw.setdefault("timeout", 5.0)
        kw.setdefault("expect_build_id", built["build_id"])
        with Session(t, **kw) as s:
            yield s


def _reference(built):
    g = built["graph"]
    return interp.run(g, {g.inputs[0]: built["x"]}, keep_all=True)


def test_run_profile_and_tensors_match_the_reference(built):
    ref = _reference(built)
    g = built["graph"]
    with session(built) as s:
        info = s.info()
        assert info.build_id == built["build_id"] and info.unit == "ns"
        out = s.run([built["x"]])
        assert out[0].numpy().tobytes() == ref[g.outputs[0]].tobytes()
        assert list(out[0].values()) == ref[g.outputs[0]].ravel().tolist()
        prof = s.profile()
        assert len(prof.counts) == len(built["kernels"]) == len(info.kernels)
        assert all(c >= 0 for c in prof.counts) and sum(prof.counts) <= prof.total
        # Every planned tensor, read right after its kernel, equals the interpreter's.
        names = [t.name for t in info.tensors]
        assert names == [o for n, _, _ in built["kernels"] for o in n.outputs]
        for name in names:
            assert s.tensor(name).numpy().tobytes() == ref[name].tobytes(), name
        assert s.tensor(g.inputs[0]).numpy().tobytes() == built["x"].tobytes()
        assert s.stats().runs == 2 + len(names)


def test_a_garbled_request_is_sent_again(built):
    with session(built, lambda t: Faulty(t, out_faults={3: flip})) as s:   # the first SET_INPUT
        s.info()
        out = s.run([built["x"]])
        assert s.link.resent >= 1
        assert s.stats().bad_frames >= 1
    assert out[0].data == _reference(built)[built["graph"].outputs[0]].tobytes()


def test_a_garbled_reply_is_replayed_not_run_twice(built):
    with session(built) as s:
        s.info()
        s.transport = Faulty(s.transport)
        # The reads so far are 0; the replies to SET_INPUT and RUN are reads 0 and 1.
        s.transport.in_faults = {1: flip}
        out = s.run([built["x"]])
        assert s.link.bad_frames == 1 and s.link.resent >= 1
        assert s.stats().runs == 1          # the retried RUN was answered from the stored reply
    assert out[0].data == _reference(built)[built["graph"].outputs[0]].tobytes()


def test_truncated_frames_both_ways(built):
    with session(built, lambda t: Faulty(t, out_faults={4: cut}, in_faults={3: cut}), timeout=4.0) as s:
        s.info()
        out = s.run([built["x"]])
        assert s.link.resent >= 2
        assert s.stats().runs == 1
    assert out[0].data == _reference(built)[built["graph"].outputs[0]].tobytes()


def test_a_device_that_never_answers_is_a_clear_error_within_the_timeout(built):
    with session(built, lambda t: Faulty(t, silent=True), timeout=0.6, retries=2) as s:
        start = time.monotonic()
        with pytest.raises(DeviceTimeout, match=r"did not answer INFO within 0\.6 s \(3 tries\)") as e:
            s.info()
        assert time.monotonic() - start < 10, "far past the timeout"
        assert "agent firmware" in e.value.hint


def test_a_link_that_corrupts_everything_gives_up_after_the_retries(built):
    with session(built, lambda t: Faulty(t, out_faults={k: flip for k in range(10)}), retries=3) as s:
        with pytest.raises(LinkError, match="corrupted every one of 4 tries of a INFO request"):
            s.info()


def test_bytes_that_are_not_frames_name_the_problem(built):
    class Text:
        name = "a terminal"

        def __init__(self):
            self.sent = False

        def write(self, data):
            pass

        def read(self, timeout):
            if self.sent:
                time.sleep(min(timeout, 0.05))
                return b""
            self.sent = True
            return b"MC-BEGIN\nMC-OUTPUT 0 8081\n"

        def close(self):
            pass
    with Session(Text(), timeout=0.5) as s:
        with pytest.raises(DeviceTimeout, match="not agent frames.*MC-BEGIN") as e:
            s.info()
        assert "self-test" in e.value.hint


def test_a_reset_mid_session_is_recovered(built):
    with session(built) as s:
        s.run([built["x"]])
        # Behind the session's back: the device restarts (as a watchdog or a reset button would).
        s.transport.write(b"\0" + fr.encode(P.CMD_RESET, s._seq, b""))
        time.sleep(0.3)
        out = s.profile()            # with the last inputs, sent again after the restart
        assert s.link.restarts == 1
        assert len(out.counts) == len(built["kernels"])
        again = s.run([built["x"]])
    assert again[0].data == _reference(built)[built["graph"].outputs[0]].tobytes()


def test_the_reset_command_restarts_the_device(built):
    with session(built) as s:
        s.run([built["x"]])
        assert s.stats().runs == 1
        s.reset()
        assert s.stats().runs == 0                       # a fresh start
        with pytest.raises(Exception, match="no inputs"):
            s.profile()


def test_another_build_on_the_device_is_named_with_both_ids(built):
    with session(built, expect_build_id="0123456789abcdef") as s:
        with pytest.raises(BuildIdMismatch) as e:
            s.info()
    assert built["build_id"] in e.value.message and "0123456789abcdef" in e.value.message
    assert "flash" in e.value.hint


def _raw(s, type_, payload=b"", seq=None, version=fr.VERSION):
    if type_ is not None:                                          # None: only read the next reply
        seq = s._next_seq() if seq is None else seq
        s.transport.write(b"\0" + fr.encode(type_, seq, payload, version))
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        items = s._frames(0.2)
        for k, item in enumerate(items):
            if isinstance(item, fr.Frame) and item.type != P.MSG_BOOT:
                s._queue = items[k + 1:] + s._queue
                return item
    raise AssertionError("no reply")


def _status(reply):
    return reply.payload[0], struct.unpack_from("<I", reply.payload, 1)[0] if len(reply.payload) >= 5 else None


def test_the_agent_answers_bad_frames_with_errors_and_keeps_serving(built):
    with session(built) as s:
        r = _raw(s, P.CMD_GET_OUTPUT, P.get_output_request(0, 0, 4))
        assert _status(r) == (P.ERR_NO_SESSION, 0)
        s.info()
        nxt = s._seq
        r = _raw(s, P.CMD_STATS, seq=(nxt + 5) % 0xFFFF)
        assert r.type == P.CMD_STATS | P.REPLY and _status(r) == (P.ERR_SEQUENCE, nxt)
        r = _raw(s, P.CMD_STATS, seq=nxt, version=2)
        assert _status(r) == (P.ERR_VERSION, fr.VERSION)
        capacity = s.info().chunk_bytes + 16
        r = _raw(s, P.CMD_SET_INPUT, P.set_input_request(0, 0, bytes(capacity)), seq=nxt)
        assert r.type == P.MSG_ERROR and r.seq == fr.SEQ_NONE and _status(r) == (P.ERR_OVERSIZE, capacity)
        s.transport.write(b"\0\x05\x01\x02\x03\x04\x00")            # a short frame
        r = _raw(s, P.CMD_RUN, P.run_request(), seq=nxt)           # (its error reply comes first)
        assert r.type == P.MSG_ERROR and _status(r) == (P.ERR_MALFORMED, 0)
        r = _raw(s, None)                                          # then the RUN's
        assert _status(r) == (P.ERR_NO_INPUT, 0)                    # inputs are set before every run
        r = _raw(s, 0x42, seq=nxt + 1)
        assert _status(r) == (P.ERR_COMMAND, 0x42)
        r = _raw(s, P.CMD_SET_INPUT, P.set_input_request(3, 0, b"x"), seq=nxt + 2)
        assert _status(r) == (P.ERR_ARGUMENT, 1)                    # the model has one input
        s._seq = nxt + 3
        out = s.run([built["x"]])                                   # and it still serves
        assert out[0].data == _reference(built)[built["graph"].outputs[0]].tobytes()
        stats = s.stats()
        assert stats.bad_frames == 2 and stats.runs == 1


def test_a_tensor_is_readable_only_right_after_its_kernel(built):
    with session(built) as s:
        s.run([built["x"]])                                         # a whole run: kernel 0's output is stale
        entry = next(i for i, t in enumerate(s.info().tensors) if t.kernel == 0)
        r = _raw(s, P.CMD_GET_TENSOR, P.get_tensor_request(entry, 0, 8))
        assert _status(r) == (P.ERR_NOT_READY, 1)                   # detail: run the first kernel only
        with pytest.raises(AgentError, match="not ready"):
            s._seq = (r.seq + 1) % 0xFFFF
            s._request(P.CMD_PROFILE, P.profile_request(0))         # no profiled run yet

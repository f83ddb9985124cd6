"""The agent's framing, host side and C side, against the one shared vector file; and the C
decoder and command handler fuzzed under AddressSanitizer/UBSan (runtime_c/tests/fuzz_agent.c)."""

import random
import shutil
import subprocess

import pytest

from microcompile.device import frame as fr
from microcompile.resources import resource_dir

RUNTIME = resource_dir("runtime_c")
VECTORS = RUNTIME / "tests" / "frame_vectors.txt"
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]


def _vectors():
    capacity, rows = None, []
    for line in VECTORS.read_text().splitlines():
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if parts[0] == "capacity":
            capacity = int(parts[1])
        else:
            rows.append(parts)
    return capacity, rows


def _hex(s):
    return b"" if s == "-" else bytes.fromhex(s)


def test_vectors_cover_every_kind():
    _, rows = _vectors()
    kinds = {r[0] for r in rows} | {r[1] for r in rows if r[0] == "bad"}
    assert {"cobs", "ok", "bad", "crc", "short", "malformed", "oversize"} <= kinds


def test_python_encodes_and_decodes_the_vectors():
    capacity, rows = _vectors()
    for row in rows:
        if row[0] == "cobs":
            raw, enc = _hex(row[1]), _hex(row[2])
            assert fr.cobs_encode(raw) == enc, row
            assert fr.cobs_decode(enc) == (raw, True), row
        elif row[0] == "ok":
            type_, seq, payload, wire = int(row[1], 16), int(row[2]), _hex(row[3]), _hex(row[4])
            assert fr.encode(type_, seq, payload) == wire, row
            assert fr.parse(wire[:-1], capacity) == fr.Frame(type_, seq, payload), row
            # A stream split anywhere decodes to the same frame.
            d = fr.Decoder(capacity)
            got = [x for k in range(0, len(wire), 3) for x in d.feed(b"\0" + wire[k:k + 3] if k == 0 else wire[k:k + 3])]
            assert got == [fr.Frame(type_, seq, payload)], row
        elif row[0] == "bad":
            with pytest.raises(fr.FrameError) as e:
                fr.parse(_hex(row[2])[:-1], capacity)
            assert e.value.kind == row[1], row


def test_the_crc_is_zlibs():
    import zlib

    assert fr.crc32(b"123456789") == 0xCBF43926 == zlib.crc32(b"123456789")


def test_python_decoder_survives_random_streams():
    """Random and mutated byte streams give Frames and FrameErrors, never another exception."""
    rng = random.Random(5)
    good = [fr.encode(rng.randrange(256), rng.randrange(0xFFFF), rng.randbytes(rng.randrange(40)))
            for _ in range(50)]
    d = fr.Decoder(capacity=64)
    seen = {"frame": 0, "error": 0}
    for _ in range(5000):
        data = bytearray(rng.choice(good))
        for _ in range(rng.randrange(4)):
            at = rng.randrange(len(data))
            data[at] ^= 1 << rng.randrange(8)
        if rng.random() < 0.2:
            data = bytearray(rng.randbytes(rng.randrange(1, 100)))
        for item in d.feed(bytes(data)):
            assert isinstance(item, (fr.Frame, fr.FrameError))
            seen["frame" if isinstance(item, fr.Frame) else "error"] += 1
    assert seen["frame"] > 300 and seen["error"] > 1000, seen


def _cc(tmp_path, name, sources, extra=()):
    if shutil.which("gcc") is None:
        pytest.skip("gcc not found")
    exe = tmp_path / name
    cmd = ["gcc", "-std=c99", "-g", "-O1", "-Wall", "-Wextra", "-Werror", *extra,
           "-I", str(RUNTIME / "include"), "-I", str(RUNTIME / "agent"), *map(str, sources), "-o", str(exe)]
    subprocess.run(cmd, check=True, capture_output=True)
    return exe


def test_c_encodes_and_decodes_the_vectors(tmp_path):
    exe = _cc(tmp_path, "vectors", [RUNTIME / "tests" / "test_frame_vectors.c", RUNTIME / "agent" / "mc_frame.c"],
              SANITIZE)
    r = subprocess.run([str(exe), str(VECTORS)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    n = len(_vectors()[1])
    assert f"frame vectors: {n} checked, 0 failed" in r.stdout


def _fuzz(tmp_path, frames: int, seed: int) -> str:
    exe = tmp_path / "fuzz"
    if not exe.exists():
        _cc(tmp_path, "fuzz", [RUNTIME / "tests" / "fuzz_agent.c", RUNTIME / "agent" / "mc_agent.c",
                               RUNTIME / "agent" / "mc_frame.c", RUNTIME / "src" / "mc_runtime.c"], SANITIZE)
    r = subprocess.run([str(exe), str(frames), str(seed)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "ERROR: AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-3000:]
    return r.stdout


def test_fuzz_the_agent_with_100000_frames(tmp_path):
    out = _fuzz(tmp_path, 100_000, 1)
    assert "fuzz: 100000 frames fed" in out and "0 crashes" in out
    # The fuzzer reached the handler (good CRC) as well as the decoder's rejections.
    good, bad = (int(x) for x in __import__("re").search(r"(\d+) good and (\d+) bad", out).groups())
    assert good > 10_000 and bad > 10_000, out


@pytest.mark.slow
def test_fuzz_the_agent_with_a_million_frames_more(tmp_path):
    for seed in (2, 3, 4, 5, 6, 7, 8, 9, 10, 11):
        assert "0 crashes" in _fuzz(tmp_path, 100_000, seed)


def test_the_fuzzer_would_notice_a_buffer_overrun(tmp_path):
    """The same harness with the agent's length check removed must fail under ASan."""
    src = (RUNTIME / "agent" / "mc_agent.c").read_text()
    guard = "    len = min_u32(min_u32(max, bytes - offset), a->cfg.chunk_bytes);"
    assert guard in src
    broken = tmp_path / "mc_agent.c"
    broken.write_text(src.replace(guard, "    len = max;"))
    exe = _cc(tmp_path, "fuzz_broken", [RUNTIME / "tests" / "fuzz_agent.c", broken, RUNTIME / "agent" / "mc_frame.c",
                                        RUNTIME / "src" / "mc_runtime.c"], SANITIZE)
    r = subprocess.run([str(exe), "100000", "1"], capture_output=True, text=True, timeout=600)
    assert r.returncode != 0 and "AddressSanitizer" in r.stderr

"""The RP2040's second-stage boot loader: the bytes in boards/src/rp2040/boot2_03h.c are its
assembly source, assembled again here, followed by the CRC32 the boot ROM checks."""

import re
import shutil
import subprocess

import pytest

from microcompile.resources import resource_dir

SRC = resource_dir("boards") / "src" / "rp2040"


def crc32_mpeg2(data: bytes) -> int:
    """CRC-32/MPEG-2: polynomial 0x04C11DB7, initial 0xFFFFFFFF, not reflected, no final XOR."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7) if crc & 0x80000000 else crc << 1
            crc &= 0xFFFFFFFF
    return crc


def test_crc32_mpeg2_check_value():
    assert crc32_mpeg2(b"123456789") == 0x0376E6E7   # the standard check value of CRC-32/MPEG-2


def _c_bytes() -> bytes:
    text = (SRC / "boot2_03h.c").read_text()
    body = text[text.index("mc_boot2[256] = {"):]
    return bytes(int(v, 16) for v in re.findall(r"0x([0-9a-f]{2})\b", body))


def test_boot2_checksum():
    data = _c_bytes()
    assert len(data) == 256
    assert int.from_bytes(data[252:], "little") == crc32_mpeg2(data[:252])
    assert f"0x{crc32_mpeg2(data[:252]):08X}" in (SRC / "boot2_03h.c").read_text()


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="arm-none-eabi-gcc not installed")
def test_boot2_bytes_are_the_assembled_source(tmp_path):
    obj, raw = tmp_path / "boot2.o", tmp_path / "boot2.bin"
    subprocess.run(["arm-none-eabi-gcc", "-c", "-mcpu=cortex-m0plus", "-mthumb", str(SRC / "boot2_03h.S"),
                    "-o", str(obj)], check=True)
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", "-j", ".text", str(obj), str(raw)], check=True)
    code = raw.read_bytes()
    assert 0 < len(code) <= 252
    assert _c_bytes()[:252] == code.ljust(252, b"\0")

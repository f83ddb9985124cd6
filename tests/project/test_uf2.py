from microcompile.project.uf2 import FLAG_FAMILY_ID, MAGIC_END, MAGIC_START0, MAGIC_START1, from_uf2, to_uf2


def test_uf2_blocks():
    image = bytes(range(256)) * 2 + b"tail"
    data = to_uf2(image, 0x10000000, 0xE48BFF56)
    assert len(data) == 3 * 512
    blocks = from_uf2(data)
    assert sorted(blocks) == [0x10000000, 0x10000100, 0x10000200]
    assert b"".join(blocks[a] for a in sorted(blocks))[:len(image)] == image
    first = data[:512]
    words = [int.from_bytes(first[i:i + 4], "little") for i in range(0, 32, 4)]
    # magic, magic, flags (family id present), address, payload size, block number, block count, family
    assert words == [MAGIC_START0, MAGIC_START1, FLAG_FAMILY_ID, 0x10000000, 256, 0, 3, 0xE48BFF56]
    assert int.from_bytes(first[508:], "little") == MAGIC_END

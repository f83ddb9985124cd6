/* COBS framing with a CRC-32: see mc_frame.h for the layout. */
#include "mc_frame.h"

/* CRC-32 (reflected polynomial 0xEDB88320) four bits at a time: a 64-byte table instead
 * of 1 KiB, two lookups per byte. Entry i is the CRC register after shifting nibble i. */
static const uint32_t crc_nibble[16] = {
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u, 0x4DB26158u, 0x5005713Cu,
    0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu, 0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
};

uint32_t mc_crc32(uint32_t crc, const uint8_t *p, size_t n)
{
    size_t i;

    crc = ~crc;
    for (i = 0; i < n; i++) {
        crc = crc_nibble[(crc ^ p[i]) & 0xFu] ^ (crc >> 4);
        crc = crc_nibble[(crc ^ (p[i] >> 4)) & 0xFu] ^ (crc >> 4);
    }
    return ~crc;
}

void mc_frame_rx_init(mc_frame_rx_t *rx, uint8_t *buf, size_t cap)
{
    rx->buf = buf;
    rx->cap = cap;
    mc_frame_rx_reset(rx);
}

void mc_frame_rx_reset(mc_frame_rx_t *rx)
{
    rx->len = 0;
    rx->left = 0;
    rx->code = 0;
    rx->overflow = 0;
}

int mc_frame_rx_busy(const mc_frame_rx_t *rx)
{
    return rx->code != 0;
}

static void push(mc_frame_rx_t *rx, uint8_t byte)
{
    if (rx->len < rx->cap)
        rx->buf[rx->len++] = byte;
    else
        rx->overflow = 1;
}

static mc_frame_status_t finish(mc_frame_rx_t *rx)
{
    mc_frame_status_t status;
    size_t n = rx->len;

    if (rx->code == 0)
        status = MC_FRAME_PENDING; /* empty frame: a leading delimiter */
    else if (rx->overflow)
        status = MC_FRAME_OVERSIZE;
    else if (rx->left != 0)
        status = MC_FRAME_MALFORMED;
    else if (n < MC_FRAME_MIN_BYTES)
        status = MC_FRAME_SHORT;
    else if (mc_crc32(0, rx->buf, n - MC_FRAME_CRC_BYTES) != mc_get_u32(rx->buf + n - MC_FRAME_CRC_BYTES))
        status = MC_FRAME_BAD_CRC;
    else
        status = MC_FRAME_OK;
    rx->left = 0;
    rx->code = 0;
    rx->overflow = 0;
    if (status != MC_FRAME_OK)
        rx->len = 0;
    return status;
}

mc_frame_status_t mc_frame_rx_byte(mc_frame_rx_t *rx, uint8_t byte)
{
    if (byte == 0)
        return finish(rx);
    if (rx->code == 0) {
        rx->len = 0; /* the first byte of a new frame */
    } else if (rx->left != 0) {
        push(rx, byte);
        rx->left--;
        return MC_FRAME_PENDING;
    } else if (rx->code != 0xFFu) {
        push(rx, 0); /* a block shorter than 254 bytes stood for a zero */
    }
    rx->code = byte;
    rx->left = (uint8_t)(byte - 1u);
    return MC_FRAME_PENDING;
}

size_t mc_frame_seal(uint8_t *frame, uint8_t type, uint16_t seq, size_t payload_len)
{
    size_t n = MC_FRAME_HEADER_BYTES + payload_len;

    frame[0] = MC_FRAME_VERSION;
    frame[1] = type;
    mc_put_u16(frame + 2, seq);
    mc_put_u32(frame + n, mc_crc32(0, frame, n));
    return n + MC_FRAME_CRC_BYTES;
}

void mc_frame_send(const uint8_t *frame, size_t len, mc_frame_write_fn write, void *user)
{
    static const uint8_t delimiter = 0;
    size_t start = 0;

    write(user, &delimiter, 1);
    /* Each block: a code byte (1 + the count of non-zero bytes that follow, at most 254),
     * the bytes, and an implied zero unless the block is full (code 0xFF) or last. */
    for (;;) {
        size_t end = start;
        uint8_t code;

        while (end < len && frame[end] != 0 && end - start < 254u)
            end++;
        code = (uint8_t)(end - start + 1u);
        write(user, &code, 1);
        if (end > start)
            write(user, frame + start, end - start);
        if (end == len)
            break;
        start = code == 0xFFu ? end : end + 1u; /* a full block consumed no zero */
    }
    write(user, &delimiter, 1);
}

/* mc_frame.h: the framing of the host agent's serial protocol.
 *
 * A frame is, before encoding:
 *
 *   [0]      protocol version (MC_FRAME_VERSION)
 *   [1]      message type (a command; its reply has bit 7 set)
 *   [2..3]   sequence number, little-endian
 *   [4..n-5] payload
 *   [n-4..]  CRC-32 (IEEE 802.3, as zlib.crc32) of bytes [0, n-4), little-endian
 *
 * On the wire it is COBS-encoded (no 0x00 inside) and ends with one 0x00 delimiter;
 * senders also put a 0x00 before it, so garbage left on the line by a reset or a
 * truncated frame ends there instead of spoiling the next frame. Empty frames are
 * ignored. The decoder is incremental (one byte at a time) and writes only into the
 * caller's buffer, never past `cap`: a longer frame is dropped up to its delimiter
 * and reported as MC_FRAME_OVERSIZE.
 *
 * runtime_c/tests/frame_vectors.txt holds frames that this file and
 * microcompile/device/frame.py must both encode and decode identically. */
#ifndef MC_FRAME_H
#define MC_FRAME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MC_FRAME_VERSION 1u
#define MC_FRAME_HEADER_BYTES 4u
#define MC_FRAME_CRC_BYTES 4u
#define MC_FRAME_MIN_BYTES (MC_FRAME_HEADER_BYTES + MC_FRAME_CRC_BYTES)
/* The sequence number of frames that answer no request (errors about unreadable
 * frames, the boot announcement); hosts number their requests 0..0xFFFE. */
#define MC_FRAME_SEQ_NONE 0xFFFFu

/* What the decoder made of the bytes up to a delimiter. */
typedef enum {
    MC_FRAME_PENDING = 0,   /* no delimiter yet (or an empty frame): keep feeding */
    MC_FRAME_OK = 1,        /* buf[0, len) holds a frame with a good CRC */
    MC_FRAME_OVERSIZE = 2,  /* longer than the buffer; dropped */
    MC_FRAME_MALFORMED = 3, /* the COBS code bytes promise more bytes than came */
    MC_FRAME_SHORT = 4,     /* fewer than MC_FRAME_MIN_BYTES */
    MC_FRAME_BAD_CRC = 5
} mc_frame_status_t;

typedef struct {
    uint8_t *buf;       /* decoded bytes of the current frame */
    size_t cap;
    size_t len;
    uint8_t left;       /* data bytes left in the current COBS block */
    uint8_t code;       /* the current block's code byte (0: none yet) */
    uint8_t overflow;
} mc_frame_rx_t;

uint32_t mc_crc32(uint32_t crc, const uint8_t *p, size_t n);

void mc_frame_rx_init(mc_frame_rx_t *rx, uint8_t *buf, size_t cap);
/* Forget a partly received frame. */
void mc_frame_rx_reset(mc_frame_rx_t *rx);
/* True while a frame has started but its delimiter has not come. */
int mc_frame_rx_busy(const mc_frame_rx_t *rx);
/* Feed one byte; at a delimiter, returns what the frame was (and resets for the next). */
mc_frame_status_t mc_frame_rx_byte(mc_frame_rx_t *rx, uint8_t byte);

/* Fill the header of `frame` and append the CRC after `payload_len` payload bytes
 * (which the caller has put at frame + MC_FRAME_HEADER_BYTES). Returns the frame length. */
size_t mc_frame_seal(uint8_t *frame, uint8_t type, uint16_t seq, size_t payload_len);

/* COBS-encode frame[0, len) with its delimiters and pass it to `write` piece by piece. */
typedef void (*mc_frame_write_fn)(void *user, const uint8_t *p, size_t n);
void mc_frame_send(const uint8_t *frame, size_t len, mc_frame_write_fn write, void *user);

static inline uint16_t mc_get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t mc_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline void mc_put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void mc_put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

#ifdef __cplusplus
}
#endif

#endif /* MC_FRAME_H */

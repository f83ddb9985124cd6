/* mc_agent.h: the host agent, firmware that serves a model over the console UART.
 *
 * The host (microcompile/device/) sends one request frame (mc_frame.h) and waits for its
 * reply before sending the next. Every reply's payload starts with a status byte
 * (MC_AGENT_OK or an MC_AGENT_ERR_*); an error carries a u32 detail after it.
 *
 *   type  command     request payload                       reply payload after the status
 *   0x01  INFO        u32 offset                            u32 total, info bytes [offset, ...)
 *   0x02  SET_INPUT   u8 input, u32 offset, bytes           -
 *   0x03  RUN         u8 flags (bit 0: profile), u16 end    u32 counter ticks, u16 kernels run
 *   0x04  GET_OUTPUT  u8 output, u32 offset, u16 max        bytes
 *   0x05  GET_TENSOR  u16 entry, u32 offset, u16 max        bytes
 *   0x06  PROFILE     u16 first kernel                      u16 first, u16 count, u32 ticks[count]
 *   0x07  RESET       -                                     - (then the core resets)
 *   0x08  STATS       -                                     u32 good frames, u32 bad frames,
 *                                                           u32 service ticks, u32 runs
 *   0x7E  BOOT        (sent once at start-up, sequence MC_FRAME_SEQ_NONE): u8[8] build id
 *
 * Sequence numbers: INFO opens (or re-opens) a session with any number; every other
 * request must carry the next number (0xFFFE wraps to 0). A request that repeats the
 * last number and bytes is a retry: the stored reply is sent again without running
 * the command twice. Anything else gets MC_AGENT_ERR_SEQUENCE with the expected number.
 *
 * RUN with `end` below the kernel count runs kernels [0, end) only: GET_TENSOR reads a
 * planned tensor, which later kernels may overwrite, right after its kernel ran. The
 * kernels reuse input memory, so every input must be written again before each RUN.
 *
 * No dynamic allocation: the generated main.c owns every buffer (mc_agent_config_t). */
#ifndef MC_AGENT_H
#define MC_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "mc_frame.h"
#include "mc_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MC_AGENT_INFO_FORMAT 1u

#define MC_AGENT_CMD_INFO 0x01u
#define MC_AGENT_CMD_SET_INPUT 0x02u
#define MC_AGENT_CMD_RUN 0x03u
#define MC_AGENT_CMD_GET_OUTPUT 0x04u
#define MC_AGENT_CMD_GET_TENSOR 0x05u
#define MC_AGENT_CMD_PROFILE 0x06u
#define MC_AGENT_CMD_RESET 0x07u
#define MC_AGENT_CMD_STATS 0x08u
#define MC_AGENT_MSG_BOOT 0x7Eu
#define MC_AGENT_MSG_ERROR 0xFFu /* the reply type for a frame whose type could not be read */
#define MC_AGENT_REPLY 0x80u     /* reply type = request type | MC_AGENT_REPLY */

#define MC_AGENT_RUN_PROFILE 0x01u
#define MC_AGENT_RUN_ALL 0xFFFFu

#define MC_AGENT_OK 0u
#define MC_AGENT_ERR_CRC 1u          /* the frame failed its CRC */
#define MC_AGENT_ERR_MALFORMED 2u    /* broken COBS, or shorter than a header and a CRC */
#define MC_AGENT_ERR_OVERSIZE 3u     /* detail: the largest frame the agent takes */
#define MC_AGENT_ERR_VERSION 4u      /* detail: the agent's protocol version */
#define MC_AGENT_ERR_SEQUENCE 5u     /* detail: the sequence number expected */
#define MC_AGENT_ERR_NO_SESSION 6u   /* send INFO first (the device has restarted) */
#define MC_AGENT_ERR_COMMAND 7u      /* unknown command; detail: its type */
#define MC_AGENT_ERR_ARGUMENT 8u     /* index, offset or length out of range; detail: the limit */
#define MC_AGENT_ERR_NO_INPUT 9u     /* detail: the input not (fully) written since the last run */
#define MC_AGENT_ERR_NOT_READY 10u   /* no run yet, tensor overwritten, or no profile of the last run */
#define MC_AGENT_ERR_TIMEOUT 11u     /* a frame stopped arriving half-way; detail: the bytes received */

/* A planned tensor GET_TENSOR can read: its description and the kernel that writes it. */
typedef struct {
    mc_tensor_t tensor;
    uint32_t kernel;
} mc_agent_tensor_t;

typedef struct {
    const mc_model_t *model;
    const char *model_name;
    const uint8_t *build_id;        /* 8 bytes: a hash of the generated model C */
    const mc_agent_tensor_t *tensors;
    uint32_t num_tensors;
    uint8_t *arena;
    size_t arena_bytes;
    uint8_t *rx;                    /* request and reply frame buffers, frame_bytes each */
    uint8_t *tx;
    size_t frame_bytes;
    uint32_t chunk_bytes;           /* the most data bytes one frame carries */
    uint32_t *kernel_ticks;         /* model->num_kernels entries */
    uint32_t *input_written;        /* model->num_inputs entries */
} mc_agent_config_t;

typedef struct {
    mc_agent_config_t cfg;
    mc_ctx_t ctx;
    mc_frame_rx_t rx;
    size_t tx_len;                  /* the stored reply (for retries); 0: none */
    uint32_t last_request_crc;
    uint16_t last_seq;
    uint8_t last_type;
    uint8_t session;                /* an INFO has been answered since start-up */
    uint8_t profiled;               /* kernel_ticks hold the last run's */
    uint32_t run_end;               /* kernels the last run ran; 0: none since the inputs */
    uint32_t good_frames, bad_frames, service_ticks, runs;
} mc_agent_t;

/* Set up the agent and send the BOOT announcement. Returns MC_OK, an mc_init error, or
 * MC_ERR_ARGS when frame_bytes < chunk_bytes + 16 or chunk_bytes < 16. */
int mc_agent_init(mc_agent_t *agent, const mc_agent_config_t *cfg);
/* Feed one received byte; a completed frame is handled and answered at once. */
void mc_agent_byte(mc_agent_t *agent, uint8_t byte);
/* A frame stopped half-way (no byte for a while): drop it and say so. */
void mc_agent_idle(mc_agent_t *agent);
/* Read the console UART forever and serve requests. */
void mc_agent_serve(mc_agent_t *agent);

#ifdef __cplusplus
}
#endif

#endif /* MC_AGENT_H */

/* The host agent: decodes request frames from the console UART, runs the command, and
 * answers. The protocol is described in mc_agent.h; the framing in mc_frame.h. Every
 * field of a request is checked against the model before it is used, so a malformed
 * frame gets an error reply and never a write outside the agent's buffers. */
#include <string.h>

#include "mc_agent.h"
#include "mc_platform.h"

/* How long a frame may pause half-way before it is dropped as truncated. */
#define BYTE_TIMEOUT_MS 1000u

#define REPLY_PAYLOAD(a) ((a)->cfg.tx + MC_FRAME_HEADER_BYTES)

static void uart_sink(void *user, const uint8_t *p, size_t n)
{
    (void)user;
    mc_platform_uart_write((const char *)p, n);
}

/* A short reply that does not replace the stored one (errors about frames that were not
 * accepted as requests, and the boot announcement). */
static void send_short(uint8_t type, uint16_t seq, const uint8_t *payload, size_t n)
{
    uint8_t frame[MC_FRAME_MIN_BYTES + 12u];

    if (n > 12u)
        n = 12u;
    memcpy(frame + MC_FRAME_HEADER_BYTES, payload, n);
    mc_frame_send(frame, mc_frame_seal(frame, type, seq, n), uart_sink, NULL);
}

static void send_error(uint8_t type, uint16_t seq, uint8_t code, uint32_t detail)
{
    uint8_t payload[5];

    payload[0] = code;
    mc_put_u32(payload + 1, detail);
    send_short(type, seq, payload, sizeof payload);
}

static uint16_t next_seq(uint16_t seq)
{
    return seq >= MC_FRAME_SEQ_NONE - 1u ? 0u : (uint16_t)(seq + 1u);
}

/* The reply payload starts with a status byte; error(...) fills status and detail and
 * returns the payload length. */
static size_t error(mc_agent_t *a, uint8_t code, uint32_t detail)
{
    uint8_t *out = REPLY_PAYLOAD(a);

    out[0] = code;
    mc_put_u32(out + 1, detail);
    return 5u;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

/* ---- INFO: the model's description, written through a window so that the host can
 * read it in frame-sized pages without the agent holding all of it. ---- */

typedef struct {
    uint8_t *out;
    uint32_t from, room, pos, n;
} window_t;

static void w8(window_t *w, uint8_t b)
{
    if (w->pos >= w->from && w->pos - w->from < w->room) {
        w->out[w->pos - w->from] = b;
        w->n++;
    }
    w->pos++;
}

static void w16(window_t *w, uint32_t v)
{
    w8(w, (uint8_t)v);
    w8(w, (uint8_t)(v >> 8));
}

static void w32(window_t *w, uint32_t v)
{
    w16(w, v & 0xFFFFu);
    w16(w, v >> 16);
}

static void wstr(window_t *w, const char *s)
{
    uint32_t n = (uint32_t)strlen(s), i;

    if (n > 0xFFFFu)
        n = 0xFFFFu;
    w16(w, n);
    for (i = 0; i < n; i++)
        w8(w, (uint8_t)s[i]);
}

static void wtensor(window_t *w, const mc_tensor_t *t)
{
    uint32_t scale_bits, d;

    memcpy(&scale_bits, &t->scale, sizeof scale_bits);
    wstr(w, t->name);
    w8(w, (uint8_t)t->dtype);
    w8(w, (uint8_t)t->ndim);
    for (d = 0; d < t->ndim; d++)
        w32(w, (uint32_t)t->shape[d]);
    w32(w, scale_bits);
    w32(w, (uint32_t)t->zero_point);
    w32(w, t->bytes);
}

/* The info layout, all little-endian (parsed by microcompile/device/protocol.py):
 *   u8 info format, u8 protocol version, u8[8] build id, u32 arena bytes, u32 chunk bytes,
 *   u8 counter unit, u32 units per count, u32 counts per second,
 *   u16 inputs, u16 outputs, u16 kernels, u16 tensors, str model name,
 *   inputs and outputs: str name, u8 dtype, u8 ndim, i32 dims[ndim], f32 scale, i32 zero point, u32 bytes
 *   kernels: str name, str op, u32 MACs
 *   tensors: u16 kernel, then as an input
 * where str is a u16 length and that many bytes. */
static void write_info(const mc_agent_t *a, window_t *w)
{
    const mc_model_t *m = a->cfg.model;
    uint32_t per_count = 1, i;
    uint32_t unit = mc_platform_counter_unit(&per_count);

    w8(w, MC_AGENT_INFO_FORMAT);
    w8(w, MC_FRAME_VERSION);
    for (i = 0; i < 8u; i++)
        w8(w, a->cfg.build_id[i]);
    w32(w, m->arena_bytes);
    w32(w, a->cfg.chunk_bytes);
    w8(w, (uint8_t)unit);
    w32(w, per_count);
    w32(w, mc_platform_cycles_per_second());
    w16(w, m->num_inputs);
    w16(w, m->num_outputs);
    w16(w, m->num_kernels);
    w16(w, a->cfg.num_tensors);
    wstr(w, a->cfg.model_name);
    for (i = 0; i < m->num_inputs; i++)
        wtensor(w, &m->inputs[i]);
    for (i = 0; i < m->num_outputs; i++)
        wtensor(w, &m->outputs[i]);
    for (i = 0; i < m->num_kernels; i++) {
        wstr(w, m->kernels[i].name);
        wstr(w, m->kernels[i].op);
        w32(w, m->kernels[i].macs);
    }
    for (i = 0; i < a->cfg.num_tensors; i++) {
        w16(w, a->cfg.tensors[i].kernel);
        wtensor(w, &a->cfg.tensors[i].tensor);
    }
}

static size_t cmd_info(mc_agent_t *a, const uint8_t *p, size_t n)
{
    uint8_t *out = REPLY_PAYLOAD(a);
    window_t w;

    if (n < 4u)
        return error(a, MC_AGENT_ERR_ARGUMENT, 4u);
    w.out = out + 5;
    w.from = mc_get_u32(p);
    w.room = a->cfg.chunk_bytes;
    w.pos = 0;
    w.n = 0;
    write_info(a, &w);
    out[0] = MC_AGENT_OK;
    mc_put_u32(out + 1, w.pos);
    return 5u + w.n;
}

/* ---- the commands on the model ---- */

static size_t cmd_set_input(mc_agent_t *a, const uint8_t *p, size_t n)
{
    const mc_model_t *m = a->cfg.model;
    uint32_t index, offset, len, bytes;

    if (n < 5u)
        return error(a, MC_AGENT_ERR_ARGUMENT, 5u);
    index = p[0];
    offset = mc_get_u32(p + 1);
    len = (uint32_t)(n - 5u);
    if (index >= m->num_inputs)
        return error(a, MC_AGENT_ERR_ARGUMENT, m->num_inputs);
    bytes = m->inputs[index].bytes;
    if (offset > bytes || len > bytes - offset)
        return error(a, MC_AGENT_ERR_ARGUMENT, bytes);
    if (offset > a->cfg.input_written[index]) /* inputs are written front to back */
        return error(a, MC_AGENT_ERR_ARGUMENT, a->cfg.input_written[index]);
    memcpy((uint8_t *)mc_input(&a->ctx, index) + offset, p + 5, len);
    if (offset + len > a->cfg.input_written[index])
        a->cfg.input_written[index] = offset + len;
    a->run_end = 0; /* input memory may overlap every other tensor */
    a->profiled = 0;
    REPLY_PAYLOAD(a)[0] = MC_AGENT_OK;
    return 1u;
}

static void store_ticks(void *user, uint32_t kernel, uint32_t ticks)
{
    mc_agent_t *a = (mc_agent_t *)user;

    a->cfg.kernel_ticks[kernel] = ticks;
}

static size_t cmd_run(mc_agent_t *a, const uint8_t *p, size_t n, uint32_t *ran_ticks)
{
    const mc_model_t *m = a->cfg.model;
    uint8_t *out = REPLY_PAYLOAD(a);
    uint32_t end, i, start, stop;
    int profile;

    if (n < 3u)
        return error(a, MC_AGENT_ERR_ARGUMENT, 3u);
    profile = (p[0] & MC_AGENT_RUN_PROFILE) != 0;
    end = mc_get_u16(p + 1);
    if (end == MC_AGENT_RUN_ALL)
        end = m->num_kernels;
    if (end > m->num_kernels)
        return error(a, MC_AGENT_ERR_ARGUMENT, m->num_kernels);
    for (i = 0; i < m->num_inputs; i++) {
        if (a->cfg.input_written[i] != m->inputs[i].bytes)
            return error(a, MC_AGENT_ERR_NO_INPUT, i);
    }
    for (i = 0; i < m->num_inputs; i++)
        a->cfg.input_written[i] = 0; /* the run consumes them */
    profile = profile && end == m->num_kernels;
    /* Every RUN is one inference from the initial recurrent state (the host compares it with
     * the interpreter's single inference, and GET_TENSOR re-runs a prefix of the kernels). */
    mc_reset_state(&a->ctx);
    mc_set_profile_hook(&a->ctx, profile ? store_ticks : NULL, a);
    start = mc_platform_cycles();
    if (end == m->num_kernels)
        mc_run(&a->ctx);
    else
        mc_run_until(&a->ctx, end);
    stop = mc_platform_cycles();
    mc_set_profile_hook(&a->ctx, NULL, NULL);
    *ran_ticks = stop - start;
    a->run_end = end + 1u; /* +1: 0 means no run */
    a->profiled = (uint8_t)profile;
    a->runs++;
    out[0] = MC_AGENT_OK;
    mc_put_u32(out + 1, stop - start);
    mc_put_u16(out + 5, (uint16_t)end);
    return 7u;
}

/* Copy [offset, offset + max) of `src` (clipped to `bytes` and the chunk) into the reply. */
static size_t reply_bytes(mc_agent_t *a, const uint8_t *src, uint32_t bytes, uint32_t offset, uint32_t max)
{
    uint8_t *out = REPLY_PAYLOAD(a);
    uint32_t len;

    if (offset > bytes)
        return error(a, MC_AGENT_ERR_ARGUMENT, bytes);
    len = min_u32(min_u32(max, bytes - offset), a->cfg.chunk_bytes);
    out[0] = MC_AGENT_OK;
    memcpy(out + 1, src + offset, len);
    return 1u + len;
}

static size_t cmd_get_output(mc_agent_t *a, const uint8_t *p, size_t n)
{
    const mc_model_t *m = a->cfg.model;
    uint32_t index;

    if (n < 7u)
        return error(a, MC_AGENT_ERR_ARGUMENT, 7u);
    index = p[0];
    if (index >= m->num_outputs)
        return error(a, MC_AGENT_ERR_ARGUMENT, m->num_outputs);
    if (a->run_end != m->num_kernels + 1u)
        return error(a, MC_AGENT_ERR_NOT_READY, m->num_kernels);
    return reply_bytes(a, (const uint8_t *)mc_output(&a->ctx, index), m->outputs[index].bytes,
                       mc_get_u32(p + 1), mc_get_u16(p + 5));
}

static size_t cmd_get_tensor(mc_agent_t *a, const uint8_t *p, size_t n)
{
    const mc_agent_tensor_t *t;
    uint32_t entry;

    if (n < 8u)
        return error(a, MC_AGENT_ERR_ARGUMENT, 8u);
    entry = mc_get_u16(p);
    if (entry >= a->cfg.num_tensors)
        return error(a, MC_AGENT_ERR_ARGUMENT, a->cfg.num_tensors);
    t = &a->cfg.tensors[entry];
    if (t->tensor.offset > a->cfg.arena_bytes || t->tensor.bytes > a->cfg.arena_bytes - t->tensor.offset)
        return error(a, MC_AGENT_ERR_ARGUMENT, (uint32_t)a->cfg.arena_bytes);
    /* Readable only right after its kernel: later kernels may reuse the bytes. */
    if (a->run_end != t->kernel + 2u)
        return error(a, MC_AGENT_ERR_NOT_READY, t->kernel + 1u);
    return reply_bytes(a, a->cfg.arena + t->tensor.offset, t->tensor.bytes, mc_get_u32(p + 2), mc_get_u16(p + 6));
}

static size_t cmd_profile(mc_agent_t *a, const uint8_t *p, size_t n)
{
    const mc_model_t *m = a->cfg.model;
    uint8_t *out = REPLY_PAYLOAD(a);
    uint32_t first, count, i;

    if (n < 2u)
        return error(a, MC_AGENT_ERR_ARGUMENT, 2u);
    if (!a->profiled)
        return error(a, MC_AGENT_ERR_NOT_READY, 0u);
    first = mc_get_u16(p);
    if (first > m->num_kernels)
        return error(a, MC_AGENT_ERR_ARGUMENT, m->num_kernels);
    count = min_u32(m->num_kernels - first, (a->cfg.chunk_bytes - 4u) / 4u);
    out[0] = MC_AGENT_OK;
    mc_put_u16(out + 1, (uint16_t)first);
    mc_put_u16(out + 3, (uint16_t)count);
    for (i = 0; i < count; i++)
        mc_put_u32(out + 5 + 4u * i, a->cfg.kernel_ticks[first + i]);
    return 5u + 4u * count;
}

static size_t cmd_stats(mc_agent_t *a)
{
    uint8_t *out = REPLY_PAYLOAD(a);

    out[0] = MC_AGENT_OK;
    mc_put_u32(out + 1, a->good_frames);
    mc_put_u32(out + 5, a->bad_frames);
    mc_put_u32(out + 9, a->service_ticks);
    mc_put_u32(out + 13, a->runs);
    return 17u;
}

/* ---- dispatch ---- */

static void send_reply(mc_agent_t *a)
{
    mc_frame_send(a->cfg.tx, a->tx_len, uart_sink, NULL);
}

/* A frame with a good CRC is in cfg.rx[0, len). Returns the ticks spent running the model. */
static uint32_t handle(mc_agent_t *a, size_t len)
{
    const uint8_t *f = a->cfg.rx;
    const uint8_t *p = f + MC_FRAME_HEADER_BYTES;
    size_t n = len - MC_FRAME_MIN_BYTES, out = 0;
    uint8_t type = f[1];
    uint16_t seq = mc_get_u16(f + 2);
    uint32_t crc = mc_get_u32(f + len - MC_FRAME_CRC_BYTES), ran = 0;

    if (f[0] != MC_FRAME_VERSION) {
        send_error((uint8_t)(type | MC_AGENT_REPLY), seq, MC_AGENT_ERR_VERSION, MC_FRAME_VERSION);
        return 0;
    }
    if (type != MC_AGENT_CMD_INFO) {
        if (!a->session) {
            send_error((uint8_t)(type | MC_AGENT_REPLY), seq, MC_AGENT_ERR_NO_SESSION, 0u);
            return 0;
        }
        if (seq == a->last_seq && type == a->last_type && crc == a->last_request_crc && a->tx_len != 0) {
            send_reply(a); /* a retry: the host lost our reply */
            return 0;
        }
        if (seq != next_seq(a->last_seq)) {
            send_error((uint8_t)(type | MC_AGENT_REPLY), seq, MC_AGENT_ERR_SEQUENCE, next_seq(a->last_seq));
            return 0;
        }
    }
    a->session = 1;
    a->last_seq = seq;
    a->last_type = type;
    a->last_request_crc = crc;
    switch (type) {
    case MC_AGENT_CMD_INFO:
        out = cmd_info(a, p, n);
        break;
    case MC_AGENT_CMD_SET_INPUT:
        out = cmd_set_input(a, p, n);
        break;
    case MC_AGENT_CMD_RUN:
        out = cmd_run(a, p, n, &ran);
        break;
    case MC_AGENT_CMD_GET_OUTPUT:
        out = cmd_get_output(a, p, n);
        break;
    case MC_AGENT_CMD_GET_TENSOR:
        out = cmd_get_tensor(a, p, n);
        break;
    case MC_AGENT_CMD_PROFILE:
        out = cmd_profile(a, p, n);
        break;
    case MC_AGENT_CMD_STATS:
        out = cmd_stats(a);
        break;
    case MC_AGENT_CMD_RESET:
        REPLY_PAYLOAD(a)[0] = MC_AGENT_OK;
        a->tx_len = mc_frame_seal(a->cfg.tx, (uint8_t)(type | MC_AGENT_REPLY), seq, 1u);
        send_reply(a);
        mc_platform_reset();
        return 0; /* only a platform without a reset gets here */
    default:
        out = error(a, MC_AGENT_ERR_COMMAND, type);
        break;
    }
    a->tx_len = mc_frame_seal(a->cfg.tx, (uint8_t)(type | MC_AGENT_REPLY), seq, out);
    send_reply(a);
    return ran;
}

static const uint8_t frame_errors[] = {
    0u, 0u, MC_AGENT_ERR_OVERSIZE, MC_AGENT_ERR_MALFORMED, MC_AGENT_ERR_MALFORMED, MC_AGENT_ERR_CRC,
};

void mc_agent_byte(mc_agent_t *a, uint8_t byte)
{
    mc_frame_status_t status = mc_frame_rx_byte(&a->rx, byte);
    uint32_t start, ran;

    if (status == MC_FRAME_PENDING)
        return;
    if (status != MC_FRAME_OK) {
        a->bad_frames++;
        send_error(MC_AGENT_MSG_ERROR, MC_FRAME_SEQ_NONE, frame_errors[status],
                   status == MC_FRAME_OVERSIZE ? (uint32_t)a->cfg.frame_bytes : 0u);
        return;
    }
    a->good_frames++;
    start = mc_platform_cycles();
    ran = handle(a, a->rx.len);
    a->service_ticks += mc_platform_cycles() - start - ran;
}

void mc_agent_idle(mc_agent_t *a)
{
    uint32_t got = (uint32_t)a->rx.len;

    if (!mc_frame_rx_busy(&a->rx))
        return;
    mc_frame_rx_reset(&a->rx);
    a->bad_frames++;
    send_error(MC_AGENT_MSG_ERROR, MC_FRAME_SEQ_NONE, MC_AGENT_ERR_TIMEOUT, got);
}

int mc_agent_init(mc_agent_t *a, const mc_agent_config_t *cfg)
{
    uint32_t i;
    int rc;

    memset(a, 0, sizeof *a);
    a->cfg = *cfg;
    /* Replies carry a status, a u32 and up to a chunk of data; requests at most a chunk and 5 bytes. */
    if (cfg->chunk_bytes < 16u || cfg->frame_bytes < cfg->chunk_bytes + 16u)
        return MC_ERR_ARGS;
    rc = mc_init(&a->ctx, cfg->model, cfg->arena, cfg->arena_bytes);
    if (rc != MC_OK)
        return rc;
    for (i = 0; i < cfg->model->num_inputs; i++)
        cfg->input_written[i] = 0;
    mc_frame_rx_init(&a->rx, cfg->rx, cfg->frame_bytes);
    send_short(MC_AGENT_MSG_BOOT, MC_FRAME_SEQ_NONE, cfg->build_id, 8u);
    return MC_OK;
}

void mc_agent_serve(mc_agent_t *a)
{
    for (;;) {
        char c;

        if (mc_platform_uart_read(&c, 1, BYTE_TIMEOUT_MS) == 1)
            mc_agent_byte(a, (uint8_t)c);
        else
            mc_agent_idle(a);
    }
}

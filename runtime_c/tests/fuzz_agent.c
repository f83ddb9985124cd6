/* Fuzz the agent's frame decoder and command handler on the host, under AddressSanitizer
 * and UndefinedBehaviorSanitizer:
 *   cc -std=c99 -g -fsanitize=address,undefined -fno-sanitize-recover=all -I../include -I../agent \
 *      fuzz_agent.c ../agent/mc_agent.c ../agent/mc_frame.c ../src/mc_runtime.c -o fuzz && ./fuzz 100000 1
 *
 * Feeds N frames (argv[1]) from a seeded generator (argv[2]) to one agent serving a small fake
 * model: random bytes, well-formed frames with random fields (right CRC, so they reach the
 * command handler; sequence numbers mostly right, sizes near every limit), and mutations of
 * such frames (bit flips, inserted, deleted, truncated and repeated bytes), with now and then
 * a pause mid-frame (mc_agent_idle) and whole valid sessions (INFO, inputs, RUN, reads) so that
 * every command is reached in every state. Every byte the agent sends back is decoded again: each
 * reply must be a frame with a good CRC, a known status and at most the agent's frame size. A
 * sanitizer report or a bad reply aborts; otherwise it prints the counts and exits 0. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc_agent.h"
#include "mc_platform.h"

#define CHUNK 32u
#define FRAME (CHUNK + 16u)
#define ARENA 64u

/* ---- a fake model: two inputs, two outputs, three kernels ---- */
static void k0(uint8_t *arena)
{
    for (int i = 0; i < 8; i++)
        arena[16 + i] = (uint8_t)(arena[i] + 1);
}

static void k1(uint8_t *arena)
{
    for (int i = 0; i < 8; i++)
        arena[24 + i] = (uint8_t)(arena[16 + i] ^ arena[8 + (i % 4)]);
}

static void k2(uint8_t *arena)
{
    for (int i = 0; i < 40; i++)
        arena[24 + i] = (uint8_t)(arena[24 + (i % 8)] * 3);
}

static const int32_t s8[2] = {1, 8}, s4[2] = {1, 4}, s40[2] = {1, 40};
static const mc_tensor_t inputs[2] = {{"x", MC_INT8, 0, 8, 2, s8, 0.5f, 0}, {"y", MC_INT8, 8, 4, 2, s4, 1.0f, 1}};
static const mc_tensor_t outputs[2] = {{"a", MC_INT8, 16, 8, 2, s8, 0.5f, 0}, {"b", MC_INT8, 24, 40, 2, s40, 1.0f, 0}};
static const mc_kernel_t kernels[3] = {{"k0", "add", 8, k0}, {"k1", "xor", 8, k1}, {"k2", "mul", 40, k2}};
static const mc_model_t model = {ARENA, 2, inputs, 2, outputs, 3, kernels, 0, 0, 0};
/* The last entry lies outside the arena on purpose: the agent must refuse to read it. */
static const mc_agent_tensor_t tensors[4] = {
    {{"t0", MC_INT8, 16, 8, 2, s8, 0.5f, 0}, 0}, {{"t1", MC_INT8, 24, 8, 2, s8, 1.0f, 0}, 1},
    {{"t2", MC_INT8, 24, 40, 2, s40, 1.0f, 0}, 2}, {{"bad", MC_INT8, 60, 40, 2, s40, 1.0f, 0}, 2}};
static const uint8_t build_id[8] = {1, 2, 3, 4, 5, 6, 7, 8};

static uint8_t arena[ARENA] __attribute__((aligned(16)));
static uint8_t rx[FRAME], tx[FRAME];
static uint32_t kernel_ticks[3], input_written[2];
static const mc_agent_config_t config = {&model, "fuzz", build_id, tensors, 4, arena, sizeof arena,
                                         rx, tx, FRAME, CHUNK, kernel_ticks, input_written};
static mc_agent_t agent;

/* ---- the platform: a counter, a reply checker as the UART, reset by longjmp ---- */
static jmp_buf reboot;
static unsigned long fed, good_total, bad_total; /* globals: they survive the longjmp of a reset */
static uint32_t clock_ticks;
static uint8_t check_buf[FRAME + 64];
static mc_frame_rx_t check;
static unsigned long replies, resets;

void mc_platform_init(void) {}
uint32_t mc_platform_cycles(void) { return clock_ticks += 3u; }
uint32_t mc_platform_cycles_per_second(void) { return 1000u; }
uint32_t mc_platform_counter_unit(uint32_t *per_count) { *per_count = 1u; return MC_COUNTER_CYCLES; }
int mc_platform_uart_read(char *buf, size_t len, uint32_t timeout_ms) { (void)buf; (void)len; (void)timeout_ms; return 0; }
void mc_platform_exit(int code) { exit(code); }
void mc_platform_reset(void) { longjmp(reboot, 1); }

void mc_platform_uart_write(const char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        mc_frame_status_t st = mc_frame_rx_byte(&check, (uint8_t)buf[i]);

        if (st == MC_FRAME_PENDING)
            continue;
        if (st != MC_FRAME_OK || check.len > FRAME) {
            fprintf(stderr, "fuzz: the agent sent a bad frame (status %d, %zu bytes)\n", (int)st, check.len);
            abort();
        }
        if (check.buf[1] != MC_AGENT_MSG_BOOT && check.buf[4] > MC_AGENT_ERR_TIMEOUT) {
            fprintf(stderr, "fuzz: unknown status %u\n", check.buf[4]);
            abort();
        }
        replies++;
    }
}

/* ---- the generator ---- */
static uint64_t rng_state;

static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

static uint32_t below(uint32_t n) { return n ? rnd() % n : 0u; }

/* A number near one of the limits the handler checks. */
static uint32_t edgy(void)
{
    static const uint32_t limits[] = {0, 1, 2, 3, 4, 7, 8, 12, 16, 24, 31, 32, 33, 40, 48, 64, 255, 0xFFFF, 0xFFFFFFFFu};
    uint32_t v = limits[below(sizeof limits / sizeof limits[0])];
    return below(3) == 0 ? v + below(3) - 1u : v;
}

static uint8_t frame[FRAME + 64], wire[2 * (FRAME + 64) + 8];
static size_t wire_len;
static uint16_t seq;

static void collect(void *user, const uint8_t *p, size_t n)
{
    (void)user;
    if (wire_len + n <= sizeof wire) {
        memcpy(wire + wire_len, p, n);
        wire_len += n;
    }
}

/* A sealed frame with a good CRC: a known command with fields near the limits, or anything. */
static void make_frame(uint8_t type, size_t payload_room)
{
    size_t n = below((uint32_t)payload_room + 1u), i;
    uint8_t *p = frame + MC_FRAME_HEADER_BYTES;

    for (i = 0; i < n; i++)
        p[i] = (uint8_t)rnd();
    if (n >= 7) {   /* index / entry, offset, count where the commands read them */
        p[0] = (uint8_t)edgy();
        mc_put_u32(p + 1, edgy());
        if (type == MC_AGENT_CMD_GET_TENSOR || type == MC_AGENT_CMD_PROFILE || type == MC_AGENT_CMD_RUN)
            mc_put_u16(p, (uint16_t)edgy());
        if (type == MC_AGENT_CMD_GET_TENSOR)
            mc_put_u32(p + 2, edgy());
        mc_put_u16(p + n - 2, (uint16_t)edgy());
    }
    n = mc_frame_seal(frame, type, below(4) ? seq : (uint16_t)edgy(), n);
    if (below(50) == 0) {   /* a protocol version the agent does not speak, with a good CRC */
        frame[0] = (uint8_t)rnd();
        mc_put_u32(frame + n - MC_FRAME_CRC_BYTES, mc_crc32(0, frame, n - MC_FRAME_CRC_BYTES));
    }
    wire_len = 0;
    mc_frame_send(frame, n, collect, NULL);
}

/* The number the agent expects next (read from its state: the fuzzer wants mostly right ones). */
static void next_seq(void)
{
    seq = (uint16_t)(agent.last_seq >= 0xFFFEu ? 0u : agent.last_seq + 1u);
}

static void feed(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mc_agent_byte(&agent, p[i]);
}

static void send_frame(uint8_t type, const uint8_t *payload, size_t n)
{
    memcpy(frame + MC_FRAME_HEADER_BYTES, payload, n);
    wire_len = 0;
    mc_frame_send(frame, mc_frame_seal(frame, type, seq, n), collect, NULL);
    feed(wire, wire_len);
    next_seq();
}

/* A whole valid exchange, so that deep states (inputs set, a run stopped after a kernel,
 * a profile taken) are reached and then fuzzed from. */
static void valid_session(void)
{
    uint8_t p[CHUNK + 8];
    uint32_t end = below(4);

    memset(p, 0, sizeof p);
    send_frame(MC_AGENT_CMD_INFO, p, 4);
    p[0] = 0; p[1] = p[2] = p[3] = p[4] = 0;
    send_frame(MC_AGENT_CMD_SET_INPUT, p, 5 + 8);
    p[0] = 1;
    send_frame(MC_AGENT_CMD_SET_INPUT, p, 5 + 4);
    p[0] = (uint8_t)below(2);
    mc_put_u16(p + 1, end == 3 ? 0xFFFFu : (uint16_t)end);
    send_frame(MC_AGENT_CMD_RUN, p, 3);
    p[0] = (uint8_t)below(2);                    /* then read what that run left */
    mc_put_u32(p + 1, below(48));
    mc_put_u16(p + 5, (uint16_t)below(64));
    send_frame(MC_AGENT_CMD_GET_OUTPUT, p, 7);
    mc_put_u16(p, (uint16_t)below(4));
    mc_put_u32(p + 2, below(48));
    mc_put_u16(p + 6, (uint16_t)below(64));
    send_frame(MC_AGENT_CMD_GET_TENSOR, p, 8);
    mc_put_u16(p, (uint16_t)below(4));
    send_frame(MC_AGENT_CMD_PROFILE, p, 2);
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000ul;
    static const uint8_t commands[] = {MC_AGENT_CMD_INFO, MC_AGENT_CMD_SET_INPUT, MC_AGENT_CMD_RUN,
                                       MC_AGENT_CMD_GET_OUTPUT, MC_AGENT_CMD_GET_TENSOR, MC_AGENT_CMD_PROFILE,
                                       MC_AGENT_CMD_RESET, MC_AGENT_CMD_STATS, 0x00, 0x7F, 0xFF};

    rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) * 0x9E3779B97F4A7C15ull + 1u : 1u;
    mc_frame_rx_init(&check, check_buf, sizeof check_buf);
    if (setjmp(reboot) != 0) {   /* the RESET command: start afresh, as after a reboot */
        resets++;
        good_total += agent.good_frames;
        bad_total += agent.bad_frames;
    }
    memset(arena, 0, sizeof arena);
    if (mc_agent_init(&agent, &config) != MC_OK) {
        fprintf(stderr, "fuzz: mc_agent_init failed\n");
        return 1;
    }
    while (fed < n) {
        fed++;
        uint32_t mode = below(100);
        uint8_t type = commands[below(sizeof commands)];

        if (fed % 200u == 0u)
            valid_session();
        if (mode < 20) {            /* random bytes, a zero now and then */
            size_t len = 1u + below(3u * FRAME);
            for (size_t k = 0; k < len; k++)
                wire[k] = below(24) ? (uint8_t)rnd() : 0u;
            wire[len] = 0;
            feed(wire, len + 1u);
        } else if (mode < 65) {     /* well-formed, random fields */
            make_frame(type, FRAME + 8u - MC_FRAME_MIN_BYTES);
            feed(wire, wire_len);
            next_seq();
        } else {                    /* mutated */
            make_frame(type, FRAME - MC_FRAME_MIN_BYTES);
            uint32_t edits = 1u + below(4);
            for (uint32_t e = 0; e < edits && wire_len > 1; e++) {
                size_t at = below((uint32_t)wire_len);
                switch (below(5)) {
                case 0: wire[at] ^= (uint8_t)(1u << below(8)); break;
                case 1: memmove(wire + at, wire + at + 1, wire_len - at - 1); wire_len--; break;
                case 2: if (wire_len < sizeof wire) { memmove(wire + at + 1, wire + at, wire_len - at); wire[at] = (uint8_t)rnd(); wire_len++; } break;
                case 3: wire_len = at + 1u; break;
                default: if (2 * wire_len <= sizeof wire) { memcpy(wire + wire_len, wire, wire_len); wire_len *= 2; } break;
                }
            }
            feed(wire, wire_len);
            if (below(8) == 0)
                mc_agent_idle(&agent); /* the line went quiet mid-frame */
            else
                feed((const uint8_t *)"", 1);
        }
    }
    printf("fuzz: %lu frames fed, %lu replies checked, %lu resets, %lu good and %lu bad frames seen by "
           "the agent, 0 crashes\n", fed, replies, resets, good_total + agent.good_frames,
           bad_total + agent.bad_frames);
    return 0;
}

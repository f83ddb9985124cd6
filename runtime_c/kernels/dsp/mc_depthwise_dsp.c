/* Depthwise micro-kernels (mc_depthwise.h) for Armv7E-M cores with the DSP extension.
 * Copied into a project only when the board's core has DSP.
 *
 * Four channels per step: one 32-bit load of x gives channels c..c+3; SXTB16 makes the
 * int16 pairs (c, c+2) and, rotated by 8, (c+1, c+3). The packed weights hold the same
 * pairs, so SMLABB/SMLATT multiply-accumulate each lane into its own channel: per tap and
 * four channels, 1 load of x, 2 of w, 2 SXTB16 and 4 MACs. */
#include <string.h>

#include "mc_dsp.h"
#include "mc_depthwise.h"
#include "mc_requant_dsp.h"

/* Channels c0..channels-1 (the last, partial group of four), one channel at a time. */
static void depthwise_tail(int8_t *y, const int8_t *x, const int16_t *w, const int32_t *bias, const int32_t *mult,
                           const int32_t *rshift, int32_t c0, int32_t channels, int32_t kh, int32_t kw,
                           int32_t x_row, int32_t x_col, int32_t w_row, int32_t w_group, int32_t out_offset,
                           int32_t act_min, int32_t act_max)
{
    for (int32_t c = c0; c < channels; ++c) {
        const int16_t *wc = w + (c >> 2) * w_group + (c % 2) * 2 + (c % 4) / 2;
        int32_t acc = bias[c];

        for (int32_t i = 0; i < kh; ++i) {
            for (int32_t j = 0; j < kw; ++j) {
                acc += (int32_t)x[c + i * x_row + j * x_col] * wc[i * w_row + j * 4];
            }
        }
        acc = mc_requant_ssat8(acc, mult[c], rshift[c], out_offset);
        acc = acc < act_min ? act_min : acc;
        y[c] = (int8_t)(acc > act_max ? act_max : acc);
    }
}

/* The generic kernel (any window): mc_depthwise_dsp_s8. */
static inline __attribute__((always_inline)) void depthwise_dsp(
    int8_t *y, const int8_t *x, const int16_t *w, const int32_t *bias, const int32_t *mult, const int32_t *rshift,
    int32_t channels, int32_t kh, int32_t kw, int32_t x_row, int32_t x_col, int32_t w_row, int32_t w_group,
    int32_t out_offset, int32_t act_min, int32_t act_max)
{
    const int32_t c4 = channels & ~3;
    const int32_t lo4 = mc_bytes4(act_min), hi4 = mc_bytes4(act_max);
    int32_t c = 0;

    for (; c < c4; c += 4) {
        const int8_t *xr = x + c;
        const int16_t *wr = w + (c >> 2) * w_group;
        int32_t a0 = bias[c], a1 = bias[c + 1], a2 = bias[c + 2], a3 = bias[c + 3];

        /* One tap after another, pointers walking: the empty asm keeps GCC 12 from
         * hoisting every load of an unrolled window and spilling the accumulators. */
#pragma GCC unroll 3
        for (int32_t i = 0; i < kh; ++i, xr += x_row, wr += w_row) {
            const int8_t *xp = xr;

#pragma GCC unroll 3
            for (int32_t j = 0; j < kw; ++j, xp += x_col) {
                const int32_t xv = ld32(xp);
                const int32_t xe = __sxtb16(xv), xo = sxtb16_ror8(xv);
                const int32_t we = ld32(wr + j * 4), wo = ld32(wr + j * 4 + 2);

                a0 = __smlabb(xe, we, a0);
                a2 = __smlatt(xe, we, a2);
                a1 = __smlabb(xo, wo, a1);
                a3 = __smlatt(xo, wo, a3);
                __asm__ volatile("" ::: "memory");
            }
        }
        mc_store4_s8(y + c, mc_requant_ssat8(a0, mult[c], rshift[c], out_offset),
                     mc_requant_ssat8(a1, mult[c + 1], rshift[c + 1], out_offset),
                     mc_requant_ssat8(a2, mult[c + 2], rshift[c + 2], out_offset),
                     mc_requant_ssat8(a3, mult[c + 3], rshift[c + 3], out_offset), lo4, hi4);
    }
    depthwise_tail(y, x, w, bias, mult, rshift, c, channels, kh, kw, x_row, x_col, w_row, w_group, out_offset,
                   act_min, act_max);
}

void mc_depthwise_dsp_s8(MC_DEPTHWISE_ARGS)
{
    depthwise_dsp(y, x, w, bias, mult, rshift, params->channels, params->kh, params->kw, params->x_row,
                  params->x_col, params->w_row, params->w_group, params->out_offset, params->act_min,
                  params->act_max);
}

/* The windows of a 3x3 filter with padding 1: interior, edges, corners. The filter is 3
 * wide, so a filter row is 3 taps * 4 lanes (24 bytes) and every weight load has a constant
 * offset. The taps are inline assembly: per tap and four channels one LDR of x (the second
 * and third column through [x, x_col] and [x, x_col, lsl #1], no address arithmetic), one
 * LDRD of the tap's two weight words (post-incremented; the packed filter is word-aligned,
 * weights are .balign 4 and every offset a multiple of 8 bytes), two SXTB16 and four
 * SMLABB/SMLATT: 8 instructions for 4 MACs where GCC 12 made 10 (it kept the tap addresses
 * on the stack), plus one ADD per row. */
#define DW_MAC                                                                                     \
    "sxtb16 %[xe], %[xv]\n\t"                                                                      \
    "sxtb16 %[xv], %[xv], ror #8\n\t"                                                              \
    "smlabb %[a0], %[xe], %[w0], %[a0]\n\t"                                                        \
    "smlatt %[a2], %[xe], %[w0], %[a2]\n\t"                                                        \
    "smlabb %[a1], %[xv], %[w1], %[a1]\n\t"                                                        \
    "smlatt %[a3], %[xv], %[w1], %[a3]\n\t"
#define DW_TAP0 "ldr %[xv], [%[xp]]\n\t" "ldrd %[w0], %[w1], [%[wp]], #8\n\t" DW_MAC
#define DW_TAP1 "ldr %[xv], [%[xp], %[xc]]\n\t" "ldrd %[w0], %[w1], [%[wp]], #8\n\t" DW_MAC
#define DW_TAP2 "ldr %[xv], [%[xp], %[xc], lsl #1]\n\t" "ldrd %[w0], %[w1], [%[wp]], #8\n\t" DW_MAC
#define DW_ROW3 DW_TAP0 DW_TAP1 DW_TAP2 "add %[xp], %[xp], %[xr]\n\t"
#define DW_ROW2 DW_TAP0 DW_TAP1 "add %[wp], %[wp], #8\n\t" "add %[xp], %[xp], %[xr]\n\t"

#define MC_DEPTHWISE_FIXED(KH, KW, ROWS)                                                             \
    void mc_depthwise_##KH##x##KW##_dsp_s8(MC_DEPTHWISE_ARGS)                                        \
    {                                                                                                \
        const int32_t channels = params->channels, c4 = channels & ~3, x_row = params->x_row;         \
        const int32_t x_col = params->x_col, w_group = params->w_group, off = params->out_offset;    \
        const int32_t lo4 = mc_bytes4(params->act_min), hi4 = mc_bytes4(params->act_max);             \
        const int8_t *xg = x;                                                                        \
        const int16_t *wg = w;                                                                       \
        int8_t *yg = y, *yend = y + c4;                                                              \
        const int32_t *b = bias, *m = mult, *r = rshift;                                             \
                                                                                                     \
        for (; yg != yend; yg += 4, xg += 4, wg += w_group, b += 4, m += 4, r += 4) {                \
            const int8_t *xp = xg;                                                                   \
            const int16_t *wp = wg;                                                                  \
            int32_t a0 = b[0], a1 = b[1], a2 = b[2], a3 = b[3];                                      \
            int32_t xv, xe, w0, w1;                                                                  \
                                                                                                     \
            __asm__(ROWS                                                                             \
                    : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [xp] "+r"(xp),     \
                      [wp] "+r"(wp), [xv] "=&r"(xv), [xe] "=&r"(xe), [w0] "=&r"(w0), [w1] "=&r"(w1)  \
                    : [xc] "r"(x_col), [xr] "r"(x_row)                                               \
                    : "memory");                                                                     \
            mc_store4_s8(yg, mc_requant_ssat8(a0, m[0], r[0], off), mc_requant_ssat8(a1, m[1], r[1], off), \
                         mc_requant_ssat8(a2, m[2], r[2], off), mc_requant_ssat8(a3, m[3], r[3], off),  \
                         lo4, hi4);                                                                  \
        }                                                                                            \
        if (c4 != channels) /* the last, partial group: one channel at a time */                    \
            depthwise_tail(y, x, w, bias, mult, rshift, c4, channels, KH, KW, x_row, x_col, 12, w_group, \
                           off, params->act_min, params->act_max);                                   \
    }

MC_DEPTHWISE_FIXED(3, 3, DW_ROW3 DW_ROW3 DW_ROW3)
MC_DEPTHWISE_FIXED(2, 3, DW_ROW3 DW_ROW3)
MC_DEPTHWISE_FIXED(3, 2, DW_ROW2 DW_ROW2 DW_ROW2)
MC_DEPTHWISE_FIXED(2, 2, DW_ROW2 DW_ROW2)

/* ---------------------------------------------------------------- with requantization records
 * The same taps, and the whole loop over groups of four channels in assembly (a naked
 * function, so every register is ours): per group three LDM read the records (bias, mult,
 * rshift - 1), the requantization is mc_requant_dsp.h's, and the loop state that does not fit
 * in registers sits in six stack words. Per group of a 3x3 window: 75 instructions of taps and
 * about 48 more, where the C loop took about 74. */
typedef struct {
    int8_t *y;              /*  0 */
    int8_t *yend;           /*  4: y + (channels & ~3) */
    const int8_t *x;        /*  8 */
    const int16_t *w;       /* 12 */
    const int32_t *rq;      /* 16 */
    int32_t x_col, x_row;   /* 20, 24 */
    int32_t wskip;          /* 28: bytes from the end of a group's taps to the next group */
    int32_t off2;           /* 32: 1 + 2 * out_offset */
    int32_t lo4, hi4;       /* 36, 40 */
} dw_rq_t;

/* r0-r3 the sums, r4 the input walking the window, r5 x_col, r6 x_row, r7 a column word,
 * r8 its even lanes, r9/r10 a tap's weights, r11 the weights, r12 the records, lr the output;
 * [sp]: the group's first input, yend, wskip, off2, lo4, hi4. The DW_TAP macros name
 * %[xp] etc.: here they are spelled with the registers. */
#define DWR_MAC                                                                                   \
    "sxtb16 r8, r7\n\t"                                                                          \
    "sxtb16 r7, r7, ror #8\n\t"                                                                  \
    "smlabb r0, r8, r9, r0\n\t"                                                                  \
    "smlatt r2, r8, r9, r2\n\t"                                                                  \
    "smlabb r1, r7, r10, r1\n\t"                                                                 \
    "smlatt r3, r7, r10, r3\n\t"
#define DWR_TAP0 "ldr r7, [r4]\n\t" "ldrd r9, r10, [r11], #8\n\t" DWR_MAC
#define DWR_TAP1 "ldr r7, [r4, r5]\n\t" "ldrd r9, r10, [r11], #8\n\t" DWR_MAC
#define DWR_TAP2 "ldr r7, [r4, r5, lsl #1]\n\t" "ldrd r9, r10, [r11], #8\n\t" DWR_MAC
#define DWR_ROW3 DWR_TAP0 DWR_TAP1 DWR_TAP2 "add r4, r4, r6\n\t"
#define DWR_ROW2 DWR_TAP0 DWR_TAP1 "add r11, r11, #8\n\t" "add r4, r4, r6\n\t"

#define DWR_LOOP(ROWS)                                                                              \
    __asm__ volatile(                                                                               \
        "push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t"                                         \
        "sub sp, sp, #24\n\t"                                                                     \
        "ldr r1, [r0, #8]\n\t"  "str r1, [sp]\n\t"                                               \
        "ldr r1, [r0, #4]\n\t"  "str r1, [sp, #4]\n\t"                                           \
        "ldr r1, [r0, #28]\n\t" "str r1, [sp, #8]\n\t"                                           \
        "ldr r1, [r0, #32]\n\t" "str r1, [sp, #12]\n\t"                                          \
        "ldrd r1, r2, [r0, #36]\n\t" "strd r1, r2, [sp, #16]\n\t"                               \
        "ldr lr, [r0]\n\t"                                                                        \
        "ldr r11, [r0, #12]\n\t"                                                                  \
        "ldr r12, [r0, #16]\n\t"                                                                  \
        "ldrd r5, r6, [r0, #20]\n\t"                                                              \
        "1:\n\t"                                                                                  \
        "ldmia r12!, {r0, r1, r2, r3}\n\t"            /* bias */                                  \
        "ldr r4, [sp]\n\t"                                                                        \
        ROWS                                                                                        \
        "ldr r7, [sp, #8]\n\t"                                                                    \
        "add r11, r11, r7\n\t"                        /* the next group's weights */              \
        "ldmia r12!, {r7, r8, r9, r10}\n\t"           /* mult: SMMULR(2 * acc, mult) */          \
        "lsl r0, r0, #1\n\t" "smmulr r0, r0, r7\n\t"                                              \
        "lsl r1, r1, #1\n\t" "smmulr r1, r1, r8\n\t"                                              \
        "lsl r2, r2, #1\n\t" "smmulr r2, r2, r9\n\t"                                              \
        "lsl r3, r3, #1\n\t" "smmulr r3, r3, r10\n\t"                                             \
        "ldmia r12!, {r7, r8, r9, r10}\n\t"           /* rshift - 1 */                           \
        "ldr r4, [sp, #12]\n\t"                       /* off2 */                                 \
        "sub r0, r0, r0, lsr #31\n\t" "asr r0, r0, r7\n\t" "add r0, r0, r4\n\t"                \
        "ssat r0, #8, r0, asr #1\n\t"                                                             \
        "sub r1, r1, r1, lsr #31\n\t" "asr r1, r1, r8\n\t" "add r1, r1, r4\n\t"                \
        "ssat r1, #8, r1, asr #1\n\t"                                                             \
        "sub r2, r2, r2, lsr #31\n\t" "asr r2, r2, r9\n\t" "add r2, r2, r4\n\t"                \
        "ssat r2, #8, r2, asr #1\n\t"                                                             \
        "sub r3, r3, r3, lsr #31\n\t" "asr r3, r3, r10\n\t" "add r3, r3, r4\n\t"               \
        "ssat r3, #8, r3, asr #1\n\t"                                                             \
        "pkhbt r7, r0, r2, lsl #16\n\t"               /* pack as mc_store4_s8 */                 \
        "pkhbt r8, r1, r3, lsl #16\n\t"                                                           \
        "uxtb16 r7, r7\n\t"                                                                       \
        "uxtb16 r8, r8\n\t"                                                                       \
        "orr r7, r7, r8, lsl #8\n\t"                                                              \
        "ldrd r8, r9, [sp, #16]\n\t"                  /* lo4, hi4 */                             \
        "ssub8 r10, r7, r8\n\t" "sel r7, r7, r8\n\t"                                              \
        "ssub8 r10, r9, r7\n\t" "sel r7, r7, r9\n\t"                                              \
        "str r7, [lr], #4\n\t"                                                                    \
        "ldr r4, [sp]\n\t" "add r4, r4, #4\n\t" "str r4, [sp]\n\t"                               \
        "ldr r7, [sp, #4]\n\t"                                                                    \
        "cmp lr, r7\n\t"                                                                          \
        "bne 1b\n\t"                                                                              \
        "add sp, sp, #24\n\t"                                                                     \
        "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n\t")

/* The last, partial group of four, channel by channel, from its zero-padded record. */
static void depthwise_rq_tail(int8_t *y, const int8_t *x, const int16_t *w, const int32_t *rq, int32_t c0,
                              int32_t channels, int32_t kh, int32_t kw, int32_t x_row, int32_t x_col,
                              int32_t w_group, int32_t out_offset, int32_t act_min, int32_t act_max)
{
    for (int32_t c = c0; c < channels; ++c) {
        const int16_t *wc = w + (c >> 2) * w_group + (c % 2) * 2 + (c % 4) / 2;
        const int32_t *rec = rq + (c >> 2) * 12 + (c & 3);
        int32_t acc = rec[0];

        for (int32_t i = 0; i < kh; ++i)
            for (int32_t j = 0; j < kw; ++j)
                acc += (int32_t)x[c + i * x_row + j * x_col] * wc[i * 12 + j * 4];
        acc = mc_requant_ssat8(acc, rec[4], rec[8] + 1, out_offset);
        acc = acc < act_min ? act_min : acc;
        y[c] = (int8_t)(acc > act_max ? act_max : acc);
    }
}

#define MC_DEPTHWISE_RQ(KH, KW, ROWS)                                                                  \
    __attribute__((naked, noinline)) static void dw_rq_##KH##x##KW(const dw_rq_t *ctx __attribute__((unused))) \
    {                                                                                                  \
        DWR_LOOP(ROWS);                                                                                \
    }                                                                                                  \
    void mc_depthwise_##KH##x##KW##_dsp_rq_s8(MC_DEPTHWISE_RQ_ARGS)                                    \
    {                                                                                                  \
        const int32_t channels = params->channels, c4 = channels & ~3;                                 \
        /* 16 words more than the context: the 60 bytes the naked loop pushes, which GCC's stack   \
         * usage (the fit report's static bound) cannot see, are counted in this frame. */          \
        union { dw_rq_t ctx; int32_t room[11 + 16]; } u;                                               \
                                                                                                       \
        if (c4 != 0) {                                                                                 \
            u.ctx.y = y;                                                                               \
            u.ctx.yend = y + c4;                                                                       \
            u.ctx.x = x;                                                                               \
            u.ctx.w = w;                                                                               \
            u.ctx.rq = rq;                                                                             \
            u.ctx.x_col = params->x_col;                                                               \
            u.ctx.x_row = params->x_row;                                                               \
            u.ctx.wskip = 2 * params->w_group - KH * 24;                                               \
            u.ctx.off2 = 1 + 2 * params->out_offset;                                                   \
            u.ctx.lo4 = mc_bytes4(params->act_min);                                                    \
            u.ctx.hi4 = mc_bytes4(params->act_max);                                                    \
            dw_rq_##KH##x##KW(&u.ctx);                                                                 \
        }                                                                                              \
        if (c4 != channels)                                                                            \
            depthwise_rq_tail(y, x, w, rq, c4, channels, KH, KW, params->x_row, params->x_col,          \
                              params->w_group, params->out_offset, params->act_min, params->act_max);  \
    }

MC_DEPTHWISE_RQ(3, 3, DWR_ROW3 DWR_ROW3 DWR_ROW3)
MC_DEPTHWISE_RQ(2, 3, DWR_ROW3 DWR_ROW3)
MC_DEPTHWISE_RQ(3, 2, DWR_ROW2 DWR_ROW2 DWR_ROW2)
MC_DEPTHWISE_RQ(2, 2, DWR_ROW2 DWR_ROW2)

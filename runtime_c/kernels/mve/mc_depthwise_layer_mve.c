/* mc_depthwise_layer_mve_s8 (mc_depthwise.h): a whole int8 3x3 depthwise layer (depth multiplier
 * 1, dilation 1, stride 1 or 2 across) for Armv8.1-M cores with Helium (MVE), the Cortex-M55.
 * Copied into a project only when the board's core has MVE.
 *
 * The per-pixel kernel (mc_depthwise_mve.c) is called once per output pixel and region and
 * computes its tap addresses and gathers its weights. Here one call runs the layer:
 *
 *   - `rows` is a ring of three padded input rows in groups of four channels: group g, slot r,
 *     column j at ((g * 3 + r) * padded_w + j) * 4, input row ih in slot ih mod 3, the padding
 *     (rows and columns outside the input) set to the input zero point. Each output row copies
 *     only the input rows the ring does not hold yet (one at stride 1): 16 channels of a pixel
 *     per load, scattered as four words (VSTRW.32 with offsets);
 *   - the weights are packed the same way in flash (group, tap, four channels), so within a
 *     group every tap of four neighbouring output pixels, and every weight, is an immediate
 *     offset from one of four pointers. The row of a group is assembly (dw_row_s1/_s2, below):
 *     per tap one weight load (VLDRB.S32) and per pixel one input load, a VMUL and a VADD (MVE
 *     has no vector-by-vector multiply-add), 13 instructions per 16 MACs, then the four pixels
 *     requantized with the group's record (bias, multipliers and negated shifts, 48 bytes in
 *     flash) as mc_mve.h's mc_requant_mve does. The loop over a row's groups is
 *     assembly too. A last group of fewer than four channels (channels % 4) runs the same in
 *     C under a predicate.
 *
 * The ring holds `block` channels (a multiple of four, or all of them): a layer whose rows of
 * every channel would take too much scratch runs in passes of that many channels, each over
 * every row (MobileNetV1's 24x24x32 layer: three rows of 26 columns by 32 channels, 2,496 bytes,
 * in two passes of 16).
 *
 * In place: within a pass, a row's inputs are all in the ring before its outputs are written,
 * rows top to bottom, so the output may sit over the input by the "window" in-place rule.
 * Passes of fewer than all channels are also safe when every output byte lies on an input byte
 * of its own channel (an offset of whole pixels, or no overlap): a pass reads and writes its
 * own channels only. Otherwise the layer runs pixel by pixel from the input (layer_direct).
 * On a real Cortex-M55 the scatter takes one beat per lane; QEMU counts it as one instruction. */
#if !defined(__ARM_FEATURE_MVE)
#error "microcompile: this kernel uses Helium (MVE), which the compiler flags do not enable: compile with the core's -mcpu (e.g. -mcpu=cortex-m55), or export the model for a board whose core lacks Helium"
#endif
#include <arm_mve.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mc_depthwise.h"
#include "mc_mve.h"

/* Input row ih into ring slot `slot` (layout above), channels [c0, c0 + c) (c0 % 4 == 0): the
 * columns inside the input (the padding columns hold zp_in from the pass's start, layer_pass);
 * a row outside the input becomes zp_in. One loop per run of channels over the columns, so a
 * column costs a load, a store and two pointer steps. */
static __attribute__((noinline)) void copy_row(int8_t *rows, const int8_t *xb, int32_t ih, int32_t slot, int32_t c0,
                                               int32_t c, const mc_depthwise_layer_params_t *p)
{
    const int32_t wp = p->padded_w, group = 3 * wp * 4, channels = p->channels;
    const int32_t n = (p->in_w < wp - p->pad_left ? p->in_w : wp - p->pad_left);   /* columns inside */
    const uint32x4_t lanes = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)group);   /* 0, group, 2 group, 3 group */
    const int32_t zpw = (int32_t)(0x01010101u * (uint8_t)p->zp_in);
    int8_t *dst = rows + (slot * wp + p->pad_left) * 4;
    const int8_t *src = xb + ih * p->in_w * channels + c0;
    int32_t k = 0;

    if (ih < 0 || ih >= p->in_h) {
        for (int32_t g = 0; g < (c + 3) >> 2; ++g) {
            int32_t *d = (int32_t *)(void *)(dst + g * group);                      /* word-aligned */

            for (int32_t j = 0; j < n; ++j)
                d[j] = zpw;
        }
        return;
    }
    for (; k + 16 <= c; k += 16) {       /* 16 channels of a column: one load, one scatter of 4 words */
        const int8_t *s = src + k;
        int8_t *d = dst + (k >> 2) * group;

        for (int32_t j = 0; j < n; ++j, s += channels, d += 4)
            vstrwq_scatter_offset_s32((int32_t *)(void *)d, lanes, vreinterpretq_s32_s8(vldrbq_s8(s)));
    }
    for (; k + 4 <= c; k += 4) {         /* 4 channels of a column: one word */
        const int8_t *s = src + k;
        int32_t *d = (int32_t *)(void *)(dst + (k >> 2) * group);
        int32_t j = 0;

        if ((channels & 3) == 0 && ((uintptr_t)s & 3) == 0) {   /* four columns' words: one gather */
            const uint32x4_t cols = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)channels);

            for (; j + 4 <= n; j += 4, s += 4 * channels)
                vstrwq_s32(&d[j], vldrwq_gather_offset_s32((const int32_t *)(const void *)s, cols));
        }
        for (; j < n; ++j, s += channels)
            memcpy(&d[j], s, 4);
    }
    if (k < c) {                         /* a last partial group (channels % 4): zp_in after it */
        const int8_t *s = src + k;
        int8_t *d = dst + (k >> 2) * group;

        for (int32_t j = 0; j < n; ++j, s += channels, d += 4) {
            int32_t v = zpw;

            memcpy(&v, s, (size_t)(c - k));
            memcpy(d, &v, 4);
        }
    }
}

/* One output row: every whole group of four channels. */
typedef struct {
    int32x4_t lo, hi;                       /* bytes 0, 16: the activation's clamp */
    const int8_t *in0, *in1, *in2;          /* 32, 36, 40: group 0's first pixel's first tap in each row */
    const int8_t *w;                        /* 44: group 0's 36 packed weights */
    const int32_t *rq;                      /* 48: group 0's record: bias, mult, -rshift (4 each) */
    int8_t *y;                              /* 52: group 0's first pixel's four outputs */
    int32_t ldy;                            /* 56: bytes from one output pixel to the next */
    int32_t blocks;                         /* 60: blocks of four pixels */
    int32_t singles;                        /* 64: pixels after them */
    int32_t off;                            /* 68: the output offset */
    int32_t groups;                         /* 72: whole groups, at least 1 */
    int32_t gstride;                        /* 76: bytes from one group's ring to the next */
    int32_t gnext;                          /* 80: bytes from where a group's blocks leave its rows to
                                               the next group's first pixel: gstride - blocks * 16 * stride */
} dw_job_t;

typedef char dw_job_layout[(offsetof(dw_job_t, in0) == 32 && offsetof(dw_job_t, w) == 44 &&
                            offsetof(dw_job_t, rq) == 48 && offsetof(dw_job_t, y) == 52 &&
                            offsetof(dw_job_t, ldy) == 56 && offsetof(dw_job_t, blocks) == 60 &&
                            offsetof(dw_job_t, singles) == 64 && offsetof(dw_job_t, off) == 68 &&
                            offsetof(dw_job_t, groups) == 72 && offsetof(dw_job_t, gstride) == 76 &&
                            offsetof(dw_job_t, gnext) == 80) ? 1 : -1];

/* Assembly text: tap (T, U) of pixel K at stride S. Rows in r0-r2, weights r3 (the widening
 * loads take r0-r7 only), the group's record r11, accumulators q0-q3, the weight q4, the
 * input q5. */
#define MC_STR2(x) #x
#define MC_STR(x) MC_STR2(x)
#define MC_W(T, U) "vldrb.s32 q4, [r3, #" MC_STR(((T) * 3 + (U)) * 4) "]\n"
#define MC_X(T, U, K, S, Q)                                                                        \
    "vldrb.s32 q5, [r" #T ", #" MC_STR(((U) + (K) * (S)) * 4) "]\n"                               \
    "vmul.i32 q5, q5, q4\n"                                                                        \
    "vadd.i32 " Q ", " Q ", q5\n"
#define MC_TAP4(T, U, S) MC_W(T, U) MC_X(T, U, 0, S, "q0") MC_X(T, U, 1, S, "q1") MC_X(T, U, 2, S, "q2") \
    MC_X(T, U, 3, S, "q3")
#define MC_TAP1(T, U, S) MC_W(T, U) MC_X(T, U, 0, S, "q0")
#define MC_TAP2(T, U, S) MC_W(T, U) MC_X(T, U, 0, S, "q0") MC_X(T, U, 1, S, "q1")
#define MC_TAP3(T, U, S) MC_W(T, U) MC_X(T, U, 0, S, "q0") MC_X(T, U, 1, S, "q1") MC_X(T, U, 2, S, "q2")
#define MC_TAPS(TAP, S) TAP(0, 0, S) TAP(0, 1, S) TAP(0, 2, S) TAP(1, 0, S) TAP(1, 1, S) TAP(1, 2, S)  \
    TAP(2, 0, S) TAP(2, 1, S) TAP(2, 2, S)
#define MC_RQ(Q)                                                                                   \
    "vqrdmulh.s32 " Q ", " Q ", q4\n"                                                              \
    "vshr.s32 q6, " Q ", #31\n"                                                                    \
    "vqadd.s32 " Q ", " Q ", q6\n"                                                                 \
    "vrshl.s32 " Q ", " Q ", q5\n"                                                                 \
    "vadd.i32 " Q ", " Q ", r12\n"                                                                 \
    "vmax.s32 " Q ", " Q ", q7\n"
#define MC_RQ_LOAD "vldrw.u32 q4, [r11, #16]\n" "vldrw.u32 q5, [r11, #32]\n" "ldr r12, [r8, #68]\n"  \
    "vldrw.u32 q7, [r8]\n"

/* Not naked functions (mc_mve.h's MC_MVE_ASM_CLOBBERS says why). */

/* dw_row_s<S>(job): for each whole group, job->blocks blocks of four pixels, then job->singles
 * pixels; the group's rows, weights, record and outputs then move on by one group. */
#define MC_DW_ROW(NAME, S)                                                                         \
    __attribute__((noinline)) static void NAME(dw_job_t *job)                                      \
    {                                                                                              \
        register dw_job_t *r0 __asm__("r0") = job;                                                 \
                                                                                                   \
        __asm__ volatile(                                                                          \
            "mov r8, r0\n"                                                                         \
            "ldr r3, [r8, #44]\n"                                                                  \
            "ldr r11, [r8, #48]\n"                                                                 \
            "ldr r9, [r8, #52]\n"                                                                  \
            "ldr r10, [r8, #72]\n"                                                                 \
            "ldr r5, [r8, #56]\n"                                                                  \
            "ldrd r0, r1, [r8, #32]\n"                                                             \
            "ldr r2, [r8, #40]\n"                                                                  \
            "5:\n"                         /* a group: r0-r2 at its rows' first pixel */          \
            "mov r4, r9\n"                                                                         \
            "ldr r6, [r8, #60]\n"                                                                  \
            "cmp r6, #0\n"                                                                         \
            "beq 2f\n"                                                                             \
            "1:\n"                                               /* four pixels */                 \
            "vldrw.u32 q0, [r11]\n"                                                                \
            "vmov q1, q0\n" "vmov q2, q0\n" "vmov q3, q0\n"                                     \
            MC_TAPS(MC_TAP4, S)                                                                    \
            MC_RQ_LOAD MC_RQ("q0") MC_RQ("q1") MC_RQ("q2") MC_RQ("q3")                             \
            "vldrw.u32 q6, [r8, #16]\n"                                                            \
            "vmin.s32 q0, q0, q6\n" "vmin.s32 q1, q1, q6\n" "vmin.s32 q2, q2, q6\n" "vmin.s32 q3, q3, q6\n" \
            "vstrb.32 q0, [r4]\n" "add r4, r5\n"                                                  \
            "vstrb.32 q1, [r4]\n" "add r4, r5\n"                                                  \
            "vstrb.32 q2, [r4]\n" "add r4, r5\n"                                                  \
            "vstrb.32 q3, [r4]\n" "add r4, r5\n"                                                  \
            "adds r0, #" MC_STR(16 * (S)) "\n"                                                     \
            "adds r1, #" MC_STR(16 * (S)) "\n"                                                     \
            "adds r2, #" MC_STR(16 * (S)) "\n"                                                     \
            "subs r6, #1\n"                                                                        \
            "bne 1b\n"                                                                             \
            "2:\n"                               /* the row's last 1-3 pixels at once (no loop) */  \
            "ldr r6, [r8, #64]\n"                                                                  \
            "cmp r6, #2\n"                                                                         \
            "bgt 7f\n"                                                                             \
            "beq 6f\n"                                                                             \
            "cmp r6, #0\n"                                                                         \
            "beq 4f\n"                                                                             \
            "vldrw.u32 q0, [r11]\n"                                               /* one pixel */ \
            MC_TAPS(MC_TAP1, S)                                                                    \
            MC_RQ_LOAD MC_RQ("q0")                                                                 \
            "vldrw.u32 q6, [r8, #16]\n"                                                            \
            "vmin.s32 q0, q0, q6\n"                                                                \
            "vstrb.32 q0, [r4]\n"                                                                  \
            "b 4f\n"                                                                               \
            "6:\n"                                                               /* two pixels */ \
            "vldrw.u32 q0, [r11]\n"                                                                \
            "vmov q1, q0\n"                                                                        \
            MC_TAPS(MC_TAP2, S)                                                                    \
            MC_RQ_LOAD MC_RQ("q0") MC_RQ("q1")                                                     \
            "vldrw.u32 q6, [r8, #16]\n"                                                            \
            "vmin.s32 q0, q0, q6\n" "vmin.s32 q1, q1, q6\n"                                      \
            "vstrb.32 q0, [r4]\n" "add r4, r5\n"                                                  \
            "vstrb.32 q1, [r4]\n"                                                                  \
            "b 4f\n"                                                                               \
            "7:\n"                                                             /* three pixels */ \
            "vldrw.u32 q0, [r11]\n"                                                                \
            "vmov q1, q0\n" "vmov q2, q0\n"                                                      \
            MC_TAPS(MC_TAP3, S)                                                                    \
            MC_RQ_LOAD MC_RQ("q0") MC_RQ("q1") MC_RQ("q2")                                         \
            "vldrw.u32 q6, [r8, #16]\n"                                                            \
            "vmin.s32 q0, q0, q6\n" "vmin.s32 q1, q1, q6\n" "vmin.s32 q2, q2, q6\n"            \
            "vstrb.32 q0, [r4]\n" "add r4, r5\n"                                                  \
            "vstrb.32 q1, [r4]\n" "add r4, r5\n"                                                  \
            "vstrb.32 q2, [r4]\n"                                                                  \
            "4:\n"                                               /* the next group */              \
            "ldr r12, [r8, #80]\n"                                                                 \
            "add r0, r12\n" "add r1, r12\n" "add r2, r12\n"                                     \
            "adds r3, #36\n"                                                                       \
            "adds r11, #48\n"                                                                      \
            "adds r9, #4\n"                                                                        \
            "subs r10, #1\n"                                                                       \
            "bne 5b\n"                                                                             \
            : "+r"(r0)                                                                             \
            :                                                                                      \
            : MC_MVE_ASM_CLOBBERS);                                                                    \
    }

MC_DW_ROW(dw_row_s1, 1)
MC_DW_ROW(dw_row_s2, 2)

/* The last group when it has fewer than four channels (channels % 4): the same in C, under a
 * predicate, one pixel at a time; `g` its index. */
static void row_part(const dw_job_t *job, int32_t g, int32_t stride, mve_pred16_t keep)
{
    const int32_t at = g * job->gstride;
    const int8_t *in[3] = {job->in0 + at, job->in1 + at, job->in2 + at};
    const int8_t *wg = job->w + g * 36;
    const int32_t *rq = job->rq + g * 12;
    int8_t *y = job->y + g * 4;

    for (int32_t q = 0; q < 4 * job->blocks + job->singles; ++q, y += job->ldy) {
        int32x4_t a = vldrwq_s32(rq);

        for (int32_t t = 0; t < 3; ++t)
            for (int32_t u = 0; u < 3; ++u)
                a = vaddq_s32(a, vmulq_s32(vldrbq_s32(in[t] + (u + q * stride) * 4), vldrbq_s32(wg + (t * 3 + u) * 4)));
        vstrbq_p_s32(y, mc_requant_mve(a, vldrwq_s32(rq + 4), vldrwq_s32(rq + 8), job->off, job->lo, job->hi),
                     keep);
    }
}

/* The layer pixel by pixel from the input itself (no ring), for an output planned over its input
 * at an offset that is not a whole number of pixels when a pass holds fewer than all channels. */
static __attribute__((noinline)) void layer_direct(int8_t *y, const int8_t *x, const int8_t *w, const int32_t *rq,
                         const mc_depthwise_layer_params_t *p)
{
    const int32_t channels = p->channels, in_h = p->in_h, in_w = p->in_w;
    const int32x4_t lo = vdupq_n_s32(p->act_min), hi = vdupq_n_s32(p->act_max);

    for (int32_t n = 0; n < p->batch; ++n, x += in_h * in_w * channels) {
        for (int32_t oh = 0; oh < p->out_h; ++oh) {
            for (int32_t ow = 0; ow < p->out_w; ++ow) {
                for (int32_t c = 0; c < channels; ++c, ++y) {
                    const int32_t *r = rq + (c >> 2) * 12 + (c & 3);
                    const int8_t *wc = w + (c >> 2) * 36 + (c & 3);
                    int32_t acc = r[0];

                    for (int32_t t = 0; t < 3; ++t) {
                        for (int32_t u = 0; u < 3; ++u) {
                            const int32_t ih = oh * p->stride_h + t - p->pad_top, iw = ow * p->stride_w + u - p->pad_left;
                            const int inside = ih >= 0 && ih < in_h && iw >= 0 && iw < in_w;

                            acc += (inside ? x[(ih * in_w + iw) * channels + c] : p->zp_in) * wc[(t * 3 + u) * 4];
                        }
                    }
                    *y = (int8_t)vgetq_lane_s32(mc_requant_mve(vdupq_n_s32(acc), vdupq_n_s32(r[4]), vdupq_n_s32(r[8]),
                                                               p->out_offset, lo, hi), 0);
                }
            }
        }
    }
}

/* One pass: channels [c0, c0 + cb) of batch item xb -> yb, every output row. */
static void layer_pass(int8_t *yb, const int8_t *xb, int8_t *rows, int32_t c0, int32_t cb, dw_job_t *job,
                       const mc_depthwise_layer_params_t *p)
{
    const int32_t c = p->channels, wp = p->padded_w, s = p->stride_w, whole = cb >> 2;
    const int8_t *w = job->w;
    const int32_t *rq = job->rq;
    int32_t held[3] = {INT32_MIN, INT32_MIN, INT32_MIN};   /* the input row in each slot */

    memset(rows, p->zp_in, (size_t)(((cb + 3) >> 2) * 3 * wp * 4));   /* the padding columns */
    job->w = w + (c0 >> 2) * 36;
    job->rq = rq + (c0 >> 2) * 12;
    job->groups = whole;
    for (int32_t oh = 0; oh < p->out_h; ++oh) {
        const int32_t ih0 = oh * p->stride_h - p->pad_top;
        int32_t slot[3];

        for (int32_t t = 0; t < 3; ++t) {
            const int32_t ih = ih0 + t;

            slot[t] = ((ih % 3) + 3) % 3;
            if (held[slot[t]] != ih) {
                copy_row(rows, xb, ih, slot[t], c0, cb, p);
                held[slot[t]] = ih;
            }
        }
        job->in0 = rows + slot[0] * wp * 4;
        job->in1 = rows + slot[1] * wp * 4;
        job->in2 = rows + slot[2] * wp * 4;
        job->y = yb + oh * p->out_w * c + c0;
        if (whole > 0)
            (s == 1 ? dw_row_s1 : dw_row_s2)(job);
        if (cb & 3)
            row_part(job, whole, s, vctp32q((uint32_t)(cb & 3)));
    }
    job->w = w;
    job->rq = rq;
}

void mc_depthwise_layer_mve_s8(int8_t *y, const int8_t *x, const int8_t *w, const int32_t *rq, int8_t *rows,
                               const mc_depthwise_layer_params_t *params)
{
    const mc_depthwise_layer_params_t *p = params;
    const int32_t c = p->channels, block = p->block > 0 && p->block < c ? p->block : c;
    const int32_t in_size = p->in_h * p->in_w * c, out_size = p->out_h * p->out_w * c;
    const int overlap = x < y + p->batch * out_size && (const int8_t *)y < x + p->batch * in_size;
    dw_job_t job;

    /* Passes of fewer than all channels are safe in place when each output byte lies on an input
     * byte of its own channel (or nothing overlaps): a pass reads its own channels only. */
    if (block < c && overlap && (int32_t)(x - (const int8_t *)y) % c != 0) {
        layer_direct(y, x, w, rq, p);
        return;
    }
    job.lo = vdupq_n_s32(p->act_min);
    job.hi = vdupq_n_s32(p->act_max);
    job.off = p->out_offset;
    job.ldy = c;
    job.blocks = p->out_w >> 2;
    job.singles = p->out_w & 3;
    job.w = w;
    job.rq = rq;
    job.gstride = 3 * p->padded_w * 4;
    job.gnext = job.gstride - job.blocks * 16 * p->stride_w;
    for (int32_t b = 0; b < p->batch; ++b)
        for (int32_t c0 = 0; c0 < c; c0 += block)
            layer_pass(y + b * out_size, x + b * in_size, rows, c0, c - c0 < block ? c - c0 : block, &job, p);
}

/* mc_conv_rq_mve_s8 (mc_gemm.h): a whole int8 convolution for Armv8.1-M cores with Helium
 * (MVE), the Cortex-M55. Copied into a project only when the board's core has MVE.
 *
 * Blocks of `cols` output pixels, in row-major order. For each block:
 *
 *   - every pixel's window is copied into its column of `col` (k_p bytes: the window's
 *     kh * kw * in_c, rounded up to 16) with vector loads and stores: filter row t at
 *     t * kw * in_c, a row that lies inside the input as one run, a row that crosses the
 *     padding tap by tap, the padded taps set to the input zero point. The column's last
 *     k_p - kh * kw * in_c bytes are left as they are: the weights are zero there;
 *   - then each panel of four output channels runs over the block's columns, two at a time
 *     (panel_pairs, below), the last odd column by mc_panel_dot4_mve; the sums are
 *     requantized as one vector per column (mc_mve.h's mc_requant_mve).
 *
 * A block's windows are all read before any of its outputs is written, and blocks go in
 * row-major order, so the output may sit over the input by the "window" in-place rule. */
#if !defined(__ARM_FEATURE_MVE)
#error "microcompile: this kernel uses Helium (MVE), which the compiler flags do not enable: compile with the core's -mcpu (e.g. -mcpu=cortex-m55), or export the model for a board whose core lacks Helium"
#endif
#include <arm_mve.h>

#include <stddef.h>

#include "mc_gemm.h"
#include "mc_mve.h"

/* The window of the output pixel whose first tap is (ih0, iw0), into col. */
static void fill_window(int8_t *col, const int8_t *xb, int32_t ih0, int32_t iw0, const mc_conv_params_t *p)
{
    const int32_t c = p->in_c, seg = p->kw * c;
    const int8x16_t zp = vdupq_n_s8((int8_t)p->zp_in);
    const int cols_inside = iw0 >= 0 && iw0 + p->kw <= p->in_w;

    for (int32_t t = 0; t < p->kh; ++t, col += seg) {
        const int32_t ih = ih0 + t * p->dil_h;

        if (ih < 0 || ih >= p->in_h) {
            for (int32_t i = 0; i < seg; i += 16)
                vstrbq_p_s8(col + i, zp, vctp8q((uint32_t)(seg - i)));
        } else if (cols_inside) {
            mc_copy_run_mve(col, xb + (ih * p->in_w + iw0) * c, seg);
        } else {
            for (int32_t u = 0; u < p->kw; ++u) {
                const int32_t iw = iw0 + u;

                if (iw >= 0 && iw < p->in_w) {
                    mc_copy_run_mve(col + u * c, xb + (ih * p->in_w + iw) * c, c);
                } else {
                    for (int32_t i = 0; i < c; i += 16)
                        vstrbq_p_s8(col + u * c + i, zp, vctp8q((uint32_t)(c - i)));
                }
            }
        }
    }
}

/* One panel (four output channels, all real) over `pairs` pairs of columns, requantized: the
 * loop of column pairs, the 4x2 tile and the requantization in assembly. VMLADAV's accumulator
 * must be an even register and there are eight of them only with LR, so the loops count in r3
 * (no low-overhead loop) and the column pointers sit in odd registers. Per 16 k, two column
 * loads, four weight loads (one pointer, post-incremented by the panel's 64 bytes) and eight
 * VMLADAVA.S8: 15 instructions per 128 MACs; the first 16 k start the sums (VMLADAV), so none
 * is zeroed. Per pair the eight sums become two vectors (VMOV of two registers to two lanes)
 * and are requantized as mc_requant_mve does, with the bias, multipliers, negated shifts and the
 * lower clamp held in q4-q7. */
typedef struct {
    int32x4_t bias, mult, nshift, lo, hi;   /* bytes 0, 16, 32, 48, 64 */
    int8_t *y;                              /* 80: the first pair's first output */
    const int8_t *col;                      /* 84: the first pair's first column */
    const int8_t *panel;                    /* 88 */
    int32_t pairs;                          /* 92: at least 1 */
    int32_t groups;                         /* 96: k / 16, at least 1 */
    int32_t k;                              /* 100: bytes from one column to the next */
    int32_t ldy;                            /* 104: bytes from one output pixel to the next */
    int32_t off;                            /* 108: the output offset */
} panel_job_t;

/* The assembly reads the fields at these offsets. */
typedef char panel_job_layout[(offsetof(panel_job_t, y) == 80 && offsetof(panel_job_t, col) == 84 &&
                               offsetof(panel_job_t, panel) == 88 && offsetof(panel_job_t, pairs) == 92 &&
                               offsetof(panel_job_t, groups) == 96 && offsetof(panel_job_t, k) == 100 &&
                               offsetof(panel_job_t, ldy) == 104 && offsetof(panel_job_t, off) == 108) ? 1 : -1];

/* Not a naked function (mc_mve.h's MC_MVE_ASM_CLOBBERS says why). */
__attribute__((noinline)) static void panel_pairs(panel_job_t *job)
{
    register panel_job_t *r0 __asm__("r0") = job;

    __asm__ volatile(
        "mov    r11, r0\n"
        "vldrw.u32 q4, [r11]\n"             /* bias */
        "vldrw.u32 q5, [r11, #16]\n"        /* mult */
        "vldrw.u32 q6, [r11, #32]\n"        /* -rshift */
        "vldrw.u32 q7, [r11, #48]\n"        /* act_min */
        "1:\n"                              /* a pair of columns: x0 in r1, x1 in r9 */
        "ldr    r5, [r11, #88]\n"
        "ldr    r1, [r11, #84]\n"
        "ldr    r3, [r11, #100]\n"
        "add    r9, r1, r3\n"
        "add    r3, r9, r3\n"
        "str    r3, [r11, #84]\n"
        "ldr    r3, [r11, #96]\n"
        "vldrb.8 q0, [r1], #16\n"
        "vldrb.8 q1, [r9], #16\n"
        "vldrb.8 q2, [r5], #64\n"
        "vmladav.s8 r0, q2, q0\n"
        "vmladav.s8 r8, q2, q1\n"
        "vldrb.8 q3, [r5, #-48]\n"
        "vmladav.s8 r2, q3, q0\n"
        "vmladav.s8 r10, q3, q1\n"
        "vldrb.8 q2, [r5, #-32]\n"
        "vmladav.s8 r4, q2, q0\n"
        "vmladav.s8 r12, q2, q1\n"
        "vldrb.8 q3, [r5, #-16]\n"
        "vmladav.s8 r6, q3, q0\n"
        "vmladav.s8 lr, q3, q1\n"
        "subs   r3, #1\n"
        "beq    3f\n"
        "2:\n"                              /* the next 16 k */
        "vldrb.8 q0, [r1], #16\n"
        "vldrb.8 q1, [r9], #16\n"
        "vldrb.8 q2, [r5], #64\n"
        "vmladava.s8 r0, q2, q0\n"
        "vmladava.s8 r8, q2, q1\n"
        "vldrb.8 q3, [r5, #-48]\n"
        "vmladava.s8 r2, q3, q0\n"
        "vmladava.s8 r10, q3, q1\n"
        "vldrb.8 q2, [r5, #-32]\n"
        "vmladava.s8 r4, q2, q0\n"
        "vmladava.s8 r12, q2, q1\n"
        "vldrb.8 q3, [r5, #-16]\n"
        "vmladava.s8 r6, q3, q0\n"
        "vmladava.s8 lr, q3, q1\n"
        "subs   r3, #1\n"
        "bne    2b\n"
        "3:\n"                              /* requantize: column 0 is r0 r2 r4 r6, column 1 r8 r10 r12 lr */
        "vmov   q0[2], q0[0], r0, r4\n"     /* lane 0 = r0, lane 2 = r4 (the first register goes */
        "vmov   q0[3], q0[1], r2, r6\n"     /* to the lower lane) */
        "vmov   q1[2], q1[0], r8, r12\n"
        "vmov   q1[3], q1[1], r10, lr\n"
        "vadd.i32 q0, q0, q4\n"
        "vadd.i32 q1, q1, q4\n"
        "vqrdmulh.s32 q0, q0, q5\n"
        "vqrdmulh.s32 q1, q1, q5\n"
        "vshr.s32 q2, q0, #31\n"
        "vshr.s32 q3, q1, #31\n"
        "vqadd.s32 q0, q0, q2\n"
        "vqadd.s32 q1, q1, q3\n"
        "vrshl.s32 q0, q0, q6\n"
        "vrshl.s32 q1, q1, q6\n"
        "ldr    r3, [r11, #108]\n"
        "vadd.i32 q0, q0, r3\n"
        "vadd.i32 q1, q1, r3\n"
        "vldrw.u32 q2, [r11, #64]\n"
        "vmax.s32 q0, q0, q7\n"
        "vmax.s32 q1, q1, q7\n"
        "vmin.s32 q0, q0, q2\n"
        "vmin.s32 q1, q1, q2\n"
        "ldr    r1, [r11, #80]\n"
        "ldr    r3, [r11, #104]\n"
        "vstrb.32 q0, [r1]\n"
        "add    r1, r3\n"
        "vstrb.32 q1, [r1]\n"
        "add    r1, r3\n"
        "str    r1, [r11, #80]\n"
        "ldr    r3, [r11, #92]\n"
        "subs   r3, #1\n"
        "str    r3, [r11, #92]\n"
        "bne    1b\n"
        : "+r"(r0)
        :
        : MC_MVE_ASM_CLOBBERS);
}

/* Four output channels (one panel, `rows` of them real) of n columns of depth k (a multiple of
 * 16), requantized and stored at y, y + ldy, ...: pairs of columns by panel_pairs, an odd last
 * column (or a partial panel's columns) by mc_panel_dot4_mve. */
static void panel_columns(int8_t *y, int32_t ldy, const int8_t *panel, const int8_t *col, int32_t n, int32_t k,
                          const int32_t *bias, const int32_t *mult, const int32_t *rshift, int32_t rows,
                          const mc_conv_params_t *p)
{
    const mve_pred16_t keep = vctp32q((uint32_t)rows);
    panel_job_t job;
    int32_t sums[4];
    int32_t j = 0;

    job.bias = vldrwq_z_s32(bias, keep);
    job.mult = vldrwq_z_s32(mult, keep);
    job.nshift = vnegq_s32(vldrwq_z_s32(rshift, keep));
    job.lo = vdupq_n_s32(p->act_min);
    job.hi = vdupq_n_s32(p->act_max);
    job.off = p->out_offset;
    if (rows == 4 && n >= 2) {
        job.y = y;
        job.col = col;
        job.panel = panel;
        job.pairs = n >> 1;
        job.groups = k >> 4;
        job.k = k;
        job.ldy = ldy;
        panel_pairs(&job);
        j = n & ~1;
    }
    for (; j < n; ++j) {
        mc_panel_dot4_mve(sums, panel, col + j * k, k >> 4, 0);
        vstrbq_p_s32(y + j * ldy, mc_requant_mve(vaddq_s32(vldrwq_s32(sums), job.bias), job.mult, job.nshift,
                                                 job.off, job.lo, job.hi), keep);
    }
}

void mc_conv_rq_mve_s8(int8_t *y, const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *mult,
                       const int32_t *rshift, int8_t *col, const mc_conv_params_t *params)
{
    const mc_conv_params_t *p = params;
    const int32_t k = p->k_p, plane = p->out_h * p->out_w, out_c = p->out_c;

    for (int32_t b = 0; b < p->batch; ++b) {
        const int8_t *xb = x + b * p->in_h * p->in_w * p->in_c;

        for (int32_t q0 = 0; q0 < plane; q0 += p->cols) {
            const int32_t n = plane - q0 < p->cols ? plane - q0 : p->cols;

            for (int32_t j = 0; j < n; ++j) {
                const int32_t oh = (q0 + j) / p->out_w, ow = (q0 + j) % p->out_w;

                fill_window(col + j * k, xb, oh * p->stride_h - p->pad_top, ow * p->stride_w - p->pad_left, p);
            }
            for (int32_t i = 0; i < out_c; i += 4)
                panel_columns(y + i, out_c, w + i * k, col, n, k, bias + i, mult + i, rshift + i,
                              out_c - i < 4 ? out_c - i : 4, p);
            y += n * out_c;
        }
    }
}

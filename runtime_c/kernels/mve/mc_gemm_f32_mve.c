/* float32 GEMM micro-kernels (mc_gemm_f32.h) for Armv8.1-M cores with Helium's floating-point
 * vectors (MVE-F): the Cortex-M55. Copied into a project only when the board's core has MVE.
 *
 * The panels of four weight rows (mc_gemm_f32.h's layout: per k the panel's four weights are
 * consecutive) are exactly one float32x4 vector per k. A tile of one panel by four columns
 * keeps its 16 sums in four vectors, one per column; per k it loads the panel's vector once
 * and issues one VFMA (vector by scalar: VFMA.F32 Qda, Qn, Rm) per column, the column's input
 * in a core register. With k unrolled by four the loop holds four weight vectors and four sum
 * vectors (all eight q registers) and loads each column's four inputs as core registers:
 * 4 vector loads, 4 LDM and 16 VFMA per 64 MACs.
 *
 * Each lane is one output channel, and its sum is the bias followed by the k products in
 * increasing order, each fused with one rounding: the steps of mc_gemm_p4_fpu_f32 and of the
 * Python semantics (tir/intrinsics_gemm_f32.py). One difference: Helium's float instructions
 * run with the Arm "standard FPSCR value" (subnormal inputs and results flushed to zero,
 * default NaN), where the scalar FPU keeps FPSCR's (subnormals kept). So results can differ
 * from the FPU kernel's by less than the smallest normal float (1.2e-38), and NaN payloads
 * are not kept; ir/compare's float tolerance covers the first. The clamp is C's `v < lo ? lo : v` per
 * lane (VCMP and VPSEL), not VMAXNM, which orders -0.0 below +0.0. A last partial panel
 * (m not a multiple of 4) computes its zero padding rows and stores under a predicate (VCTP),
 * reading its bias under the same predicate: nothing past the ends is read or written.
 *
 * mc_copy_mve_f32: the im2col copy of a run of channels, 16 bytes per vector. */
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
/* (Helium cores without its float vectors, -mcpu=cortex-m55+nomve.fp, compile this file to
 * nothing: their core TOML says mve_float = false, so no model calls these kernels.) */
#include <arm_mve.h>

#include "mc_gemm_f32.h"
#include "mc_mve.h"

#define MC_INLINE static inline __attribute__((always_inline))


/* Four columns b0, b0 + ldb, ... of the panel w: sums z + panel . column, clamped, stored
 * (under `rows` where the panel is partial). */
MC_INLINE void tile4x4(float *y, int32_t ldy, const float *w, const float *b0, int32_t ldb, int32_t k,
                       float32x4_t z, mve_pred16_t rows, int32_t whole, float lo, float hi, int32_t act)
{
    const float *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
    float32x4_t c0 = z, c1 = z, c2 = z, c3 = z;
    int32_t p = k >> 2;

    if (p > 0) {
        /* 4 k per pass: the panel's four vectors, then per column one LDM of its four inputs
         * and four VFMA, k in increasing order in every lane (25 instructions per 64 MACs with
         * the loop's LE). Assembly: GCC spills the sixteen scalars of the C form. */
        float32x4_t w0, w1, w2, w3;

        __asm__ volatile(
            "dls lr, %[p]\n\t"
            "1:\n\t"
            "vldrw.32 %q[w0], [%[w]], #16\n\t"
            "vldrw.32 %q[w1], [%[w]], #16\n\t"
            "vldrw.32 %q[w2], [%[w]], #16\n\t"
            "vldrw.32 %q[w3], [%[w]], #16\n\t"
            "ldmia %[b0]!, {r8, r9, r10, r11}\n\t"
            "vfma.f32 %q[c0], %q[w0], r8\n\t"
            "vfma.f32 %q[c0], %q[w1], r9\n\t"
            "vfma.f32 %q[c0], %q[w2], r10\n\t"
            "vfma.f32 %q[c0], %q[w3], r11\n\t"
            "ldmia %[b1]!, {r8, r9, r10, r11}\n\t"
            "vfma.f32 %q[c1], %q[w0], r8\n\t"
            "vfma.f32 %q[c1], %q[w1], r9\n\t"
            "vfma.f32 %q[c1], %q[w2], r10\n\t"
            "vfma.f32 %q[c1], %q[w3], r11\n\t"
            "ldmia %[b2]!, {r8, r9, r10, r11}\n\t"
            "vfma.f32 %q[c2], %q[w0], r8\n\t"
            "vfma.f32 %q[c2], %q[w1], r9\n\t"
            "vfma.f32 %q[c2], %q[w2], r10\n\t"
            "vfma.f32 %q[c2], %q[w3], r11\n\t"
            "ldmia %[b3]!, {r8, r9, r10, r11}\n\t"
            "vfma.f32 %q[c3], %q[w0], r8\n\t"
            "vfma.f32 %q[c3], %q[w1], r9\n\t"
            "vfma.f32 %q[c3], %q[w2], r10\n\t"
            "vfma.f32 %q[c3], %q[w3], r11\n\t"
            "le lr, 1b\n\t"
            : [c0] "+w"(c0), [c1] "+w"(c1), [c2] "+w"(c2), [c3] "+w"(c3), [w0] "=&w"(w0), [w1] "=&w"(w1),
              [w2] "=&w"(w2), [w3] "=&w"(w3), [w] "+r"(w), [b0] "+r"(b0), [b1] "+r"(b1), [b2] "+r"(b2),
              [b3] "+r"(b3)
            : [p] "r"(p)
            : "r8", "r9", "r10", "r11", "lr", "memory");
    }
    for (p = k & 3; p > 0; --p) {
        const float32x4_t w0 = vldrwq_f32(w);

        c0 = vfmaq_n_f32(c0, w0, *b0++);
        c1 = vfmaq_n_f32(c1, w0, *b1++);
        c2 = vfmaq_n_f32(c2, w0, *b2++);
        c3 = vfmaq_n_f32(c3, w0, *b3++);
        w += 4;
    }
    c0 = mc_clamp_f32_mve(c0, lo, hi, act);
    c1 = mc_clamp_f32_mve(c1, lo, hi, act);
    c2 = mc_clamp_f32_mve(c2, lo, hi, act);
    c3 = mc_clamp_f32_mve(c3, lo, hi, act);
    if (whole) {
        vstrwq_f32(y, c0);
        vstrwq_f32(y + ldy, c1);
        vstrwq_f32(y + 2 * ldy, c2);
        vstrwq_f32(y + 3 * ldy, c3);
    } else {
        vstrwq_p_f32(y, c0, rows);
        vstrwq_p_f32(y + ldy, c1, rows);
        vstrwq_p_f32(y + 2 * ldy, c2, rows);
        vstrwq_p_f32(y + 3 * ldy, c3, rows);
    }
}

/* One column b0 of the panel w (the columns left over by four, and a fully connected layer's
 * single input row): k unrolled by four, the four sums one vector. */
MC_INLINE void tile4x1(float *y, const float *w, const float *b0, int32_t k, float32x4_t z, mve_pred16_t rows,
                       float lo, float hi, int32_t act)
{
    float32x4_t c0 = z;
    int32_t p = k >> 2;

    if (p > 0) {   /* per 4 k: four vector loads, one LDM, four VFMA, LE (10 per 16 MACs) */
        float32x4_t w0;

        __asm__ volatile(
            "dls lr, %[p]\n\t"
            "1:\n\t"
            "ldmia %[b0]!, {r8, r9, r10, r11}\n\t"
            "vldrw.32 %q[w0], [%[w]], #16\n\t"
            "vfma.f32 %q[c0], %q[w0], r8\n\t"
            "vldrw.32 %q[w0], [%[w]], #16\n\t"
            "vfma.f32 %q[c0], %q[w0], r9\n\t"
            "vldrw.32 %q[w0], [%[w]], #16\n\t"
            "vfma.f32 %q[c0], %q[w0], r10\n\t"
            "vldrw.32 %q[w0], [%[w]], #16\n\t"
            "vfma.f32 %q[c0], %q[w0], r11\n\t"
            "le lr, 1b\n\t"
            : [c0] "+w"(c0), [w0] "=&w"(w0), [w] "+r"(w), [b0] "+r"(b0)
            : [p] "r"(p)
            : "r8", "r9", "r10", "r11", "lr", "memory");
    }
    for (p = k & 3; p > 0; --p) {
        c0 = vfmaq_n_f32(c0, vldrwq_f32(w), *b0++);
        w += 4;
    }
    vstrwq_p_f32(y, mc_clamp_f32_mve(c0, lo, hi, act), rows);
}

MC_INLINE void gemm_mve_f32(float *y, const float *a, const float *b, const float *bias, float lo, float hi,
                            const mc_gemm_f32_params_t *prm, int32_t act)
{
    const int32_t m = prm->m, n = prm->n, k = prm->k, ldb = prm->ldb, ldy = prm->ldy;

    for (int32_t i = 0; i < m; i += 4) {
        const int32_t whole = m - i >= 4;
        const mve_pred16_t rows = vctp32q((uint32_t)(m - i));
        const float32x4_t z = vldrwq_z_f32(bias + i, rows);   /* zero in padding rows */
        const float *panel = a + i * k;
        int32_t j = 0;

        for (; j + 4 <= n; j += 4)
            tile4x4(y + j * ldy + i, ldy, panel, b + j * ldb, ldb, k, z, rows, whole, lo, hi, act);
        for (; j < n; ++j)
            tile4x1(y + j * ldy + i, panel, b + j * ldb, k, z, rows, lo, hi, act);
    }
}

void mc_gemm_p4_mve_f32(float *y, const float *a, const float *b, const float *bias, float act_min, float act_max,
                        const mc_gemm_f32_params_t *params)
{
    gemm_mve_f32(y, a, b, bias, act_min, act_max, params, 0);
}

void mc_gemm_p4_min_mve_f32(float *y, const float *a, const float *b, const float *bias, float act_min,
                            float act_max, const mc_gemm_f32_params_t *params)
{
    gemm_mve_f32(y, a, b, bias, act_min, act_max, params, MC_MVE_F32_MIN);
}

void mc_gemm_p4_minmax_mve_f32(float *y, const float *a, const float *b, const float *bias, float act_min,
                               float act_max, const mc_gemm_f32_params_t *params)
{
    gemm_mve_f32(y, a, b, bias, act_min, act_max, params, MC_MVE_F32_MIN | MC_MVE_F32_MAX);
}

void mc_copy_mve_f32(float *dst, const float *src, int32_t n)
{
    mc_copy_run_mve((int8_t *)dst, (const int8_t *)src, 4 * n);
}

#endif /* __ARM_FEATURE_MVE & 2 */

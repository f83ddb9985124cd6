/* GEMM micro-kernels (mc_gemm.h) for Armv8.1-M cores with Helium (MVE): the Cortex-M55.
 * Copied into a project only when the board's core has MVE (boards/cores/<core>.toml).
 *
 * int8 operands as they are, no widened copy: one 128-bit load holds 16 k of a row or a column,
 * and VMLADAVA.S8 multiplies the 16 pairs and adds all of them to a 32-bit scalar accumulator.
 * A tile of four rows by two columns loads 6 vectors for 8 VMLADAVA: 14 instructions per 128
 * MACs in the steady state. The last k < 16 are loaded under a tail predicate (VCTP), which
 * reads nothing past the end and gives zeros in the unused lanes.
 *
 * mc_gemm_nt_mve_s8 accumulates into an int32 c; mc_gemm_rq_mve_s8 starts from the bias and
 * stores int8 (below). Both share the tile loops, which are always inlined so that the sums
 * stay in registers.
 *
 * Written with the ACLE intrinsics of arm_mve.h; no alignment is required. */
#if !defined(__ARM_FEATURE_MVE)
#error "microcompile: this kernel uses Helium (MVE), which the compiler flags do not enable: compile with the core's -mcpu (e.g. -mcpu=cortex-m55), or export the model for a board whose core lacks Helium"
#endif
#include <arm_mve.h>

#include "mc_gemm.h"
#include "mc_requant_dsp.h"
#include "mc_mve.h"

#define MC_INLINE static inline __attribute__((always_inline))

/* s[0..3] += rows r0, r0 + lda, ... (four) . column b0 and s[4..7] += the same rows . column b1. */
MC_INLINE void tile4x2_s8(int32_t s[8], const int8_t *r0, int32_t lda, const int8_t *b0, const int8_t *b1, int32_t k)
{
    const int8_t *r1 = r0 + lda, *r2 = r1 + lda, *r3 = r2 + lda;
    const int32_t k16 = k & ~15;
    int32_t s00 = s[0], s01 = s[1], s02 = s[2], s03 = s[3];
    int32_t s10 = s[4], s11 = s[5], s12 = s[6], s13 = s[7];
    int32_t p = 0;

    for (; p < k16; p += 16) {   /* whole vectors: no predicate to compute */
        const int8x16_t x0 = vldrbq_s8(b0 + p), x1 = vldrbq_s8(b1 + p);
        int8x16_t w = vldrbq_s8(r0 + p);

        s00 = vmladavaq_s8(s00, w, x0);
        s10 = vmladavaq_s8(s10, w, x1);
        w = vldrbq_s8(r1 + p);
        s01 = vmladavaq_s8(s01, w, x0);
        s11 = vmladavaq_s8(s11, w, x1);
        w = vldrbq_s8(r2 + p);
        s02 = vmladavaq_s8(s02, w, x0);
        s12 = vmladavaq_s8(s12, w, x1);
        w = vldrbq_s8(r3 + p);
        s03 = vmladavaq_s8(s03, w, x0);
        s13 = vmladavaq_s8(s13, w, x1);
    }
    if (p < k) {                 /* the last k % 16, predicated */
        const mve_pred16_t tail = vctp8q((uint32_t)(k - p));
        const int8x16_t x0 = vldrbq_z_s8(b0 + p, tail), x1 = vldrbq_z_s8(b1 + p, tail);
        int8x16_t w = vldrbq_z_s8(r0 + p, tail);

        s00 = vmladavaq_s8(s00, w, x0);
        s10 = vmladavaq_s8(s10, w, x1);
        w = vldrbq_z_s8(r1 + p, tail);
        s01 = vmladavaq_s8(s01, w, x0);
        s11 = vmladavaq_s8(s11, w, x1);
        w = vldrbq_z_s8(r2 + p, tail);
        s02 = vmladavaq_s8(s02, w, x0);
        s12 = vmladavaq_s8(s12, w, x1);
        w = vldrbq_z_s8(r3 + p, tail);
        s03 = vmladavaq_s8(s03, w, x0);
        s13 = vmladavaq_s8(s13, w, x1);
    }
    s[0] = s00;
    s[1] = s01;
    s[2] = s02;
    s[3] = s03;
    s[4] = s10;
    s[5] = s11;
    s[6] = s12;
    s[7] = s13;
}

/* s[0..3] += rows r0, r0 + lda, ... (four) . column b0: one load of the column feeds four rows.
 * Whole vectors first (no predicate: GCC reloads and re-tests a predicate around every load),
 * then the last k % 16 under a tail predicate. */
MC_INLINE void tile4x1_s8(int32_t s[4], const int8_t *r0, int32_t lda, const int8_t *b0, int32_t k)
{
    const int8_t *r1 = r0 + lda, *r2 = r1 + lda, *r3 = r2 + lda;
    int32_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];

    for (int32_t c = k >> 4; c > 0; --c) {
        const int8x16_t x = vldrbq_s8(b0);

        s0 = vmladavaq_s8(s0, vldrbq_s8(r0), x);
        s1 = vmladavaq_s8(s1, vldrbq_s8(r1), x);
        s2 = vmladavaq_s8(s2, vldrbq_s8(r2), x);
        s3 = vmladavaq_s8(s3, vldrbq_s8(r3), x);
        b0 += 16;
        r0 += 16;
        r1 += 16;
        r2 += 16;
        r3 += 16;
    }
    if (k & 15) {
        const mve_pred16_t tail = vctp8q((uint32_t)(k & 15));
        const int8x16_t x = vldrbq_z_s8(b0, tail);

        s0 = vmladavaq_s8(s0, vldrbq_z_s8(r0, tail), x);
        s1 = vmladavaq_s8(s1, vldrbq_z_s8(r1, tail), x);
        s2 = vmladavaq_s8(s2, vldrbq_z_s8(r2, tail), x);
        s3 = vmladavaq_s8(s3, vldrbq_z_s8(r3, tail), x);
    }
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
}

/* s + row r0 . column b0. */
MC_INLINE int32_t dot_s8(int32_t s, const int8_t *r0, const int8_t *b0, int32_t k)
{
    for (int32_t p = 0; p < k; p += 16) {
        const mve_pred16_t tail = vctp8q((uint32_t)(k - p));

        s = vmladavaq_s8(s, vldrbq_z_s8(r0 + p, tail), vldrbq_z_s8(b0 + p, tail));
    }
    return s;
}

/* rows x 1 column: rows of a from a0 on, stride lda; column b0; accumulates into c0[0..rows). */
static inline void gemv_mve_s8(int32_t *c0, const int8_t *a0, const int8_t *b0, int32_t rows, int32_t k,
                               int32_t lda)
{
    int32_t i = 0;

    for (; i + 4 <= rows; i += 4) {
        int32_t s[4] = {c0[i], c0[i + 1], c0[i + 2], c0[i + 3]};

        tile4x1_s8(s, a0 + i * lda, lda, b0, k);
        c0[i] = s[0];
        c0[i + 1] = s[1];
        c0[i + 2] = s[2];
        c0[i + 3] = s[3];
    }
    for (; i < rows; ++i)
        c0[i] = dot_s8(c0[i], a0 + i * lda, b0, k);
}

void mc_gemm_nt_mve_s8(int32_t *c, const int8_t *a, const int8_t *b, const mc_gemm_params_t *params)
{
    const int32_t m = params->m, n = params->n, k = params->k;
    const int32_t lda = params->lda, ldb = params->ldb, ldc = params->ldc;
    int32_t j = 0;

    for (; j + 2 <= n; j += 2) {
        const int8_t *b0 = b + j * ldb, *b1 = b0 + ldb;
        int32_t *c0 = c + j * ldc, *c1 = c0 + ldc;
        int32_t i = 0;

        for (; i + 4 <= m; i += 4) {
            int32_t s[8] = {c0[i], c0[i + 1], c0[i + 2], c0[i + 3], c1[i], c1[i + 1], c1[i + 2], c1[i + 3]};

            tile4x2_s8(s, a + i * lda, lda, b0, b1, k);
            c0[i] = s[0];
            c0[i + 1] = s[1];
            c0[i + 2] = s[2];
            c0[i + 3] = s[3];
            c1[i] = s[4];
            c1[i + 1] = s[5];
            c1[i + 2] = s[6];
            c1[i + 3] = s[7];
        }
        if (i < m) {                     /* the last m % 4 rows, one column at a time */
            gemv_mve_s8(c0 + i, a + i * lda, b0, m - i, k, lda);
            gemv_mve_s8(c1 + i, a + i * lda, b1, m - i, k, lda);
        }
    }
    if (j < n)                           /* an odd last column (and fully connected: n = 1) */
        gemv_mve_s8(c + j * ldc, a, b + j * ldb, m, k, lda);
}

/* The requantizing variant (mc_gemm.h's mc_gemm_rq_*): the sums requantized and stored as int8
 * as soon as they are done, so no int32 tile exists in RAM. The loops run four rows (output
 * channels) at a time, and inside them one column (pixel) at a time:
 *
 *   - the four rows' bias, multipliers and shifts are loaded as vectors once per four rows;
 *   - a column's four sums need four accumulators, four row pointers and one column pointer
 *     (the 4x2 tile needed 15 registers and spilled in its inner loop): per 16 k, five loads
 *     and four VMLADAVA.S8, 9 instructions per 64 MACs;
 *   - the four sums become one vector (two VMOVs), requantized together (mc_mve.h's
 *     mc_requant_mve); VSTRB.32 stores the 4 low bytes.
 *
 * The sums start at 0 and the bias is added as a vector: the same int32 sum (wrapping addition
 * is associative). The m % 4 last rows take the scalar form of the DSP kernels
 * (mc_requant_dsp.h: SMMULR, SSAT; Helium implies the DSP extension in Armv8.1-M). */
typedef struct {
    int32_t off, act_min, act_max;
} rq_out_t;

/* Four rows i..i+3 (a0, stride lda) times each of the n columns (b, stride ldb), requantized
 * with the rows' vectors and stored at y + j * ldy (four bytes per column). */
static void rq_rows4_mve_s8(int8_t *y, const int8_t *a0, const int8_t *b, int32_t n, int32_t k, int32_t lda,
                            int32_t ldb, int32_t ldy, int32x4_t bias, int32x4_t mult, int32x4_t nshift,
                            const rq_out_t *o)
{
    const int32x4_t lo = vdupq_n_s32(o->act_min), hi = vdupq_n_s32(o->act_max);

    for (int32_t j = 0; j < n; ++j) {
        int32_t s[4] = {0, 0, 0, 0};
        int32x4_t v;

        tile4x1_s8(s, a0, lda, b + j * ldb, k);
        v = vsetq_lane_s32(s[3], vsetq_lane_s32(s[2], vsetq_lane_s32(s[1], vdupq_n_s32(s[0]), 1), 2), 3);
        vstrbq_s32(y + j * ldy, mc_requant_mve(vaddq_s32(v, bias), mult, nshift, o->off, lo, hi));
    }
}

void mc_gemm_rq_mve_s8(MC_GEMM_RQ_ARGS(int8_t))
{
    const int32_t m = params->m, n = params->n, k = params->k;
    const int32_t lda = params->lda, ldb = params->ldb, ldy = params->ldy;
    const rq_out_t o = {params->out_offset, params->act_min, params->act_max};
    int32_t i = 0;

    for (; i + 4 <= m; i += 4)
        rq_rows4_mve_s8(y + i, a + i * lda, b, n, k, lda, ldb, ldy, vldrwq_s32(bias + i), vldrwq_s32(mult + i),
                        vnegq_s32(vldrwq_s32(rshift + i)), &o);
    for (; i < m; ++i) {                 /* the last m % 4 rows, one sum at a time */
        for (int32_t j = 0; j < n; ++j) {
            const int32_t v = mc_requant_ssat8(dot_s8(bias[i], a + i * lda, b + j * ldb, k), mult[i], rshift[i],
                                               o.off);

            y[j * ldy + i] = (int8_t)(v < o.act_min ? o.act_min : v > o.act_max ? o.act_max : v);
        }
    }
}

/* mc_gemm_p4_rq_mve_s8: the requantizing GEMM on weights packed in panels of four rows
 * (mc_gemm.h's panel layout with groups of 16 k: row 0's k 0..15, row 1's, row 2's, row 3's,
 * then k 16..31 of each; zeros pad k to a multiple of 16 and m to a multiple of 4). One pointer
 * walks a panel with immediate offsets; two columns share each weight load: per 16 k, two
 * column loads, four weight loads and eight VMLADAVA.S8. The padded k need no predicate on
 * the weights (they are zeros); a column's last k % 16 are loaded under a tail predicate. Rows
 * past m are computed on the zero padding and not stored. An odd last column takes
 * mc_mve.h's mc_panel_dot4_mve. */

/* The sums s0r += row r . v0 and s1r += row r . v1 of one group of 16 k at w. A macro, not a
 * function: GCC keeps eight scalar sums in registers only as plain locals (an array of them,
 * even inlined, stays in memory: 259,187 instructions for kws's first layer against 176,719). */
#define MC_STEP4X2(V0, V1)                                                                         \
    do {                                                                                           \
        const int8x16_t v0_ = (V0), v1_ = (V1);                                                    \
        int8x16_t wv = vldrbq_s8(w);                                                               \
                                                                                                   \
        s00 = vmladavaq_s8(s00, wv, v0_);                                                          \
        s10 = vmladavaq_s8(s10, wv, v1_);                                                          \
        wv = vldrbq_s8(w + 16);                                                                    \
        s01 = vmladavaq_s8(s01, wv, v0_);                                                          \
        s11 = vmladavaq_s8(s11, wv, v1_);                                                          \
        wv = vldrbq_s8(w + 32);                                                                    \
        s02 = vmladavaq_s8(s02, wv, v0_);                                                          \
        s12 = vmladavaq_s8(s12, wv, v1_);                                                          \
        wv = vldrbq_s8(w + 48);                                                                    \
        s03 = vmladavaq_s8(s03, wv, v0_);                                                          \
        s13 = vmladavaq_s8(s13, wv, v1_);                                                          \
    } while (0)

/* Four sums as one vector plus the bias, requantized and stored at y under keep. */
MC_INLINE void store4(int8_t *y, int32_t s0, int32_t s1, int32_t s2, int32_t s3, int32x4_t bias, int32x4_t mult,
                      int32x4_t nshift, int32_t off, int32x4_t lo, int32x4_t hi, mve_pred16_t keep)
{
    const int32x4_t v = vsetq_lane_s32(s3, vsetq_lane_s32(s2, vsetq_lane_s32(s1, vdupq_n_s32(s0), 1), 2), 3);

    vstrbq_p_s32(y, mc_requant_mve(vaddq_s32(v, bias), mult, nshift, off, lo, hi), keep);
}

void mc_gemm_p4_rq_mve_s8(MC_GEMM_RQ_ARGS(int8_t))
{
    const int32_t m = params->m, n = params->n, k = params->k;
    const int32_t ldb = params->ldb, ldy = params->ldy, off = params->out_offset;
    const int32_t kp = (k + 15) & ~15, whole = k >> 4, rest = k & 15;
    const int32x4_t lo = vdupq_n_s32(params->act_min), hi = vdupq_n_s32(params->act_max);
    const mve_pred16_t tail = vctp8q((uint32_t)rest);

    for (int32_t i = 0; i < m; i += 4) {
        const int8_t *panel = a + i * kp;
        const mve_pred16_t keep = vctp32q((uint32_t)(m - i));
        const int32x4_t bias4 = vldrwq_z_s32(bias + i, keep), mult4 = vldrwq_z_s32(mult + i, keep);
        const int32x4_t nshift4 = vnegq_s32(vldrwq_z_s32(rshift + i, keep));
        int32_t j = 0;

        for (; j + 2 <= n; j += 2) {
            const int8_t *w = panel, *x0 = b + j * ldb, *x1 = x0 + ldb;
            int32_t s00 = 0, s01 = 0, s02 = 0, s03 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0;

            for (int32_t c = whole; c > 0; --c, w += 64, x0 += 16, x1 += 16)
                MC_STEP4X2(vldrbq_s8(x0), vldrbq_s8(x1));
            if (rest)
                MC_STEP4X2(vldrbq_z_s8(x0, tail), vldrbq_z_s8(x1, tail));
            store4(y + j * ldy + i, s00, s01, s02, s03, bias4, mult4, nshift4, off, lo, hi, keep);
            store4(y + (j + 1) * ldy + i, s10, s11, s12, s13, bias4, mult4, nshift4, off, lo, hi, keep);
        }
        if (j < n) {                     /* an odd last column */
            int32_t s[4];

            mc_panel_dot4_mve(s, panel, b + j * ldb, whole, rest);
            store4(y + j * ldy + i, s[0], s[1], s[2], s[3], bias4, mult4, nshift4, off, lo, hi, keep);
        }
    }
}
#undef MC_STEP4X2

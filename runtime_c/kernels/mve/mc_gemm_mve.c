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

/* s[0..3] += rows r0, r0 + lda, ... (four) . column b0: one load of the column feeds four rows. */
MC_INLINE void tile4x1_s8(int32_t s[4], const int8_t *r0, int32_t lda, const int8_t *b0, int32_t k)
{
    const int8_t *r1 = r0 + lda, *r2 = r1 + lda, *r3 = r2 + lda;
    int32_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];

    for (int32_t p = 0; p < k; p += 16) {
        const mve_pred16_t tail = vctp8q((uint32_t)(k - p));
        const int8x16_t x = vldrbq_z_s8(b0 + p, tail);

        s0 = vmladavaq_s8(s0, vldrbq_z_s8(r0 + p, tail), x);
        s1 = vmladavaq_s8(s1, vldrbq_z_s8(r1 + p, tail), x);
        s2 = vmladavaq_s8(s2, vldrbq_z_s8(r2 + p, tail), x);
        s3 = vmladavaq_s8(s3, vldrbq_z_s8(r3 + p, tail), x);
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

/* The requantizing variant (mc_gemm.h's mc_gemm_rq_*): the same tiles, the sums started from the
 * bias, requantized and stored as int8 as soon as their tile is done, so no int32 tile exists in
 * RAM. Four sums of a column are requantized as one vector:
 *
 *   VQRDMULH     (2*acc*mult + 2^31) >> 32, mc_requant.h's high multiply (no saturation: mult >= 0,
 *                |acc| < 2^30)
 *   VQADD, VSHR  s - (s < 0), then VRSHL by -rshift: (s - (s < 0) + 2^(rshift-1)) >> rshift, the
 *                rounding right shift half away from zero of mc_mul_by_qm_pos_rshift
 *   VADD, VMAX, VMIN  the output offset and the activation's clamp; VSTRB.32 stores the 4 low bytes.
 *
 * The m % 4 last rows take the scalar form of the DSP kernels (mc_requant_dsp.h: SMMULR, SSAT;
 * Helium implies the DSP extension in Armv8.1-M). */
typedef struct {
    int32_t off, act_min, act_max;
} rq_out_t;

/* Four rows i..i+3 of one column (s[0..3]), requantized, clamped and stored at yj + i. */
MC_INLINE void rq_store4(int8_t *yj, int32_t i, const int32_t s[4], const int32_t *mult, const int32_t *rshift,
                         const rq_out_t *o)
{
    int32x4_t v = vsetq_lane_s32(s[3], vsetq_lane_s32(s[2], vsetq_lane_s32(s[1], vdupq_n_s32(s[0]), 1), 2), 3);

    v = vqrdmulhq_s32(v, vldrwq_s32(mult + i));
    v = vqaddq_s32(v, vshrq_n_s32(v, 31));
    v = vrshlq_s32(v, vnegq_s32(vldrwq_s32(rshift + i)));
    v = vaddq_n_s32(v, o->off);
    v = vminq_s32(vmaxq_s32(v, vdupq_n_s32(o->act_min)), vdupq_n_s32(o->act_max));
    vstrbq_s32(yj + i, v);
}

/* One column b0 of the rows from i on: y0[i..m) (m % 4 rows of a tile, or a whole odd column),
 * four rows per load of the column where there are four. */
static void rq_column_mve_s8(int8_t *y0, const int8_t *a, const int8_t *b0, const int32_t *bias, const int32_t *mult,
                             const int32_t *rshift, int32_t i, int32_t m, int32_t k, int32_t lda, const rq_out_t *o)
{
    for (; i + 4 <= m; i += 4) {
        int32_t s[4] = {bias[i], bias[i + 1], bias[i + 2], bias[i + 3]};

        tile4x1_s8(s, a + i * lda, lda, b0, k);
        rq_store4(y0, i, s, mult, rshift, o);
    }
    for (; i < m; ++i) {
        const int32_t v = mc_requant_ssat8(dot_s8(bias[i], a + i * lda, b0, k), mult[i], rshift[i], o->off);

        y0[i] = (int8_t)(v < o->act_min ? o->act_min : v > o->act_max ? o->act_max : v);
    }
}

void mc_gemm_rq_mve_s8(MC_GEMM_RQ_ARGS(int8_t))
{
    const int32_t m = params->m, n = params->n, k = params->k;
    const int32_t lda = params->lda, ldb = params->ldb, ldy = params->ldy;
    const rq_out_t o = {params->out_offset, params->act_min, params->act_max};
    int32_t j = 0;

    for (; j + 2 <= n; j += 2) {
        const int8_t *b0 = b + j * ldb, *b1 = b0 + ldb;
        int8_t *y0 = y + j * ldy, *y1 = y0 + ldy;
        int32_t i = 0;

        for (; i + 4 <= m; i += 4) {
            int32_t s[8] = {bias[i], bias[i + 1], bias[i + 2], bias[i + 3], bias[i], bias[i + 1], bias[i + 2],
                            bias[i + 3]};

            tile4x2_s8(s, a + i * lda, lda, b0, b1, k);
            rq_store4(y0, i, s, mult, rshift, &o);
            rq_store4(y1, i, s + 4, mult, rshift, &o);
        }
        rq_column_mve_s8(y0, a, b0, bias, mult, rshift, i, m, k, lda, &o);   /* the last m % 4 rows */
        rq_column_mve_s8(y1, a, b1, bias, mult, rshift, i, m, k, lda, &o);
    }
    if (j < n)                           /* an odd last column */
        rq_column_mve_s8(y + j * ldy, a, b + j * ldb, bias, mult, rshift, 0, m, k, lda, &o);
}

/* Elementwise micro-kernels (mc_elementwise.h) for Armv8.1-M cores with Helium (MVE): the
 * Cortex-M55. Copied into a project only when the board's core has MVE.
 *
 * mc_add_tables_mve_s8: four elements per vector. Each input's four bytes are loaded
 * sign-extended into 32-bit lanes (VLDRB.S32), offset by 128 and used as the offsets of a
 * gather from its table (VLDRW.U32 with offsets shifted by 2); the sum is requantized on the
 * four lanes by mc_mve.h's mc_requant_mve (bit-identical to mc_requant.h's
 * mc_mul_by_qm_pos_rshift). The last
 * n % 4 elements run under a tail predicate. Output element i is written after input element i
 * is read, in increasing i: the output may sit on an input (the "elementwise" in-place rule).
 * On a real Cortex-M55 a gather takes one beat per lane; QEMU counts it as one instruction. */
#if !defined(__ARM_FEATURE_MVE)
#error "microcompile: this kernel uses Helium (MVE), which the compiler flags do not enable: compile with the core's -mcpu (e.g. -mcpu=cortex-m55), or export the model for a board whose core lacks Helium"
#endif
#include <arm_mve.h>

#include "mc_elementwise.h"
#include "mc_mve.h"

#define MC_INLINE static inline __attribute__((always_inline))

/* The four elements at i of each input, rescaled by its table, summed and requantized into
 * y + i (under keep: the elements that exist). */
MC_INLINE void four(int8_t *y, const int8_t *a, const int8_t *b, const int32_t *ta, const int32_t *tb,
                    int32x4_t mult, int32x4_t nshift, int32_t off, int32x4_t lo, int32x4_t hi, mve_pred16_t keep,
                    int whole)
{
    const int32x4_t ia = vaddq_n_s32(whole ? vldrbq_s32(a) : vldrbq_z_s32(a, keep), 128);
    const int32x4_t ib = vaddq_n_s32(whole ? vldrbq_s32(b) : vldrbq_z_s32(b, keep), 128);
    const int32x4_t va = vldrwq_gather_shifted_offset_s32(ta, vreinterpretq_u32_s32(ia));
    const int32x4_t vb = vldrwq_gather_shifted_offset_s32(tb, vreinterpretq_u32_s32(ib));
    const int32x4_t v = mc_requant_mve(vaddq_s32(va, vb), mult, nshift, off, lo, hi);

    if (whole)
        vstrbq_s32(y, v);
    else
        vstrbq_p_s32(y, v, keep);
}

void mc_add_tables_mve_s8(int8_t *y, const int8_t *a, const int8_t *b, const int32_t *ta, const int32_t *tb,
                          const mc_add_tables_params_t *params)
{
    const int32_t n = params->n, off = params->out_offset;
    const int32x4_t mult = vdupq_n_s32(params->mult), nshift = vdupq_n_s32(-params->rshift);
    const int32x4_t lo = vdupq_n_s32(params->act_min), hi = vdupq_n_s32(params->act_max);
    int32_t i = 0;

    /* whole vectors without a predicate (GCC reloads one around every predicated access); the
     * lanes past n of the last, predicated, vector read index 128 (a zero byte) of each table */
    for (; i + 4 <= n; i += 4)
        four(y + i, a + i, b + i, ta, tb, mult, nshift, off, lo, hi, 0, 1);
    if (i < n)
        four(y + i, a + i, b + i, ta, tb, mult, nshift, off, lo, hi, vctp32q((uint32_t)(n - i)), 0);
}

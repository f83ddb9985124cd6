/* Depthwise micro-kernel (mc_depthwise.h) for Armv8.1-M cores with Helium (MVE): the Cortex-M55.
 * Copied into a project only when the board's core has MVE.
 *
 * Four channels per vector, in 32-bit lanes: per tap, the input bytes of channels c..c+3 are
 * loaded sign-extended (VLDRB.S32), the packed int16 weights of those channels by a gather
 * that undoes the group order c, c+2, c+1, c+3 of mc_depthwise.h (VLDRH.S32 with the offsets
 * 0, 2, 1, 3), then one VMUL and one VADD. The requantization is done on the four lanes at
 * once and is bit-identical to mc_requant.h's mc_mul_by_qm_pos_rshift:
 *
 *   VQRDMULH(acc, mult)  = floor((acc * mult + 2^30) / 2^31)   (mult >= 0: never saturates)
 *   VRSHL(s - (s < 0), -rshift) = floor((s + 2^(rshift-1) - (s < 0)) / 2^rshift)
 *
 * then the output offset, the clamp, and a narrowing store of the four bytes. A partial last
 * group of channels is handled under a tail predicate (VCTP): no read or write past the end.
 * `_<kh>x<kw>_` variants fix the window (3 wide) so that the taps unroll, as for the DSP kernels.
 * On a real Cortex-M55 the gather takes one beat per lane; QEMU counts it as one instruction. */
#if !defined(__ARM_FEATURE_MVE)
#error "microcompile: this kernel uses Helium (MVE), which the compiler flags do not enable: compile with the core's -mcpu (e.g. -mcpu=cortex-m55), or export the model for a board whose core lacks Helium"
#endif
#include <arm_mve.h>

#include "mc_depthwise.h"
#include "mc_mve.h"

/* Requantize four lanes and store them as bytes (under `keep`: the lanes that exist). */
static inline void requant_store4(int8_t *y, int32x4_t acc, const int32_t *mult, const int32_t *rshift,
                                  int32_t out_offset, int32x4_t lo, int32x4_t hi, mve_pred16_t keep)
{
    vstrbq_p_s32(y, mc_requant_mve(acc, vldrwq_z_s32(mult, keep), vnegq_s32(vldrwq_z_s32(rshift, keep)), out_offset,
                                   lo, hi), keep);
}

/* One group of four channels: bias plus the window's taps. A partial last group (`full` 0)
 * loads its input under the predicate `keep`; the packed weights of a group always hold four
 * lanes. */
static inline __attribute__((always_inline)) int32x4_t group_mve(const int8_t *x, const int16_t *wg, int32x4_t acc,
                                                                 int32_t kh, int32_t kw, int32_t x_row,
                                                                 int32_t x_col, int32_t w_row, uint32x4_t order,
                                                                 int full, mve_pred16_t keep)
{
#pragma GCC unroll 3
    for (int32_t i = 0; i < kh; ++i) {
#pragma GCC unroll 3
        for (int32_t j = 0; j < kw; ++j) {
            const int8_t *xp = x + i * x_row + j * x_col;
            const int32x4_t xv = full ? vldrbq_s32(xp) : vldrbq_z_s32(xp, keep);
            const int32x4_t wv = vldrhq_gather_shifted_offset_s32(wg + i * w_row + j * 4, order);

            acc = vaddq_s32(acc, vmulq_s32(xv, wv));
            /* Tap after tap: without this GCC 12 hoists every load of the unrolled window, sums
             * the products in another order and spills vector registers (there are eight). */
            __asm__ volatile("" : "+w"(acc));
        }
    }
    return acc;
}

/* The whole kernel; each exported variant inlines it with kh, kw and w_row fixed (or not). */
static inline __attribute__((always_inline)) void depthwise_mve(
    int8_t *y, const int8_t *x, const int16_t *w, const int32_t *bias, const int32_t *mult, const int32_t *rshift,
    int32_t channels, int32_t kh, int32_t kw, int32_t x_row, int32_t x_col, int32_t w_row, int32_t w_group,
    int32_t out_offset, int32_t act_min, int32_t act_max)
{
    const uint32x4_t order = {0, 2, 1, 3};   /* packed position of channel c % 4: its own inverse */
    const int32x4_t lo = vdupq_n_s32(act_min), hi = vdupq_n_s32(act_max);
    const mve_pred16_t all = vctp32q(4u);
    const int32_t c4 = channels & ~3;
    int32_t c = 0;

    for (; c < c4; c += 4) {
        const int32x4_t acc = group_mve(x + c, w + (c >> 2) * w_group, vldrwq_s32(bias + c), kh, kw, x_row, x_col,
                                        w_row, order, 1, all);

        requant_store4(y + c, acc, mult + c, rshift + c, out_offset, lo, hi, all);
    }
    if (c < channels) {   /* a partial last group, under a tail predicate */
        const mve_pred16_t tail = vctp32q((uint32_t)(channels - c));
        const int32x4_t acc = group_mve(x + c, w + (c >> 2) * w_group, vldrwq_z_s32(bias + c, tail), kh, kw, x_row,
                                        x_col, w_row, order, 0, tail);

        requant_store4(y + c, acc, mult + c, rshift + c, out_offset, lo, hi, tail);
    }
}

void mc_depthwise_mve_s8(MC_DEPTHWISE_ARGS)
{
    depthwise_mve(y, x, w, bias, mult, rshift, params->channels, params->kh, params->kw, params->x_row,
                  params->x_col, params->w_row, params->w_group, params->out_offset, params->act_min,
                  params->act_max);
}

/* The windows of a 3x3 filter with padding 1 (interior, edges, corners), fully unrolled: the
 * filter is 3 wide, so w_row is 3 taps * 4 lanes and every weight gather has a constant base. */
#define MC_DEPTHWISE_FIXED(KH, KW)                                                                   \
    void mc_depthwise_##KH##x##KW##_mve_s8(MC_DEPTHWISE_ARGS)                                        \
    {                                                                                                \
        depthwise_mve(y, x, w, bias, mult, rshift, params->channels, KH, KW, params->x_row,           \
                      params->x_col, 12, params->w_group, params->out_offset, params->act_min,       \
                      params->act_max);                                                              \
    }

MC_DEPTHWISE_FIXED(3, 3)
MC_DEPTHWISE_FIXED(2, 3)
MC_DEPTHWISE_FIXED(3, 2)
MC_DEPTHWISE_FIXED(2, 2)

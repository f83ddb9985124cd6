/* float32 depthwise micro-kernels (mc_depthwise_f32.h) on Helium's floating-point vectors
 * (MVE-F): the Cortex-M55. Copied into a project only when the board's core has MVE.
 *
 * The channels are the lanes: blocks of 16 channels keep their sums in four vectors while the
 * window's taps go by, each tap one input and one weight load and one VFMA per four channels
 * (x and w both hold a tap's channels contiguously); the channels left over by 16 go four at a
 * time, the last group under a tail predicate (VCTP), which reads and writes nothing past the
 * last channel. Each lane sums bias, then the taps in order, each product fused with one
 * rounding: the semantics of tir/intrinsics_depthwise_f32.py, except that Helium's float
 * instructions flush subnormals to zero (the Arm "standard FPSCR value"; see
 * mc_gemm_f32_mve.c). The clamp is C's `v < lo ? lo :
 * v` per lane (VCMP, VPSEL), as mc_gemm_f32_mve.c's. */
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
/* (Helium cores without its float vectors, -mcpu=cortex-m55+nomve.fp, compile this file to
 * nothing: their core TOML says mve_float = false, so no model calls these kernels.) */
#include <arm_mve.h>

#include "mc_depthwise_f32.h"
#include "mc_mve.h"

#define MC_INLINE static inline __attribute__((always_inline))


MC_INLINE void depthwise_mve_f32(float *y, const float *x, const float *w, const float *bias, float lo, float hi,
                                 const mc_depthwise_f32_params_t *p, int32_t act)
{
    const int32_t channels = p->channels, kw = p->kw, kh = kw > 0 ? p->kh : 0;   /* no taps: the bias */
    const int32_t x_row = p->x_row, x_col = p->x_col, w_row = p->w_row, w_col = p->w_col;
    int32_t c = 0;

    for (; c + 16 <= channels; c += 16) {
        float32x4_t a0 = vldrwq_f32(bias + c), a1 = vldrwq_f32(bias + c + 4), a2 = vldrwq_f32(bias + c + 8),
                    a3 = vldrwq_f32(bias + c + 12);
        const float *xr = x + c, *wr = w + c;

        for (int32_t i = 0; i < kh; ++i, xr += x_row, wr += w_row) {
            /* a row of taps (kw >= 1 here: DLS runs its body once even for a count of 0): per tap eight vector loads at immediate offsets, four VFMA, the
             * two pointer steps and LE: 15 instructions per 16 MACs. Assembly: GCC's form of
             * the same loop copies the pointers every pass (18). */
            const float *xp = xr, *wp = wr;
            float32x4_t t0, t1;

            __asm__ volatile(
                "dls lr, %[kw]\n\t"
                "1:\n\t"
                "vldrw.32 %q[t0], [%[xp]]\n\t"
                "vldrw.32 %q[t1], [%[wp]]\n\t"
                "vfma.f32 %q[a0], %q[t0], %q[t1]\n\t"
                "vldrw.32 %q[t0], [%[xp], #16]\n\t"
                "vldrw.32 %q[t1], [%[wp], #16]\n\t"
                "vfma.f32 %q[a1], %q[t0], %q[t1]\n\t"
                "vldrw.32 %q[t0], [%[xp], #32]\n\t"
                "vldrw.32 %q[t1], [%[wp], #32]\n\t"
                "vfma.f32 %q[a2], %q[t0], %q[t1]\n\t"
                "vldrw.32 %q[t0], [%[xp], #48]\n\t"
                "vldrw.32 %q[t1], [%[wp], #48]\n\t"
                "vfma.f32 %q[a3], %q[t0], %q[t1]\n\t"
                "add %[xp], %[xc]\n\t"
                "add %[wp], %[wc]\n\t"
                "le lr, 1b\n\t"
                : [a0] "+w"(a0), [a1] "+w"(a1), [a2] "+w"(a2), [a3] "+w"(a3), [t0] "=&w"(t0), [t1] "=&w"(t1),
                  [xp] "+r"(xp), [wp] "+r"(wp)
                : [kw] "r"(kw), [xc] "r"(4 * x_col), [wc] "r"(4 * w_col)
                : "lr", "memory");
        }
        vstrwq_f32(y + c, mc_clamp_f32_mve(a0, lo, hi, act));
        vstrwq_f32(y + c + 4, mc_clamp_f32_mve(a1, lo, hi, act));
        vstrwq_f32(y + c + 8, mc_clamp_f32_mve(a2, lo, hi, act));
        vstrwq_f32(y + c + 12, mc_clamp_f32_mve(a3, lo, hi, act));
    }
    for (; c < channels; c += 4) {
        const mve_pred16_t keep = vctp32q((uint32_t)(channels - c));
        float32x4_t a = vldrwq_z_f32(bias + c, keep);
        const float *xr = x + c, *wr = w + c;

        for (int32_t i = 0; i < kh; ++i, xr += x_row, wr += w_row) {
            const float *xp = xr, *wp = wr;

            for (int32_t j = 0; j < kw; ++j, xp += x_col, wp += w_col)
                a = vfmaq_m_f32(a, vldrwq_z_f32(xp, keep), vldrwq_z_f32(wp, keep), keep);
        }
        vstrwq_p_f32(y + c, mc_clamp_f32_mve(a, lo, hi, act), keep);
    }
}

void mc_depthwise_mve_f32(float *y, const float *x, const float *w, const float *bias, float act_min, float act_max,
                          const mc_depthwise_f32_params_t *params)
{
    depthwise_mve_f32(y, x, w, bias, act_min, act_max, params, 0);
}

void mc_depthwise_min_mve_f32(float *y, const float *x, const float *w, const float *bias, float act_min,
                              float act_max, const mc_depthwise_f32_params_t *params)
{
    depthwise_mve_f32(y, x, w, bias, act_min, act_max, params, MC_MVE_F32_MIN);
}

void mc_depthwise_minmax_mve_f32(float *y, const float *x, const float *w, const float *bias, float act_min,
                                 float act_max, const mc_depthwise_f32_params_t *params)
{
    depthwise_mve_f32(y, x, w, bias, act_min, act_max, params, MC_MVE_F32_MIN | MC_MVE_F32_MAX);
}

#endif /* __ARM_FEATURE_MVE & 2 */

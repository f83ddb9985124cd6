/* mc_mve.h: what the Helium (MVE) micro-kernels share (Armv8.1-M with MVE only:
 * included by runtime_c/kernels/mve/ alone, which are compiled only for cores with MVE).
 *
 * mc_requant_mve:   four int32 sums requantized at once, bit-identical to mc_requant.h's
 *                   mc_mul_by_qm_pos_rshift in its domain (|acc| < 2^30, mult >= 0,
 *                   rshift >= 1), plus the output offset, clamped to the activation:
 *                     VQRDMULH     (2*acc*mult + 2^31) >> 32, the high multiply (no
 *                                  saturation in the domain)
 *                     VQADD, VSHR  s - (s < 0), then VRSHL by -rshift: (s - (s < 0) +
 *                                  2^(rshift-1)) >> rshift, the rounding right shift half
 *                                  away from zero
 *                     VADD, VMAX, VMIN  the output offset and the clamp.
 * mc_copy_run_mve:  a run of bytes copied by vector loads and stores.
 * mc_panel_dot4_mve: four output channels' sums over one column, on weights packed in panels
 *                   of four rows in groups of 16 k (mc_gemm.h's p4 layout, group 16).
 * MC_MVE_ASM_CLOBBERS: what the kernels' assembly tiles clobber. They are ordinary functions,
 *                   so GCC saves these registers in its own prologue and -fstack-usage (the
 *                   firmware's static stack bound) counts them; r7 is left alone: it is the
 *                   frame pointer in a build with -O0 or -fno-omit-frame-pointer. */
#ifndef MC_MVE_H
#define MC_MVE_H

#include <arm_mve.h>
#include <stdint.h>

#define MC_MVE_ASM_CLOBBERS "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r9", "r10", "r11", "r12", "lr", "d0", \
    "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15", "memory", "cc"

/* `nshift` holds -rshift per lane. */
static inline __attribute__((always_inline)) int32x4_t mc_requant_mve(int32x4_t acc, int32x4_t mult,
                                                                       int32x4_t nshift, int32_t out_offset,
                                                                       int32x4_t lo, int32x4_t hi)
{
    int32x4_t v = vqrdmulhq_s32(acc, mult);

    v = vqaddq_s32(v, vshrq_n_s32(v, 31));   /* s - (s < 0) */
    v = vrshlq_s32(v, nshift);               /* rounding shift right by rshift */
    return vminq_s32(vmaxq_s32(vaddq_n_s32(v, out_offset), lo), hi);
}

/* dst[0..n) = src[0..n), 16 bytes per vector load and store, the last n % 16 under a tail
 * predicate (GCC reloads a predicate around every predicated access, so whole vectors first).
 * Nothing past either end is read or written. */
static inline __attribute__((always_inline)) void mc_copy_run_mve(int8_t *dst, const int8_t *src, int32_t n)
{
    for (int32_t i = n >> 4; i > 0; --i) {
        vstrbq_s8(dst, vldrbq_s8(src));
        dst += 16;
        src += 16;
    }
    if (n & 15) {
        const mve_pred16_t keep = vctp8q((uint32_t)(n & 15));

        vstrbq_p_s8(dst, vldrbq_z_s8(src, keep), keep);
    }
}

/* s[0..3] = rows 0..3 of the panel w . the column x over `groups` groups of 16 k; with `rest`
 * (1..15), one more group whose column bytes past `rest` are not read (the panel's weights are
 * zero there). */
static inline __attribute__((always_inline)) void mc_panel_dot4_mve(int32_t s[4], const int8_t *w, const int8_t *x,
                                                                     int32_t groups, int32_t rest)
{
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;

    for (int32_t g = groups; g > 0; --g) {
        const int8x16_t xv = vldrbq_s8(x);

        s0 = vmladavaq_s8(s0, vldrbq_s8(w), xv);
        s1 = vmladavaq_s8(s1, vldrbq_s8(w + 16), xv);
        s2 = vmladavaq_s8(s2, vldrbq_s8(w + 32), xv);
        s3 = vmladavaq_s8(s3, vldrbq_s8(w + 48), xv);
        w += 64;
        x += 16;
    }
    if (rest) {
        const int8x16_t xv = vldrbq_z_s8(x, vctp8q((uint32_t)rest));

        s0 = vmladavaq_s8(s0, vldrbq_s8(w), xv);
        s1 = vmladavaq_s8(s1, vldrbq_s8(w + 16), xv);
        s2 = vmladavaq_s8(s2, vldrbq_s8(w + 32), xv);
        s3 = vmladavaq_s8(s3, vldrbq_s8(w + 48), xv);
    }
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
}

#if (__ARM_FEATURE_MVE & 2)
/* The float kernels' clamp (kernels/mve/mc_gemm_f32_mve.c, mc_depthwise_f32_mve.c): C's
 * `v < lo ? lo : v` lane by lane (VCMP, VPSEL), not VMAXNM, which orders -0.0 below +0.0; `act`
 * says which bounds apply and is a constant in each kernel variant, so the tests fold away. */
enum { MC_MVE_F32_MIN = 1, MC_MVE_F32_MAX = 2 };

static inline __attribute__((always_inline)) float32x4_t mc_clamp_f32_mve(float32x4_t v, float lo, float hi,
                                                                          int32_t act)
{
    if (act & MC_MVE_F32_MIN)
        v = vpselq_f32(vdupq_n_f32(lo), v, vcmpltq_n_f32(v, lo));
    if (act & MC_MVE_F32_MAX)
        v = vpselq_f32(vdupq_n_f32(hi), v, vcmpgtq_n_f32(v, hi));
    return v;
}
#endif

#endif /* MC_MVE_H */

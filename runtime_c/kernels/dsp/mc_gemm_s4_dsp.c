/* mc_gemm_p4_dsp_s4 (mc_gemm.h): mc_gemm_p4_dsp_s8 on weights stored as packed int4, for
 * fully connected layers whose int4 weights stay in flash (each weight is read once per
 * inference, so unpacking them into scratch first would cost both the time and the RAM).
 *
 * Layout: the int8 panel layout of mc_gemm_p4_dsp_s8 (panels of four rows, groups of four k,
 * kp = k rounded up to 4), each group's 16 values in two words, one per pair of rows:
 *
 *     word 0: bytes [r0 (k1,k0), r1 (k1,k0), r0 (k3,k2), r1 (k3,k2)]   (high nibble, low nibble)
 *     word 1: the same for rows 2 and 3
 *
 * so the sign-extended low nibbles of word 0 are the bytes [r0k0, r1k0, r0k2, r1k2] and the
 * high ones [r0k1, r1k1, r0k3, r1k3]: SXTB16 (bytes 0,2) gives row 0's pairs (k0,k2) and
 * (k1,k3), SXTB16 after ROR 8 row 1's, which meet SXTB16 of the column's word as in the int8
 * kernel. A nibble is sign-extended four at a time with ((w & 0x0F0F0F0F) ^ 0x08080808)
 * - 0x08080808 per byte (SSUB8: no borrow between bytes). About 33 instructions per 16 MACs
 * against 21 for int8 weights. */
#if !defined(__ARM_FEATURE_DSP)
#error "microcompile: this kernel uses the Armv7E-M DSP instructions, which the compiler flags do not enable: compile with the core's -mcpu (e.g. -mcpu=cortex-m4), or export the model for a board whose core lacks DSP"
#endif
#include <arm_acle.h>
#include <stdint.h>
#include <string.h>

#include "mc_gemm.h"

static inline int32_t ld32(const void *p)
{
    int32_t v;

    memcpy(&v, p, 4);
    return v;
}

static inline int32_t sxtb16_ror8(int32_t x)
{
    int32_t r;

    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}

/* The four low nibbles of w, sign-extended to bytes. */
static inline int32_t s4_low(uint32_t w)
{
    return __ssub8((int32_t)((w & 0x0F0F0F0Fu) ^ 0x08080808u), 0x08080808);
}

/* One nibble of a group, for the k tail: row r (0..3), k index p (0..3) of the group at g. */
static inline int32_t s4_at(const uint8_t *g, int32_t r, int32_t p)
{
    const uint32_t byte = g[(r / 2) * 4 + (p / 2) * 2 + (r % 2)];

    return (int32_t)((p % 2 ? byte << 24 : byte << 28)) >> 28;
}

/* Four rows times one column: s[0..3] += panel rows . x; returns the next panel. */
static const uint8_t *p4_s4_panel(int32_t *s, const uint8_t *w, const int8_t *x, int32_t k)
{
    int32_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];
    const int8_t *x4 = x + (k & ~3);

    for (; x != x4; x += 4, w += 8) {
        const int32_t xw = ld32(x), xe = __sxtb16(xw), xo = sxtb16_ror8(xw);
        const uint32_t w0 = (uint32_t)ld32(w), w1 = (uint32_t)ld32(w + 4);
        const int32_t lo0 = s4_low(w0), hi0 = s4_low(w0 >> 4), lo1 = s4_low(w1), hi1 = s4_low(w1 >> 4);

        s0 = __smlad(xe, __sxtb16(lo0), s0);
        s0 = __smlad(xo, __sxtb16(hi0), s0);
        s1 = __smlad(xe, sxtb16_ror8(lo0), s1);
        s1 = __smlad(xo, sxtb16_ror8(hi0), s1);
        s2 = __smlad(xe, __sxtb16(lo1), s2);
        s2 = __smlad(xo, __sxtb16(hi1), s2);
        s3 = __smlad(xe, sxtb16_ror8(lo1), s3);
        s3 = __smlad(xo, sxtb16_ror8(hi1), s3);
    }
    if (k & 3) {       /* the last group, padded with zero weights; x is read only up to k */
        for (int32_t p = 0; p < (k & 3); ++p) {
            const int32_t xp = x[p];

            s0 += xp * s4_at(w, 0, p);
            s1 += xp * s4_at(w, 1, p);
            s2 += xp * s4_at(w, 2, p);
            s3 += xp * s4_at(w, 3, p);
        }
        w += 8;
    }
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
    return w;
}

void mc_gemm_p4_dsp_s4(int32_t *c, const uint8_t *a, const int8_t *b, const mc_gemm_params_t *params)
{
    const int32_t m = params->m, n = params->n, k = params->k, ldb = params->ldb, ldc = params->ldc;
    const int32_t m4 = m & ~3;

    for (int32_t j = 0; j < n; ++j) {
        const int8_t *col = b + j * ldb;
        const uint8_t *w = a;
        int32_t *cj = c + j * ldc, *cend = cj + m4;

        for (; cj != cend; cj += 4)
            w = p4_s4_panel(cj, w, col, k);
        if (m4 != m) {         /* the last, partial panel (its padding rows are zero) */
            int32_t s[4] = {0, 0, 0, 0};

            memcpy(s, cj, (size_t)(m - m4) * 4);
            p4_s4_panel(s, w, col, k);
            memcpy(cj, s, (size_t)(m - m4) * 4);
        }
    }
}

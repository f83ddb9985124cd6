/* mc_gemm_p4_dsp_s4 and mc_gemm_p4_rq_dsp_s4 (mc_gemm_s4.h): mc_gemm_p4_dsp_s8 and
 * mc_gemm_p4_rq_dsp_s8 on weights stored as packed int4 and read in place: for fully
 * connected layers (each weight is read once per inference, so unpacking them into scratch
 * first would cost both the time and the RAM) and for convolutions whose unpacked weights
 * would raise the arena.
 *
 * Layout: the int8 panel layout of mc_gemm_p4_dsp_s8 (panels of four rows, groups of four k,
 * kp = k rounded up to 4), each group's 16 values in two words, one per pair of rows:
 *
 *     word 0: bytes [r0 (k1,k0), r1 (k1,k0), r0 (k3,k2), r1 (k3,k2)]   (high nibble, low nibble)
 *     word 1: the same for rows 2 and 3
 *
 * and each nibble holds u = w + 8 (0..15: the weight's sign bit flipped), so w & 0x0F0F0F0F
 * gives the low nibbles as unsigned bytes [r0k0, r1k0, r0k2, r1k2] and (w >> 4) & 0x0F0F0F0F
 * the high ones [r0k1, r1k1, r0k3, r1k3]: UXTB16 (bytes 0,2) gives row 0's pairs (k0,k2) and
 * (k1,k3), UXTB16 after ROR 8 row 1's, which meet SXTB16 of the column's word as in the int8
 * kernel. The sums are of x * u = x * w + 8x, so each column's sum of x, times 8, is taken
 * off the start value once per column. About 25 instructions per 16 MACs against 21 for int8
 * weights. */
#include <stdint.h>
#include <string.h>

#include "mc_dsp.h"
#include "mc_gemm_s4.h"
#include "mc_requant_dsp.h"

/* The sum of a column's k values (SMLAD of each pair with (1, 1)). */
static int32_t column_sum(const int8_t *x, int32_t k)
{
    const int8_t *x4 = x + (k & ~3);
    int32_t s = 0;

    for (; x != x4; x += 4) {
        const int32_t xw = ld32(x);

        s = __smlad(__sxtb16(xw), 0x00010001, s);
        s = __smlad(sxtb16_ror8(xw), 0x00010001, s);
    }
    for (int32_t p = 0; p < (k & 3); ++p)
        s += x[p];
    return s;
}

/* Weight u (0..15, the stored nibble) of row r (0..3), k index p (0..3) of the group at g. */
static inline int32_t u4_at(const uint8_t *g, int32_t r, int32_t p)
{
    const uint32_t byte = g[(r / 2) * 4 + (p / 2) * 2 + (r % 2)];

    return (int32_t)(p % 2 ? byte >> 4 : byte & 15u);
}

/* Four rows times one column: s[0..3] += panel rows (as u) . x; returns the next panel. */
static const uint8_t *p4_s4_panel(int32_t *s, const uint8_t *w, const int8_t *x, int32_t k)
{
    int32_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];
    const int8_t *x4 = x + (k & ~3);
    const uint32_t mask = 0x0F0F0F0Fu;

    for (; x != x4; x += 4, w += 8) {
        const int32_t xw = ld32(x), xe = __sxtb16(xw), xo = sxtb16_ror8(xw);
        const uint32_t w0 = (uint32_t)ld32(w), w1 = (uint32_t)ld32(w + 4);
        const int32_t lo0 = (int32_t)(w0 & mask), hi0 = (int32_t)((w0 >> 4) & mask);
        const int32_t lo1 = (int32_t)(w1 & mask), hi1 = (int32_t)((w1 >> 4) & mask);

        s0 = __smlad(xe, __uxtb16(lo0), s0);
        s0 = __smlad(xo, __uxtb16(hi0), s0);
        s1 = __smlad(xe, uxtb16_ror8(lo0), s1);
        s1 = __smlad(xo, uxtb16_ror8(hi0), s1);
        s2 = __smlad(xe, __uxtb16(lo1), s2);
        s2 = __smlad(xo, __uxtb16(hi1), s2);
        s3 = __smlad(xe, uxtb16_ror8(lo1), s3);
        s3 = __smlad(xo, uxtb16_ror8(hi1), s3);
    }
    if (k & 3) {       /* the last group, padded with zero weights (u = 8); x is read only up to k */
        for (int32_t p = 0; p < (k & 3); ++p) {
            const int32_t xp = x[p];

            s0 += xp * u4_at(w, 0, p);
            s1 += xp * u4_at(w, 1, p);
            s2 += xp * u4_at(w, 2, p);
            s3 += xp * u4_at(w, 3, p);
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

    for (int32_t j = 0; j < n; ++j) {
        const int8_t *col = b + j * ldb;
        const int32_t off = -8 * column_sum(col, k);
        const uint8_t *w = a;
        int32_t *cj = c + j * ldc;

        for (int32_t i = 0; i < m; i += 4) {   /* a partial last panel's padding rows are zero */
            int32_t s[4] = {off, off, off, off};

            w = p4_s4_panel(s, w, col, k);
            for (int32_t r = 0; r < 4 && i + r < m; ++r)
                cj[i + r] += s[r];
        }
    }
}

void mc_gemm_p4_rq_dsp_s4(int8_t *y, const uint8_t *a, const int8_t *b, const int32_t *bias, const int32_t *mult,
                          const int32_t *rshift, const mc_gemm_rq_params_t *params)
{
    const int32_t m = params->m, n = params->n, k = params->k, ldb = params->ldb, ldy = params->ldy;
    const int32_t m4 = m & ~3, out = params->out_offset;
    const int32_t lo4 = mc_bytes4(params->act_min), hi4 = mc_bytes4(params->act_max);

    for (int32_t j = 0; j < n; ++j) {
        const int8_t *col = b + j * ldb;
        const int32_t off = -8 * column_sum(col, k);
        const uint8_t *w = a;
        int8_t *yj = y + j * ldy;
        int32_t i = 0;

        for (; i < m4; i += 4) {
            int32_t s[4] = {bias[i] + off, bias[i + 1] + off, bias[i + 2] + off, bias[i + 3] + off};

            w = p4_s4_panel(s, w, col, k);
            mc_store4_s8(yj + i, mc_requant_ssat8(s[0], mult[i], rshift[i], out),
                         mc_requant_ssat8(s[1], mult[i + 1], rshift[i + 1], out),
                         mc_requant_ssat8(s[2], mult[i + 2], rshift[i + 2], out),
                         mc_requant_ssat8(s[3], mult[i + 3], rshift[i + 3], out), lo4, hi4);
        }
        if (i < m) {   /* the last, partial panel (its padding rows are zero) */
            int32_t s[4] = {off, off, off, off};

            for (int32_t r = i; r < m; ++r)
                s[r - i] += bias[r];
            p4_s4_panel(s, w, col, k);
            for (int32_t r = i; r < m; ++r) {
                int32_t v = mc_requant_ssat8(s[r - i], mult[r], rshift[r], out);

                v = v < params->act_min ? params->act_min : v;
                yj[r] = (int8_t)(v > params->act_max ? params->act_max : v);
            }
        }
    }
}

/* The mixed-operand GEMM panel kernel (mc_gemm_mixed.h) for Armv7E-M cores with the DSP
 * extension: int8 columns read in place, int16 weights packed at compile time.
 *
 * Per four k of one column and one panel of four rows: one LDR of the column word, SXTB16
 * twice (x0,x2 and, rotated by 8, x1,x3), two LDM of the four rows' matching weight pairs,
 * eight SMLAD: 13 instructions per 16 MACs (the int8 panel kernel needs 21, as it extracts
 * the weights too; the int16 one needs an int16 copy of the column in scratch).
 * Registers in the loop: four sums, column/weight/end pointers, the column word and its
 * even half, and r8-r11 for the LDM: 13 of the 14 free ones.
 * Inline assembly because GCC 12 neither emits LDM here nor keeps the weights out of the
 * sums' registers (as for the panel kernels of mc_gemm_dsp.c). */
#include <stdint.h>
#include <string.h>

#include "mc_dsp.h"
#include "mc_gemm_mixed.h"

/* Four k: the column word's even pairs (x0,x2) meet the first LDM, its odd ones (x1,x3) the second. */
#define MC_MIXED_GROUP                                 \
    "ldr %[x], [%[xp]], #4\n\t"                       \
    "ldmia %[w]!, {r8, r9, r10, r11}\n\t"             \
    "sxtb16 %[xe], %[x]\n\t"                          \
    "sxtb16 %[x], %[x], ror #8\n\t"                   \
    "smlad %[s0], %[xe], r8, %[s0]\n\t"               \
    "smlad %[s1], %[xe], r9, %[s1]\n\t"               \
    "smlad %[s2], %[xe], r10, %[s2]\n\t"              \
    "smlad %[s3], %[xe], r11, %[s3]\n\t"              \
    "ldmia %[w]!, {r8, r9, r10, r11}\n\t"             \
    "smlad %[s0], %[x], r8, %[s0]\n\t"                \
    "smlad %[s1], %[x], r9, %[s1]\n\t"                \
    "smlad %[s2], %[x], r10, %[s2]\n\t"               \
    "smlad %[s3], %[x], r11, %[s3]\n\t"

#define MC_MIXED_OUTPUTS                                                                            \
    [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [xp] "+r"(x), [w] "+r"(w),           \
    [x] "=&r"(xv), [xe] "=&r"(xe)

/* Four rows times one column: s[0..3] += panel rows . x, w advanced past the panel. x32 and x4
 * end the whole 32-k and 4-k runs of the column, k3 = k % 4. Inlined, so that no call pushes
 * and pops the loop's registers per panel. */
static inline __attribute__((always_inline)) const int16_t *mixed_panel(int32_t *s, const int16_t *w,
                                                                        const int8_t *x, const int8_t *x32,
                                                                        const int8_t *x4, int32_t k3)
{
    int32_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3], xv, xe;

    if (x != x32)          /* 32 k per trip: 106 instructions per 128 MACs with the loop test */
        __asm__ volatile("1:\n\t" MC_MIXED_GROUP MC_MIXED_GROUP MC_MIXED_GROUP MC_MIXED_GROUP
                         MC_MIXED_GROUP MC_MIXED_GROUP MC_MIXED_GROUP MC_MIXED_GROUP
                         "cmp %[xp], %[end]\n\t"
                         "bne 1b\n\t"
                         : MC_MIXED_OUTPUTS
                         : [end] "r"(x32)
                         : "r8", "r9", "r10", "r11", "cc", "memory");
    if (x != x4)           /* the remaining whole groups of 4 k, one per trip */
        __asm__ volatile("1:\n\t" MC_MIXED_GROUP
                         "cmp %[xp], %[end]\n\t"
                         "bne 1b\n\t"
                         : MC_MIXED_OUTPUTS
                         : [end] "r"(x4)
                         : "r8", "r9", "r10", "r11", "cc", "memory");
    if (k3) {              /* the last, partial group: k + q sits at (q%2)*8 + row*2 + q/2 */
        for (int32_t q = 0; q < k3; ++q) {
            const int32_t xq = x[q];
            const int16_t *wq = w + (q & 1) * 8 + (q >> 1);

            s0 += xq * wq[0];
            s1 += xq * wq[2];
            s2 += xq * wq[4];
            s3 += xq * wq[6];
        }
        w += 16;
    }
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
    return w;
}

/* The last, partial panel of a column (its padding rows are zero) through a copy of its sums;
 * one group per trip (no unrolled loop: flash) and out of line, so that the panel loop's
 * registers are allocated as if it were not there. */
static __attribute__((noinline)) void mixed_partial_panel(int32_t *c, int32_t rows, const int16_t *w,
                                                          const int8_t *x, const int8_t *x4, int32_t k3)
{
    int32_t s[4] = {0, 0, 0, 0};

    memcpy(s, c, (size_t)rows * 4);
    mixed_panel(s, w, x, x, x4, k3);
    memcpy(c, s, (size_t)rows * 4);
}

void mc_gemm_p4_dsp_s16_s8(int32_t *c, const int16_t *a, const int8_t *b, const mc_gemm_params_t *params)
{
    const int32_t m = params->m, n = params->n, k = params->k, ldb = params->ldb, ldc = params->ldc;
    const int32_t m4 = m & ~3, k32 = k & ~31, k4 = k & ~3, k3 = k & 3;

    for (int32_t j = 0; j < n; ++j) {
        const int8_t *col = b + j * ldb, *col32 = col + k32, *col4 = col + k4;
        const int16_t *w = a;
        int32_t *cj = c + j * ldc, *cend = cj + m4;

        for (; cj != cend; cj += 4)
            w = mixed_panel(cj, w, col, col32, col4, k3);
        if (m4 != m)
            mixed_partial_panel(cj, m - m4, w, col, col4, k3);
    }
}

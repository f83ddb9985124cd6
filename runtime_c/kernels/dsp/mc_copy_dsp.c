/* Copy micro-kernels (mc_copy.h) for Armv7E-M cores with the DSP extension. */
#include <string.h>

#include "mc_dsp.h"
#include "mc_copy.h"

/* Low halves of a and b: [a.lo, b.lo]; and high halves: [a.hi, b.hi] (PKHBT/PKHTB). */
static inline int32_t pack_lo(int32_t a, int32_t b)
{
    int32_t r;

    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

static inline int32_t pack_hi(int32_t a, int32_t b)
{
    int32_t r;

    __asm__("pkhtb %0, %2, %1, asr #16" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

/* One word of four int8 becomes two words of int16 pairs: SXTB16 gives (x0, x2) and
 * (x1, x3), PKHBT/PKHTB put them back in order. 10 instructions per 4 elements. */
void mc_widen_dsp_s8_s16(int16_t *dst, const int8_t *src, int32_t n)
{
    const int8_t *end4 = src + (n & ~3), *end = src + n;

    while (src != end4) {
        const int32_t v = ld32(src), e = __sxtb16(v), o = sxtb16_ror8(v);   /* x0 x2, x1 x3 */

        st32(dst, pack_lo(e, o));
        st32(dst + 2, pack_hi(e, o));
        src += 4;
        dst += 4;
    }
    while (src != end)
        *dst++ = *src++;
}

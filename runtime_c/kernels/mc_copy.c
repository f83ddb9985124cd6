/* Copy micro-kernels (mc_copy.h) for every core. */
#include "mc_copy.h"

#include <string.h>

#define MC_UNPACK_S4(name, type)                                                \
    void name(type *dst, const uint8_t *src, int32_t n)                         \
    {                                                                           \
        int32_t i;                                                              \
                                                                                \
        for (i = 0; i + 1 < n; i += 2) {                                        \
            const uint32_t b = src[i >> 1];                                     \
                                                                                \
            dst[i] = (type)((int32_t)(b << 28) >> 28);                          \
            dst[i + 1] = (type)((int32_t)(b << 24) >> 28);                      \
        }                                                                       \
        if (i < n) {                                                            \
            dst[i] = (type)((int32_t)((uint32_t)src[i >> 1] << 28) >> 28);      \
        }                                                                       \
    }

/* Packed int4 (two values per byte, the first in the low nibble: TFLite's INT4 layout)
 * to int8. Each nibble is sign-extended by moving it to the top of a word and shifting
 * back arithmetically, which GCC makes one SBFX on Armv7-M. */
MC_UNPACK_S4(mc_unpack_s4_s8, int8_t)
/* The same into int16: the depthwise kernels' weights (mc_depthwise.h) are int16. */
MC_UNPACK_S4(mc_unpack_s4_s16, int16_t)

/* newlib's memmove copies words when it can, and handles the overlap of a window's kept rows
 * with the rows they replace. */
void mc_move_bytes(void *dst, const void *src, int32_t n)
{
    memmove(dst, src, (size_t)n);
}

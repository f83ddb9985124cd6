/* mc_ssat.h: saturation to int8 with the SSAT instruction (Armv7-M and later: Cortex-M3,
 * M4, M7, M33; not Armv6-M). The code generator includes this header only for kernels
 * compiled for such a core, so no other compiler ever sees the ARM builtin. */
#ifndef MC_SSAT_H
#define MC_SSAT_H

#include <stdint.h>

/* min(max(x, -128), 127) in one instruction; GCC 12 does not find it from the min/max. */
static inline int32_t mc_ssat8(int32_t x)
{
    return __builtin_arm_ssat(x, 8);
}

#endif /* MC_SSAT_H */

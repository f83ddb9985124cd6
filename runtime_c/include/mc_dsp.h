/* mc_dsp.h: what every Armv7E-M DSP kernel file (runtime_c/kernels/dsp/) starts with: the
 * check that the compiler flags enable the DSP instructions, and the small helpers GCC 12
 * does not offer as it needs them. Internal to runtime_c. */
#ifndef MC_DSP_H
#define MC_DSP_H

#if !defined(__ARM_FEATURE_DSP)
#error "microcompile: this kernel uses the Armv7E-M DSP instructions, which the compiler flags do not enable: compile with the core's -mcpu (e.g. -mcpu=cortex-m4), or export the model for a board whose core lacks DSP"
#endif

#include <arm_acle.h>
#include <stdint.h>
#include <string.h>

/* An unaligned 32-bit load or store (LDR/STR allow it on Armv7-M); memcpy compiles to one. */
static inline int32_t ld32(const void *p)
{
    int32_t v;

    memcpy(&v, p, 4);
    return v;
}

static inline void st32(void *p, int32_t v)
{
    memcpy(p, &v, 4);
}

/* SXTB16 / UXTB16 of x rotated right by 8 (bytes 1 and 3), in one instruction: GCC 12 neither
 * offers __ror nor folds a rotate into their operand. */
static inline int32_t sxtb16_ror8(int32_t x)
{
    int32_t r;

    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}

static inline int32_t uxtb16_ror8(int32_t x)
{
    int32_t r;

    __asm__("uxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}

#endif /* MC_DSP_H */

/* DWT->CYCCNT, the core's cycle counter (Armv7-M ARM C1.8.8; Armv8-M likewise), for the real
 * Cortex-M3/M4/M7/M33/M55 parts. It reads 0 under QEMU, so the emulated twins count with a timer. */
#ifndef MC_DWT_H
#define MC_DWT_H

#include <stdint.h>

#define MC_DEMCR (*(volatile uint32_t *)0xE000EDFCu)     /* bit24 TRCENA */
#define MC_DWT_CTRL (*(volatile uint32_t *)0xE0001000u)  /* bit0 CYCCNTENA */
#define MC_DWT_CYCCNT (*(volatile uint32_t *)0xE0001004u)
#define MC_DWT_LAR (*(volatile uint32_t *)0xE0001FB0u)   /* lock access (Cortex-M7 only) */

static inline void mc_dwt_start(void)
{
    MC_DEMCR |= 1u << 24;
    MC_DWT_LAR = 0xC5ACCE55u; /* unlocks the DWT on a Cortex-M7; ignored elsewhere */
    MC_DWT_CYCCNT = 0u;
    MC_DWT_CTRL |= 1u;
}

static inline uint32_t mc_dwt_cycles(void)
{
    return MC_DWT_CYCCNT;
}

#endif

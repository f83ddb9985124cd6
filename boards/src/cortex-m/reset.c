/* mc_platform_reset for every Cortex-M: a system reset request through the SCB.
 * AIRCR (0xE000ED0C) takes writes only with VECTKEY 0x05FA in bits 31:16; bit 2 is
 * SYSRESETREQ (ARMv7-M ARM B3.2.6). QEMU resets the whole machine on it. */
#include "mc_platform.h"

#define AIRCR (*(volatile uint32_t *)0xE000ED0Cu)

void mc_platform_reset(void)
{
    __asm__ volatile("dsb" ::: "memory"); /* finish outstanding writes (the reply) */
    AIRCR = (0x05FAu << 16) | (1u << 2);
    __asm__ volatile("dsb" ::: "memory");
    for (;;) {
    }
}

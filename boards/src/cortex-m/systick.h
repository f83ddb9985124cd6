/* SysTick as a free-running 32-bit up-counter of core clock cycles, for cores without
 * DWT->CYCCNT (Armv6-M) or where it does not count (QEMU). SysTick is a 24-bit down-counter
 * (Armv7-M ARM B3.3); its interrupt adds 2^24 to a software high part at every wrap. */
#ifndef MC_SYSTICK_H
#define MC_SYSTICK_H

#include <stdint.h>

/* Start counting the processor clock, with the wrap interrupt enabled. */
void mc_systick_start(void);
/* Cycles since mc_systick_start(), modulo 2^32. */
uint32_t mc_systick_cycles(void);

#endif

/* TIMER0 of the nRF51 as a free-running 32-bit counter at 16 MHz (nRF51 RM 3.0 section 18): the
 * nRF51's Cortex-M0 has neither DWT->CYCCNT nor SysTick. */
#ifndef MC_NRF51_TIMER_H
#define MC_NRF51_TIMER_H

#include <stdint.h>

#define MC_NRF_TIMER0 0x40008000u
#define MC_NRF_TIMER_REG(off) (*(volatile uint32_t *)(MC_NRF_TIMER0 + (off)))
#define MC_NRF_TIMER_HZ 16000000u /* HFCLK / 2^PRESCALER, PRESCALER = 0 */

static inline void mc_nrf51_timer_start(void)
{
    MC_NRF_TIMER_REG(0x504u) = 0u; /* MODE: timer */
    MC_NRF_TIMER_REG(0x508u) = 3u; /* BITMODE: 32 bit */
    MC_NRF_TIMER_REG(0x510u) = 0u; /* PRESCALER */
    MC_NRF_TIMER_REG(0x00Cu) = 1u; /* TASKS_CLEAR */
    MC_NRF_TIMER_REG(0x000u) = 1u; /* TASKS_START */
}

static inline uint32_t mc_nrf51_timer_count(void)
{
    MC_NRF_TIMER_REG(0x040u) = 1u; /* TASKS_CAPTURE[0] copies the counter into CC[0] */
    return MC_NRF_TIMER_REG(0x540u);
}

#endif

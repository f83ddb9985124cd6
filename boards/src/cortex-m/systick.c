#include "systick.h"

#define REG(addr) (*(volatile uint32_t *)(addr))
#define SYST_CSR REG(0xE000E010u) /* bit0 ENABLE, bit1 TICKINT, bit2 CLKSOURCE (1: processor clock) */
#define SYST_RVR REG(0xE000E014u)
#define SYST_CVR REG(0xE000E018u)
#define ICSR REG(0xE000ED04u)     /* bit26 PENDSTSET: a SysTick exception is pending */
#define RELOAD 0x00FFFFFFu        /* the full 24 bits: one wrap every 2^24 cycles */

static volatile uint32_t high; /* 2^24 times the wraps taken */

/* Overrides startup.c's weak default. */
void SysTick_Handler(void);
void SysTick_Handler(void)
{
    high += RELOAD + 1u;
}

void mc_systick_start(void)
{
    SYST_CSR = 0u;
    SYST_RVR = RELOAD;
    SYST_CVR = 0u;   /* any write clears it */
    high = 0u;
    SYST_CSR = 0x7u;
    /* From 0 the counter reloads on the next cycle without a wrap interrupt; wait for that
     * reload so that the count starts from RELOAD and only ever goes up. */
    while (SYST_CVR == 0u) {
    }
}

uint32_t mc_systick_cycles(void)
{
    uint32_t primask, h, v;

    /* With interrupts masked a wrap leaves the exception pending instead of bumping `high`:
     * then the wrap is counted here, from a value read after it. */
    __asm__ volatile("mrs %0, primask\n\tcpsid i" : "=r"(primask)::"memory");
    v = SYST_CVR;
    h = high;
    if (ICSR & (1u << 26)) {
        v = SYST_CVR;
        h += RELOAD + 1u;
    }
    __asm__ volatile("msr primask, %0" ::"r"(primask) : "memory");
    return h + (RELOAD - v);
}

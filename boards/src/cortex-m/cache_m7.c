#include "cache_m7.h"

#include <stdint.h>

#define REG(addr) (*(volatile uint32_t *)(addr))
#define SCB_CCR REG(0xE000ED14u)    /* bit16 DC, bit17 IC */
#define SCB_CLIDR REG(0xE000ED78u)
#define SCB_CCSIDR REG(0xE000ED80u) /* NumSets [27:13], Associativity [12:3], LineSize [2:0] */
#define SCB_CSSELR REG(0xE000ED84u) /* 0: the level 1 data cache */
#define SCB_ICIALLU REG(0xE000EF50u)
#define SCB_DCISW REG(0xE000EF60u)  /* invalidate by set/way: way << 30 | set << 5 (32-byte lines) */

static inline void barriers(void)
{
    __asm__ volatile("dsb\n\tisb" ::: "memory");
}

void mc_m7_caches_enable(void)
{
    uint32_t ccsidr, sets, ways;

    SCB_ICIALLU = 0u;
    barriers();
    SCB_CCR |= 1u << 17;
    barriers();

    SCB_CSSELR = 0u;
    barriers();
    ccsidr = SCB_CCSIDR;
    for (sets = (ccsidr >> 13) & 0x7FFFu;; --sets) {
        for (ways = (ccsidr >> 3) & 0x3FFu;; --ways) {
            SCB_DCISW = (ways << 30) | (sets << 5);
            if (ways == 0u)
                break;
        }
        if (sets == 0u)
            break;
    }
    barriers();
    SCB_CCR |= 1u << 16;
    barriers();
}

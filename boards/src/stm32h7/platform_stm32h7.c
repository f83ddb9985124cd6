/* Platform for the STM32H743 on a NUCLEO-H743ZI, real silicon.
 *
 * Power and clock (RM0433 6.8.4, 8.5): the LDO supply is confirmed (PWR_CR3 is written once
 * after reset), voltage scale VOS1, PLL1 from the 64 MHz HSI with the board data's dividers
 * (MC_PLL_M, MC_PLL_N, MC_PLL_P; arithmetic in boards/nucleo-h743zi.toml): sys_ck =
 * MC_CLOCK_HZ, HCLK = sys_ck / MC_HPRE_DIV, every APB clock = HCLK / MC_APB_DIV, with
 * MC_FLASH_LATENCY wait states. 400 MHz at VOS1 holds on both silicon revisions (Y and V).
 * The D2 SRAMs (SRAM123) are clocked so that the arena may live there; the I-cache and D-cache
 * are enabled (DTCM is never cached).
 * Console: USART3 (MC_CONSOLE_*), kernel clock PCLK1. Counter: DWT->CYCCNT. */
#include "cache_m7.h"
#include "dwt.h"
#include "mc_platform.h"
#include "stm32_gpio.h"
#include "stm32_usart_v2.h"

#define REG(addr) (*(volatile uint32_t *)(addr))
#define RCC 0x58024400u
#define RCC_CR REG(RCC + 0x00u)         /* bit0 HSION, bit2 HSIRDY, bit24 PLL1ON, bit25 PLL1RDY */
#define RCC_CFGR REG(RCC + 0x10u)       /* SW [2:0], SWS [5:3]: 3 = PLL1 */
#define RCC_D1CFGR REG(RCC + 0x18u)     /* HPRE [3:0], D1PPRE [6:4], D1CPRE [11:8] */
#define RCC_D2CFGR REG(RCC + 0x1Cu)     /* D2PPRE1 [6:4], D2PPRE2 [10:8] */
#define RCC_D3CFGR REG(RCC + 0x20u)     /* D3PPRE [6:4] */
#define RCC_PLLCKSELR REG(RCC + 0x28u)  /* PLLSRC [1:0]: 0 = HSI, DIVM1 [9:4] */
#define RCC_PLLCFGR REG(RCC + 0x2Cu)    /* PLL1VCOSEL bit1 (0: wide), PLL1RGE [3:2], DIVP1EN bit16 */
#define RCC_PLL1DIVR REG(RCC + 0x30u)   /* DIVN1 [8:0] = N - 1, DIVP1 [15:9] = P - 1 */
#define RCC_AHB2ENR REG(RCC + 0xDCu)    /* bits 29..31 SRAM1EN, SRAM2EN, SRAM3EN */
#define RCC_AHB4ENR REG(RCC + 0xE0u)    /* GPIOxEN bit x */
#define RCC_APB1LENR REG(RCC + 0xE8u)   /* bit18 USART3EN */
#define PWR_CSR1 REG(0x58024804u)       /* bit13 ACTVOSRDY */
#define PWR_CR3 REG(0x5802480Cu)        /* bit1 LDOEN, bit2 SCUEN */
#define PWR_D3CR REG(0x58024818u)       /* VOS [15:14]: 3 = VOS1, bit13 VOSRDY */
#define FLASH_ACR REG(0x52002000u)      /* LATENCY [3:0], WRHIGHFREQ [5:4] */
#define GPIO_PORT(p) (0x58020000u + 0x400u * (p))

#define BAUD 115200u
#define PCLK1 (MC_CLOCK_HZ / MC_HPRE_DIV / MC_APB_DIV)

static void clock_init(void)
{
    PWR_CR3 = (1u << 2) | (1u << 1); /* LDO supply (the Nucleo's default), configuration locked */
    while (!(PWR_CSR1 & (1u << 13))) {
    }
    PWR_D3CR = (PWR_D3CR & ~(3u << 14)) | (3u << 14);
    while (!(PWR_D3CR & (1u << 13))) {
    }
    RCC_CR |= 1u;
    while (!(RCC_CR & (1u << 2))) {
    }
    RCC_PLLCKSELR = (RCC_PLLCKSELR & ~((0x3Fu << 4) | 3u)) | (MC_PLL_M << 4); /* from HSI */
    /* PLL1 input = 64 MHz / MC_PLL_M: range 2..4 MHz (PLL1RGE = 1), wide VCO, only P enabled. */
    RCC_PLLCFGR = (RCC_PLLCFGR & ~((3u << 2) | (1u << 1) | (7u << 16) | 1u)) | (1u << 2) | (1u << 16);
    RCC_PLL1DIVR = (RCC_PLL1DIVR & ~0xFFFFu) | (MC_PLL_N - 1u) | ((MC_PLL_P - 1u) << 9);
    RCC_CR |= 1u << 24;
    while (!(RCC_CR & (1u << 25))) {
    }
    FLASH_ACR = MC_FLASH_LATENCY | (2u << 4);
    while ((FLASH_ACR & 0xFu) != MC_FLASH_LATENCY) {
    }
    RCC_D1CFGR = MC_STM32_HPRE(MC_HPRE_DIV) | (MC_STM32_PPRE(MC_APB_DIV) << 4); /* D1CPRE /1 */
    RCC_D2CFGR = (MC_STM32_PPRE(MC_APB_DIV) << 4) | (MC_STM32_PPRE(MC_APB_DIV) << 8);
    RCC_D3CFGR = MC_STM32_PPRE(MC_APB_DIV) << 4;
    RCC_CFGR = (RCC_CFGR & ~7u) | 3u; /* SW: PLL1 */
    while (((RCC_CFGR >> 3) & 7u) != 3u) {
    }
}

void mc_platform_init(void)
{
    clock_init();
    RCC_AHB2ENR |= 7u << 29;
    mc_m7_caches_enable();
    RCC_AHB4ENR |= (1u << MC_CONSOLE_TX_PORT) | (1u << MC_CONSOLE_RX_PORT);
    RCC_APB1LENR |= 1u << MC_CONSOLE_RCC_BIT;
    (void)RCC_APB1LENR;
    mc_stm32_gpio_af(GPIO_PORT(MC_CONSOLE_TX_PORT), MC_CONSOLE_TX_PIN, MC_CONSOLE_AF);
    mc_stm32_gpio_af(GPIO_PORT(MC_CONSOLE_RX_PORT), MC_CONSOLE_RX_PIN, MC_CONSOLE_AF);
    mc_stm32_usart_v2_init(MC_CONSOLE_BASE, (PCLK1 + BAUD / 2u) / BAUD);
    mc_dwt_start();
}

uint32_t mc_platform_cycles(void)
{
    return mc_dwt_cycles();
}

uint32_t mc_platform_cycles_per_second(void)
{
    return MC_CLOCK_HZ;
}

uint32_t mc_platform_counter_unit(uint32_t *per_count)
{
    *per_count = 1u; /* DWT->CYCCNT counts core clock cycles */
    return MC_COUNTER_CYCLES;
}

void mc_platform_uart_write(const char *buf, size_t len)
{
    mc_stm32_usart_v2_write(MC_CONSOLE_BASE, buf, len);
}

int mc_platform_uart_read(char *buf, size_t len, uint32_t timeout_ms)
{
    return mc_stm32_usart_v2_read(MC_CONSOLE_BASE, buf, len, timeout_ms * (MC_CLOCK_HZ / 1000u), mc_platform_cycles);
}

void mc_platform_exit(int code)
{
    (void)code;
    mc_stm32_usart_v2_flush(MC_CONSOLE_BASE); /* no debugger to tell: drain and park */
    for (;;) {
    }
}

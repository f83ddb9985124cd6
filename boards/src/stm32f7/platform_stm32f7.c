/* Platform for the STM32F746 (NUCLEO-F746ZG, 32F746G-DISCOVERY), real silicon.
 *
 * Clock (RM0385 5.2, 4.1.4): voltage scale 1, the main PLL from the 16 MHz HSI with the board
 * data's dividers (MC_PLL_M, MC_PLL_N, MC_PLL_P, MC_PLL_Q; arithmetic in the board's TOML),
 * then over-drive (needed above 180 MHz), MC_FLASH_LATENCY wait states with the ART
 * accelerator, and the APB prescalers MC_APB1_DIV / MC_APB2_DIV: SYSCLK = HCLK = MC_CLOCK_HZ.
 * The I-cache and D-cache are enabled (cortex-m/cache_m7.c); DTCM and ITCM are never cached.
 * Console: the USART and pins the board data names (MC_CONSOLE_*), clocked by its APB.
 * Counter: DWT->CYCCNT (unlocked through DWT_LAR on the Cortex-M7). */
#include "cache_m7.h"
#include "dwt.h"
#include "mc_platform.h"
#include "stm32_gpio.h"
#include "stm32_usart_v2.h"

#define REG(addr) (*(volatile uint32_t *)(addr))
#define RCC 0x40023800u
#define RCC_CR REG(RCC + 0x00u)      /* bit0 HSION, bit1 HSIRDY, bit24 PLLON, bit25 PLLRDY */
#define RCC_PLLCFGR REG(RCC + 0x04u) /* PLLM [5:0], PLLN [14:6], PLLP [17:16], PLLSRC bit22, PLLQ [27:24] */
#define RCC_CFGR REG(RCC + 0x08u)    /* SW [1:0], SWS [3:2], HPRE [7:4], PPRE1 [12:10], PPRE2 [15:13] */
#define RCC_AHB1ENR REG(RCC + 0x30u) /* GPIOxEN bit x */
#define RCC_APB1ENR REG(RCC + 0x40u) /* bit28 PWREN */
#define RCC_APB2ENR REG(RCC + 0x44u)
#define PWR_CR1 REG(0x40007000u)     /* VOS [15:14], bit16 ODEN, bit17 ODSWEN */
#define PWR_CSR1 REG(0x40007004u)    /* bit16 ODRDY, bit17 ODSWRDY */
#define FLASH_ACR REG(0x40023C00u)   /* LATENCY [3:0], PRFTEN bit8, ARTEN bit9 */
#define PLLCFGR_FIELDS (0x3Fu | (0x1FFu << 6) | (3u << 16) | (1u << 22) | (0xFu << 24))
#define GPIO_PORT(p) (0x40020000u + 0x400u * (p))

#define BAUD 115200u
#define CONSOLE_PCLK (MC_CLOCK_HZ / (MC_CONSOLE_APB == 1 ? MC_APB1_DIV : MC_APB2_DIV))

static void clock_init(void)
{
    RCC_APB1ENR |= 1u << 28;
    (void)RCC_APB1ENR;
    PWR_CR1 = (PWR_CR1 & ~(3u << 14)) | (3u << 14); /* scale 1; VOS can change only while the PLL is off */
    RCC_CR |= 1u;
    while (!(RCC_CR & 2u)) {
    }
    RCC_PLLCFGR = (RCC_PLLCFGR & ~PLLCFGR_FIELDS) | MC_PLL_M | (MC_PLL_N << 6) | (((MC_PLL_P / 2u) - 1u) << 16) |
                  (MC_PLL_Q << 24); /* PLLSRC 0: HSI */
    RCC_CR |= 1u << 24;
    while (!(RCC_CR & (1u << 25))) {
    }
    PWR_CR1 |= 1u << 16; /* over-drive on, then switch to it (RM0385 4.1.4) */
    while (!(PWR_CSR1 & (1u << 16))) {
    }
    PWR_CR1 |= 1u << 17;
    while (!(PWR_CSR1 & (1u << 17))) {
    }
    FLASH_ACR = MC_FLASH_LATENCY | (1u << 8) | (1u << 9);
    while ((FLASH_ACR & 0xFu) != MC_FLASH_LATENCY) {
    }
    RCC_CFGR = (MC_STM32_PPRE(MC_APB1_DIV) << 10) | (MC_STM32_PPRE(MC_APB2_DIV) << 13) | 2u; /* SW: PLL */
    while (((RCC_CFGR >> 2) & 3u) != 2u) {
    }
}

void mc_platform_init(void)
{
    clock_init();
    mc_m7_caches_enable();
    RCC_AHB1ENR |= (1u << MC_CONSOLE_TX_PORT) | (1u << MC_CONSOLE_RX_PORT);
    if (MC_CONSOLE_APB == 1)
        RCC_APB1ENR |= 1u << MC_CONSOLE_RCC_BIT;
    else
        RCC_APB2ENR |= 1u << MC_CONSOLE_RCC_BIT;
    (void)RCC_APB2ENR;
    mc_stm32_gpio_af(GPIO_PORT(MC_CONSOLE_TX_PORT), MC_CONSOLE_TX_PIN, MC_CONSOLE_AF);
    mc_stm32_gpio_af(GPIO_PORT(MC_CONSOLE_RX_PORT), MC_CONSOLE_RX_PIN, MC_CONSOLE_AF);
    mc_stm32_usart_v2_init(MC_CONSOLE_BASE, (CONSOLE_PCLK + BAUD / 2u) / BAUD);
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

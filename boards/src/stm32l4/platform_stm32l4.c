/* Platform for the STM32L4R5 (STM32L4+) on a NUCLEO-L4R5ZI, real silicon.
 *
 * Clock (RM0432 6.2, 5.1.8): Range 1 boost mode, then the main PLL from the 16 MHz HSI16 with
 * the board data's dividers (MC_PLL_M, MC_PLL_N, MC_PLL_R; arithmetic in
 * boards/nucleo-l4r5zi.toml) and flash wait states (MC_FLASH_LATENCY); HCLK = PCLK1 = PCLK2 =
 * MC_CLOCK_HZ. Going above 80 MHz, HCLK runs at SYSCLK / 2 for at least 1 us after the switch.
 * Console: LPUART1 on PG7/PG8 (MC_CONSOLE_*), whose port G pins are powered by VDDIO2: it must
 * be declared valid (PWR_CR2.IOSV) before they work.
 * Counter: DWT->CYCCNT. */
#include "dwt.h"
#include "mc_platform.h"
#include "stm32_gpio.h"
#include "stm32_usart_v2.h"

#define REG(addr) (*(volatile uint32_t *)(addr))
#define RCC 0x40021000u
#define RCC_CR REG(RCC + 0x00u)       /* bit8 HSION, bit10 HSIRDY, bit24 PLLON, bit25 PLLRDY */
#define RCC_CFGR REG(RCC + 0x08u)     /* SW [1:0], SWS [3:2], HPRE [7:4], PPRE1 [10:8], PPRE2 [13:11] */
#define RCC_PLLCFGR REG(RCC + 0x0Cu)  /* PLLSRC [1:0], PLLM [7:4], PLLN [14:8], PLLREN bit24, PLLR [26:25] */
#define RCC_AHB2ENR REG(RCC + 0x4Cu)  /* GPIOxEN bit x */
#define RCC_APB1ENR1 REG(RCC + 0x58u) /* bit28 PWREN */
#define RCC_APB1ENR2 REG(RCC + 0x5Cu) /* bit0 LPUART1EN */
#define PWR 0x40007000u
#define PWR_CR1 REG(PWR + 0x00u)      /* VOS [10:9]: 01 = Range 1 */
#define PWR_CR2 REG(PWR + 0x04u)      /* bit9 IOSV */
#define PWR_SR2 REG(PWR + 0x14u)      /* bit10 VOSF */
#define PWR_CR5 REG(PWR + 0x80u)      /* bit8 R1MODE: 0 = Range 1 boost */
#define FLASH_ACR REG(0x40022000u)    /* LATENCY [3:0], PRFTEN bit8, ICEN bit9, DCEN bit10 */
#define GPIO_PORT(p) (0x48000000u + 0x400u * (p))

#define BAUD 115200u

static void clock_init(void)
{
    uint32_t i;

    RCC_APB1ENR1 |= 1u << 28;
    (void)RCC_APB1ENR1;
    PWR_CR1 = (PWR_CR1 & ~(3u << 9)) | (1u << 9);
    while (PWR_SR2 & (1u << 10)) {
    }
    RCC_CFGR = (RCC_CFGR & ~(0xFu << 4)) | (MC_STM32_HPRE(2) << 4); /* HCLK = SYSCLK / 2 for the switch */
    PWR_CR5 &= ~(1u << 8);                                           /* boost mode: up to 120 MHz */
    FLASH_ACR = MC_FLASH_LATENCY | (1u << 8) | (1u << 9) | (1u << 10);
    while ((FLASH_ACR & 0xFu) != MC_FLASH_LATENCY) {
    }
    RCC_CR |= 1u << 8;
    while (!(RCC_CR & (1u << 10))) {
    }
    RCC_PLLCFGR = 2u | ((MC_PLL_M - 1u) << 4) | (MC_PLL_N << 8) | (1u << 24) | (((MC_PLL_R / 2u) - 1u) << 25);
    RCC_CR |= 1u << 24;
    while (!(RCC_CR & (1u << 25))) {
    }
    RCC_CFGR = (RCC_CFGR & ~3u) | 3u; /* SW: PLL */
    while (((RCC_CFGR >> 2) & 3u) != 3u) {
    }
    for (i = 0; i < MC_CLOCK_HZ / 1000000u; ++i) /* at least 1 us at HCLK = SYSCLK / 2 */
        __asm__ volatile("nop");
    RCC_CFGR &= ~(0xFu << 4); /* HCLK = SYSCLK; PCLK1 = PCLK2 = HCLK (PPRE reset values) */
}

void mc_platform_init(void)
{
    clock_init();
    PWR_CR2 |= 1u << 9; /* VDDIO2 valid: port G[15:2] */
    RCC_AHB2ENR |= (1u << MC_CONSOLE_TX_PORT) | (1u << MC_CONSOLE_RX_PORT);
    RCC_APB1ENR2 |= 1u; /* LPUART1, clocked by PCLK1 (CCIPR.LPUART1SEL reset value) */
    (void)RCC_APB1ENR2;
    mc_stm32_gpio_af(GPIO_PORT(MC_CONSOLE_TX_PORT), MC_CONSOLE_TX_PIN, MC_CONSOLE_AF);
    mc_stm32_gpio_af(GPIO_PORT(MC_CONSOLE_RX_PORT), MC_CONSOLE_RX_PIN, MC_CONSOLE_AF);
    /* LPUART: BRR = 256 * f_ck / baud (RM0432 51.4.7); 64-bit to keep 256 * 120 MHz exact. */
    mc_stm32_usart_v2_init(MC_CONSOLE_BASE, (uint32_t)((256ull * MC_CLOCK_HZ + BAUD / 2u) / BAUD));
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

/* Platform for the STM32F446 on a NUCLEO-F446RE, real silicon.
 *
 * Clock (RM0390 6.2): the main PLL from the 16 MHz HSI, with the dividers, bus prescalers and
 * flash wait states the board data gives (MC_PLL_M, MC_PLL_N, MC_PLL_P, MC_PLL_Q, MC_APB1_DIV,
 * MC_APB2_DIV, MC_FLASH_LATENCY; their arithmetic is in boards/nucleo-f446re.toml), so that
 * SYSCLK = HCLK = MC_CLOCK_HZ. The HSI needs no solder bridge or crystal on the board.
 * Console: the U(S)ART, pins and alternate function the board data names (MC_CONSOLE_*).
 * Counter: DWT->CYCCNT, one count per core cycle. */
#include "dwt.h"
#include "mc_platform.h"
#include "stm32_gpio.h"
#include "stm32f4_usart.h"

#define RCC_CR MC_REG(MC_RCC + 0x00u)      /* bit0 HSION, bit1 HSIRDY, bit24 PLLON, bit25 PLLRDY */
#define RCC_PLLCFGR MC_REG(MC_RCC + 0x04u) /* PLLM [5:0], PLLN [14:6], PLLP [17:16], PLLSRC bit22, PLLQ [27:24] */
#define RCC_CFGR MC_REG(MC_RCC + 0x08u)    /* SW [1:0], SWS [3:2], HPRE [7:4], PPRE1 [12:10], PPRE2 [15:13] */
#define PWR_CR MC_REG(0x40007000u)         /* VOS [15:14] */
#define FLASH_ACR MC_REG(0x40023C00u)      /* LATENCY [3:0], PRFTEN bit8, ICEN bit9, DCEN bit10 */
#define PLLCFGR_FIELDS (0x3Fu | (0x1FFu << 6) | (3u << 16) | (1u << 22) | (0xFu << 24))
#define GPIO_PORT(p) (0x40020000u + 0x400u * (p))

#define BAUD 115200u
#define CONSOLE_PCLK (MC_CLOCK_HZ / (MC_CONSOLE_APB == 1 ? MC_APB1_DIV : MC_APB2_DIV))

static void clock_init(void)
{
    MC_RCC_APB1ENR |= 1u << 28; /* PWREN */
    (void)MC_RCC_APB1ENR;
    PWR_CR = (PWR_CR & ~(3u << 14)) | (3u << 14); /* voltage scale 1: needed above 144 MHz */
    RCC_CR |= 1u;
    while (!(RCC_CR & 2u)) {
    }
    /* Keep PLLR (F446 bits 30:28, used by I2S/SAI) and the reserved bits at their reset values. */
    RCC_PLLCFGR = (RCC_PLLCFGR & ~PLLCFGR_FIELDS) | MC_PLL_M | (MC_PLL_N << 6) | (((MC_PLL_P / 2u) - 1u) << 16) |
                  (MC_PLL_Q << 24); /* PLLSRC 0: HSI */
    RCC_CR |= 1u << 24;
    while (!(RCC_CR & (1u << 25))) {
    }
    /* More wait states before the faster clock, with prefetch and the ART caches. */
    FLASH_ACR = MC_FLASH_LATENCY | (1u << 8) | (1u << 9) | (1u << 10);
    while ((FLASH_ACR & 0xFu) != MC_FLASH_LATENCY) {
    }
    RCC_CFGR = (MC_STM32_PPRE(MC_APB1_DIV) << 10) | (MC_STM32_PPRE(MC_APB2_DIV) << 13) | 2u; /* SW: PLL */
    while (((RCC_CFGR >> 2) & 3u) != 2u) {
    }
}

void mc_platform_init(void)
{
    clock_init();
    MC_RCC_AHB1ENR |= (1u << MC_CONSOLE_TX_PORT) | (1u << MC_CONSOLE_RX_PORT);
    if (MC_CONSOLE_APB == 1)
        MC_RCC_APB1ENR |= 1u << MC_CONSOLE_RCC_BIT;
    else
        MC_RCC_APB2ENR |= 1u << MC_CONSOLE_RCC_BIT;
    (void)MC_RCC_APB2ENR; /* read back: the clock must be on before the next access */
    mc_stm32_gpio_af(GPIO_PORT(MC_CONSOLE_TX_PORT), MC_CONSOLE_TX_PIN, MC_CONSOLE_AF);
    mc_stm32_gpio_af(GPIO_PORT(MC_CONSOLE_RX_PORT), MC_CONSOLE_RX_PIN, MC_CONSOLE_AF);
    mc_stm32_usart_init(MC_CONSOLE_BASE, (CONSOLE_PCLK + BAUD / 2u) / BAUD);
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
    *per_count = 1u;
    return MC_COUNTER_CYCLES;
}

void mc_platform_uart_write(const char *buf, size_t len)
{
    mc_stm32_usart_write(MC_CONSOLE_BASE, buf, len);
}

int mc_platform_uart_read(char *buf, size_t len, uint32_t timeout_ms)
{
    return mc_stm32_usart_read(MC_CONSOLE_BASE, buf, len, timeout_ms * (MC_CLOCK_HZ / 1000u), mc_platform_cycles);
}

void mc_platform_exit(int code)
{
    (void)code;
    /* No debugger to tell: drain the console and park the core. */
    mc_stm32_usart_flush(MC_CONSOLE_BASE);
    for (;;) {
    }
}

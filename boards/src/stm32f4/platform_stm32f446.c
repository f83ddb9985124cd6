/* Platform for the STM32F446RE on a NUCLEO-F446RE, real silicon.
 *
 * Clock: the reset default, HSI RC at 16 MHz, no PLL. SYSCLK = HCLK = 16 MHz and
 * APB1 = APB2 = 16 MHz (all prescalers 1 after reset, RM0390 6.2). We deliberately
 * do not set up the PLL: cycle counts, not wall time, are what we report.
 * Console: USART2 on PA2 (TX) / PA3 (RX), AF7, wired to the ST-LINK virtual COM
 * port (UM1724, "USART communication"). BRR = 16 MHz / 115200 = 138.9 -> 139.
 * Counter: DWT->CYCCNT, one count per core cycle (ARMv7-M ARM C1.8.8). */
#include "mc_platform.h"
#include "stm32f4_usart.h"

#define CPU_HZ 16000000u /* HSI */
#define BAUD 115200u
#define USART2 0x40004400u
#define GPIOA 0x40020000u
#define GPIOA_MODER MC_REG(GPIOA + 0x00u)
#define GPIOA_AFRL MC_REG(GPIOA + 0x20u)

#define DEMCR MC_REG(0xE000EDFCu) /* bit24 TRCENA */
#define DWT_CTRL MC_REG(0xE0001000u)
#define DWT_CYCCNT MC_REG(0xE0001004u)

void mc_platform_init(void)
{
    MC_RCC_AHB1ENR |= 1u;         /* GPIOA */
    MC_RCC_APB1ENR |= 1u << 17;   /* USART2 */
    (void)MC_RCC_APB1ENR;         /* read back: the clock must be on before the next access */
    GPIOA_MODER = (GPIOA_MODER & ~(0xFu << 4)) | (0xAu << 4);     /* PA2, PA3: alternate */
    GPIOA_AFRL = (GPIOA_AFRL & ~(0xFFu << 8)) | (0x77u << 8);     /* AF7 = USART2 */
    mc_stm32_usart_init(USART2, (CPU_HZ + BAUD / 2u) / BAUD);

    DEMCR |= 1u << 24;
    DWT_CYCCNT = 0u;
    DWT_CTRL |= 1u;
}

uint32_t mc_platform_cycles(void)
{
    return DWT_CYCCNT;
}

uint32_t mc_platform_cycles_per_second(void)
{
    return CPU_HZ;
}

uint32_t mc_platform_counter_unit(uint32_t *per_count)
{
    *per_count = 1u;
    return MC_COUNTER_CYCLES;
}

void mc_platform_uart_write(const char *buf, size_t len)
{
    mc_stm32_usart_write(USART2, buf, len);
}

int mc_platform_uart_read(char *buf, size_t len, uint32_t timeout_ms)
{
    return mc_stm32_usart_read(USART2, buf, len, timeout_ms * (CPU_HZ / 1000u), mc_platform_cycles);
}

void mc_platform_exit(int code)
{
    (void)code;
    /* No debugger to tell: drain the console and park the core. */
    mc_stm32_usart_flush(USART2);
    for (;;) {
    }
}

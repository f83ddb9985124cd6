/* Platform for the STM32F405RG as emulated by QEMU's `netduinoplus2` machine: the
 * emulated twin of the NUCLEO-F446RE.
 *
 * Console: USART1 (0x40011000), which QEMU connects to serial0 (hw/arm/stm32f405_soc.c).
 * Counter: TIM2, a 32-bit up-counter. DWT->CYCCNT reads 0 under QEMU, so it is useless.
 * QEMU's stm32f2xx timer ignores the RCC and counts at its "clock-frequency"
 * property, which stm32f405_soc sets to 1 GHz: one count per virtual ns, i.e. one
 * count per instruction under `-icount shift=0` (measured; see boards/nucleo-f446re.toml).
 * Exit: semihosting, so QEMU ends with the firmware's status. */
#include "mc_platform.h"
#include "semihosting.h"
#include "stm32f4_usart.h"

#define USART1 0x40011000u
#define TIM2 0x40000000u
#define TIM2_CR1 MC_REG(TIM2 + 0x00u)
#define TIM2_EGR MC_REG(TIM2 + 0x14u)
#define TIM2_CNT MC_REG(TIM2 + 0x24u)
#define TIM2_PSC MC_REG(TIM2 + 0x28u)
#define TIM2_ARR MC_REG(TIM2 + 0x2Cu)

#define TIM2_HZ 1000000000u /* QEMU's clock-frequency for this SoC's timers */

void mc_platform_init(void)
{
    MC_RCC_APB2ENR |= 1u << 4; /* USART1 (QEMU ignores it; real silicon needs it) */
    MC_RCC_APB1ENR |= 1u;      /* TIM2 */
    (void)MC_RCC_APB1ENR;
    mc_stm32_usart_init(USART1, 139u); /* baud is irrelevant under QEMU */

    TIM2_PSC = 0u;
    TIM2_ARR = 0xFFFFFFFFu;
    TIM2_EGR = 1u; /* UG: load PSC */
    TIM2_CNT = 0u;
    TIM2_CR1 = 1u; /* CEN */
}

uint32_t mc_platform_cycles(void)
{
    return TIM2_CNT;
}

uint32_t mc_platform_cycles_per_second(void)
{
    return TIM2_HZ;
}

uint32_t mc_platform_counter_unit(uint32_t *per_count)
{
    *per_count = 1u; /* one count per instruction, see above */
    return MC_COUNTER_INSTRUCTIONS;
}

void mc_platform_uart_write(const char *buf, size_t len)
{
    mc_stm32_usart_write(USART1, buf, len);
}

int mc_platform_uart_read(char *buf, size_t len, uint32_t timeout_ms)
{
    return mc_stm32_usart_read(USART1, buf, len, timeout_ms * (TIM2_HZ / 1000u), mc_platform_cycles);
}

void mc_platform_exit(int code)
{
    mc_semihosting_exit(code);
}

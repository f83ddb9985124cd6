/* Platform for the Arm MPS3 AN547 FPGA image (Cortex-M55 in the Corstone SSE-300) as emulated
 * by QEMU: CMSDK APB UART0 console (MC_UART_BASE, from the board data), SysTick as the counter.
 *
 * The SSE-300 has no CMSDK TIMER0 to count with (its system timers need the system counter set
 * up, and its CMSDK timer runs at 32 kHz), and DWT->CYCCNT reads 0 under QEMU. SysTick counts
 * the processor clock, which QEMU's SSE-300 wires to MAINCLK = 32 MHz (hw/arm/mps2-tz.c). */
#include "cmsdk_uart.h"
#include "mc_platform.h"
#include "semihosting.h"
#include "systick.h"

void mc_platform_init(void)
{
    mc_cmsdk_uart_init(MC_UART_BASE);
    mc_systick_start();
}

uint32_t mc_platform_cycles(void)
{
    return mc_systick_cycles();
}

uint32_t mc_platform_cycles_per_second(void)
{
    return MC_CLOCK_HZ;
}

uint32_t mc_platform_counter_unit(uint32_t *per_count)
{
    /* Under QEMU -icount shift=0 an instruction takes 1 ns: 1e9 / 32 MHz SysTick = 31.25 per count. The host computes the exact
     * rate from mc_platform_cycles_per_second(); this is its integer part. */
    *per_count = 1000000000u / MC_CLOCK_HZ;
    return MC_COUNTER_INSTRUCTIONS;
}

void mc_platform_uart_write(const char *buf, size_t len)
{
    mc_cmsdk_uart_write(MC_UART_BASE, buf, len);
}

int mc_platform_uart_read(char *buf, size_t len, uint32_t timeout_ms)
{
    return mc_cmsdk_uart_read(MC_UART_BASE, buf, len, timeout_ms * (MC_CLOCK_HZ / 1000u), mc_platform_cycles);
}

void mc_platform_exit(int code)
{
    mc_semihosting_exit(code);
}

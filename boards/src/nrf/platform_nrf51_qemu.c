/* Platform for the nRF51822 as emulated by QEMU's `microbit` machine: the micro:bit's own
 * platform (UART0, TIMER0) except that it exits through semihosting, so QEMU ends with the
 * firmware's status. QEMU's TIMER0 counts virtual time at 16 MHz: under -icount shift=0 one
 * count is 62.5 instructions (boards/microbit.toml). */
#include "mc_platform.h"
#include "nrf51_timer.h"
#include "nrf_uart.h"
#include "semihosting.h"

void mc_platform_init(void)
{
    mc_nrf_uart_init(MC_CONSOLE_TX_PIN, MC_CONSOLE_RX_PIN);
    mc_nrf51_timer_start();
}

uint32_t mc_platform_cycles(void)
{
    return mc_nrf51_timer_count();
}

uint32_t mc_platform_cycles_per_second(void)
{
    return MC_NRF_TIMER_HZ;
}

uint32_t mc_platform_counter_unit(uint32_t *per_count)
{
    /* Under QEMU -icount shift=0 an instruction takes 1 ns: 1e9 / 16 MHz TIMER0 = 62.5 per count. The host computes the exact
     * rate from mc_platform_cycles_per_second(); this is its integer part. */
    *per_count = 1000000000u / MC_NRF_TIMER_HZ;
    return MC_COUNTER_INSTRUCTIONS;
}

void mc_platform_uart_write(const char *buf, size_t len)
{
    mc_nrf_uart_write(buf, len);
}

int mc_platform_uart_read(char *buf, size_t len, uint32_t timeout_ms)
{
    return mc_nrf_uart_read(buf, len, timeout_ms * (MC_NRF_TIMER_HZ / 1000u), mc_platform_cycles);
}

void mc_platform_exit(int code)
{
    mc_semihosting_exit(code);
}

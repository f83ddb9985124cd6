/* Platform for the nRF51822 on a BBC micro:bit, real silicon: UART0 to the DAPLink USB serial
 * (pins from the board data: MC_CONSOLE_TX_PIN, MC_CONSOLE_RX_PIN), TIMER0 as the counter.
 * Clock: the 16 MHz HFCLK the CPU always runs from (HFINT after reset, good to about 1%, enough
 * for 115200 baud). */
#include "mc_platform.h"
#include "nrf51_timer.h"
#include "nrf_uart.h"

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
    *per_count = 1u; /* TIMER0 at the 16 MHz core clock counts core clock cycles */
    return MC_COUNTER_CYCLES;
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
    (void)code;
    for (;;) { /* no debugger to tell: park the core (the UART has sent every byte) */
    }
}

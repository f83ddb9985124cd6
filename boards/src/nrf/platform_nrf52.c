/* Platform for the nRF52840 on the nRF52840 DK, real silicon: UART0 to the J-Link OB virtual
 * COM port (pins from the board data), DWT->CYCCNT as the counter.
 * Clock: the CPU runs at 64 MHz from HFCLK; the 32 MHz crystal (HFXO) is started because the
 * UART's baud rate needs better than the internal RC's accuracy (PS 1.7, 5.4 CLOCK). */
#include "dwt.h"
#include "mc_platform.h"
#include "nrf_uart.h"

#define REG(addr) (*(volatile uint32_t *)(addr))
#define CLOCK 0x40000000u
#define TASKS_HFCLKSTART REG(CLOCK + 0x000u)
#define EVENTS_HFCLKSTARTED REG(CLOCK + 0x100u)

void mc_platform_init(void)
{
    EVENTS_HFCLKSTARTED = 0u;
    TASKS_HFCLKSTART = 1u;
    while (EVENTS_HFCLKSTARTED == 0u) {
    }
    mc_nrf_uart_init(MC_CONSOLE_TX_PIN, MC_CONSOLE_RX_PIN);
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
    mc_nrf_uart_write(buf, len);
}

int mc_platform_uart_read(char *buf, size_t len, uint32_t timeout_ms)
{
    return mc_nrf_uart_read(buf, len, timeout_ms * (MC_CLOCK_HZ / 1000u), mc_platform_cycles);
}

void mc_platform_exit(int code)
{
    (void)code;
    for (;;) { /* no debugger to tell: park the core (the UART has sent every byte) */
    }
}

/* Platform for the Arm MPS2 FPGA images as emulated by QEMU (AN385 Cortex-M3, AN386
 * Cortex-M4, AN500 Cortex-M7, AN505 Cortex-M33): CMSDK APB UART0 console, CMSDK APB TIMER0
 * as the counter.
 *
 * The addresses and the timer's clock differ between images; each MCU's board data gives them
 * as MC_UART_BASE, MC_TIMER_BASE and MC_TIMER_HZ (boards/mcus/<image>.toml, from the Arm
 * application notes and QEMU's `info mtree`). */
#include "cmsdk_uart.h"
#include "mc_platform.h"
#include "poll_pause.h"
#include "semihosting.h"

#define REG(addr) (*(volatile uint32_t *)(addr))

#define TIMER0 MC_TIMER_BASE
#define TIMER_CTRL REG(TIMER0 + 0x00u) /* bit0 enable */
#define TIMER_VALUE REG(TIMER0 + 0x04u)
#define TIMER_RELOAD REG(TIMER0 + 0x08u)

#define TIMER_HZ MC_TIMER_HZ

void mc_platform_init(void)
{
    mc_cmsdk_uart_init(MC_UART_BASE);
    TIMER_CTRL = 0u;
    TIMER_RELOAD = 0xFFFFFFFFu;
    TIMER_VALUE = 0xFFFFFFFFu;
    TIMER_CTRL = 1u;
}

uint32_t mc_platform_cycles(void)
{
    /* TIMER0 counts down; negate it to get an up-count that wraps at 2^32. */
    return 0u - TIMER_VALUE;
}

uint32_t mc_platform_cycles_per_second(void)
{
    return TIMER_HZ;
}

uint32_t mc_platform_counter_unit(uint32_t *per_count)
{
    /* Under QEMU -icount shift=0 one instruction is 1 ns: 1e9 / 25 MHz = 40 per count. */
    *per_count = 40u;
    return MC_COUNTER_INSTRUCTIONS;
}

void mc_platform_uart_write(const char *buf, size_t len)
{
    mc_cmsdk_uart_write(MC_UART_BASE, buf, len);
}

int mc_platform_uart_read(char *buf, size_t len, uint32_t timeout_ms)
{
    return mc_cmsdk_uart_read(MC_UART_BASE, buf, len, timeout_ms * (TIMER_HZ / 1000u), mc_platform_cycles);
}

void mc_platform_exit(int code)
{
    mc_semihosting_exit(code);
}

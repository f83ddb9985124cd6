/* Platform for Arm MPS2 FPGA images (AN385 Cortex-M3, AN386 Cortex-M4) as emulated
 * by QEMU: CMSDK APB UART0 console, CMSDK APB TIMER0 as the counter.
 *
 * Addresses: Arm AN386 application note, "Memory map" (also QEMU hw/arm/mps2.c). */
#include "mc_platform.h"
#include "poll_pause.h"
#include "semihosting.h"

#define REG(addr) (*(volatile uint32_t *)(addr))

#define UART0 0x40004000u
#define UART_DATA REG(UART0 + 0x00u)
#define UART_STATE REG(UART0 + 0x04u) /* bit0 TX full, bit1 RX full */
#define UART_CTRL REG(UART0 + 0x08u)  /* bit0 TX enable, bit1 RX enable */
#define UART_BAUDDIV REG(UART0 + 0x10u)

#define TIMER0 0x40000000u
#define TIMER_CTRL REG(TIMER0 + 0x00u) /* bit0 enable */
#define TIMER_VALUE REG(TIMER0 + 0x04u)
#define TIMER_RELOAD REG(TIMER0 + 0x08u)

/* TIMER0 is clocked by the 25 MHz FPGA system clock (AN386). */
#define TIMER_HZ 25000000u

void mc_platform_init(void)
{
    UART_BAUDDIV = 16u; /* minimum legal divider; QEMU ignores the baud rate */
    UART_CTRL = 0x3u;
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
    size_t i;

    for (i = 0; i < len; i++) {
        while (UART_STATE & 1u) {
        }
        UART_DATA = (uint8_t)buf[i];
    }
}

int mc_platform_uart_read(char *buf, size_t len, uint32_t timeout_ms)
{
    uint32_t budget = timeout_ms * (TIMER_HZ / 1000u);
    uint32_t start = mc_platform_cycles();
    size_t n = 0;

    while (n < len && mc_platform_cycles() - start < budget) {
        if (UART_STATE & 2u)
            buf[n++] = (char)UART_DATA;
        else
            mc_poll_pause();
    }
    return (int)n;
}

void mc_platform_exit(int code)
{
    mc_semihosting_exit(code);
}

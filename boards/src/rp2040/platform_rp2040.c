/* Platform for the RP2040 on a Raspberry Pi Pico, real silicon (core 0; core 1 stays asleep in
 * the boot ROM).
 *
 * Clock (RP2040 datasheet 2.15, 2.16, 2.18): the crystal oscillator (MC_XOSC_HZ, 12 MHz on the
 * Pico) becomes clk_ref; PLL_SYS multiplies it by MC_PLL_FBDIV and divides by MC_PLL_POSTDIV1 *
 * MC_PLL_POSTDIV2 (arithmetic in boards/rpi-pico.toml) into clk_sys = MC_CLOCK_HZ, which also
 * clocks clk_peri (the UART). Console: UART0 (a PL011) on GPIO MC_CONSOLE_TX_PIN /
 * MC_CONSOLE_RX_PIN, function 2. Counter: the Cortex-M0+ has no DWT->CYCCNT, so SysTick counts
 * clk_sys, extended to 32 bits (cortex-m/systick.c). */
#include "mc_platform.h"
#include "systick.h"

#define REG(addr) (*(volatile uint32_t *)(addr))
#define CLR(addr) REG((addr) + 0x3000u) /* atomic bit clear alias (datasheet 2.1.2) */

#define RESETS 0x4000C000u
#define RESETS_RESET (RESETS + 0x0u)
#define RESETS_DONE REG(RESETS + 0x8u)
#define RESET_IO_BANK0 (1u << 5)
#define RESET_PADS_BANK0 (1u << 8)
#define RESET_PLL_SYS (1u << 12)
#define RESET_UART0 (1u << 22)

#define XOSC 0x40024000u
#define XOSC_CTRL REG(XOSC + 0x00u)    /* FREQ_RANGE [11:0] = 0xAA0 (1..15 MHz), ENABLE [23:12] = 0xFAB */
#define XOSC_STATUS REG(XOSC + 0x04u)  /* bit31 STABLE */
#define XOSC_STARTUP REG(XOSC + 0x0Cu) /* DELAY in units of 256 XOSC cycles */

#define CLOCKS 0x40008000u
#define CLK_REF_CTRL REG(CLOCKS + 0x30u)      /* SRC [1:0]: 2 = xosc */
#define CLK_REF_SELECTED REG(CLOCKS + 0x38u)
#define CLK_SYS_CTRL REG(CLOCKS + 0x3Cu)      /* SRC bit0: 0 = clk_ref, 1 = aux; AUXSRC [7:5]: 0 = pll_sys */
#define CLK_SYS_SELECTED REG(CLOCKS + 0x44u)
#define CLK_PERI_CTRL REG(CLOCKS + 0x48u)     /* ENABLE bit11, AUXSRC [7:5]: 0 = clk_sys */

#define PLL_SYS 0x40028000u
#define PLL_CS REG(PLL_SYS + 0x0u)        /* REFDIV [5:0], bit31 LOCK */
#define PLL_PWR REG(PLL_SYS + 0x4u)       /* bit0 PD, bit3 POSTDIVPD, bit5 VCOPD */
#define PLL_FBDIV_INT REG(PLL_SYS + 0x8u)
#define PLL_PRIM REG(PLL_SYS + 0xCu)      /* POSTDIV1 [18:16], POSTDIV2 [14:12] */

#define IO_BANK0_CTRL(pin) REG(0x40014000u + 0x04u + 8u * (pin)) /* FUNCSEL [4:0]: 2 = UART */
#define PADS_BANK0(pin) REG(0x4001C000u + 0x04u + 4u * (pin))     /* bit6 IE, bit7 OD */

#define UART0 0x40034000u
#define UART_DR REG(UART0 + 0x00u)
#define UART_FR REG(UART0 + 0x18u)   /* bit3 BUSY, bit4 RXFE, bit5 TXFF */
#define UART_IBRD REG(UART0 + 0x24u)
#define UART_FBRD REG(UART0 + 0x28u)
#define UART_LCR_H REG(UART0 + 0x2Cu) /* WLEN [6:5] = 3: 8 bits; FEN bit4 */
#define UART_CR REG(UART0 + 0x30u)    /* UARTEN bit0, TXE bit8, RXE bit9 */

#define BAUD 115200u

static void unreset(uint32_t mask)
{
    CLR(RESETS_RESET) = mask;
    while ((RESETS_DONE & mask) != mask) {
    }
}

static void clock_init(void)
{
    XOSC_CTRL = 0xAA0u;
    XOSC_STARTUP = ((MC_XOSC_HZ / 1000u) + 255u) / 256u; /* about 1 ms */
    XOSC_CTRL = 0xAA0u | (0xFABu << 12);
    while (!(XOSC_STATUS & (1u << 31))) {
    }
    CLK_REF_CTRL = 2u;
    while (!(CLK_REF_SELECTED & (1u << 2))) {
    }
    CLK_SYS_CTRL = 0u; /* clk_sys from clk_ref while PLL_SYS starts */
    while (!(CLK_SYS_SELECTED & 1u)) {
    }
    unreset(RESET_PLL_SYS);
    PLL_CS = 1u; /* REFDIV = 1 */
    PLL_FBDIV_INT = MC_PLL_FBDIV;
    PLL_PWR &= ~((1u << 0) | (1u << 5)); /* power up the PLL and its VCO */
    while (!(PLL_CS & (1u << 31))) {
    }
    PLL_PRIM = (MC_PLL_POSTDIV1 << 16) | (MC_PLL_POSTDIV2 << 12);
    PLL_PWR &= ~(1u << 3);
    CLK_SYS_CTRL = (0u << 5) | 1u; /* aux = pll_sys, then select aux */
    while (!(CLK_SYS_SELECTED & 2u)) {
    }
    CLK_PERI_CTRL = (1u << 11) | (0u << 5); /* clk_peri = clk_sys */
}

void mc_platform_init(void)
{
    uint32_t div64;

    clock_init();
    unreset(RESET_IO_BANK0 | RESET_PADS_BANK0 | RESET_UART0);
    /* PL011 divisor in 1/64ths: 64 * clk / (16 * baud), rounded. */
    div64 = (4u * MC_CLOCK_HZ + BAUD / 2u) / BAUD;
    UART_IBRD = div64 >> 6;
    UART_FBRD = div64 & 0x3Fu;
    UART_LCR_H = (3u << 5) | (1u << 4);
    UART_CR = 1u | (1u << 8) | (1u << 9);
    PADS_BANK0(MC_CONSOLE_RX_PIN) |= 1u << 6;
    IO_BANK0_CTRL(MC_CONSOLE_TX_PIN) = 2u;
    IO_BANK0_CTRL(MC_CONSOLE_RX_PIN) = 2u;
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
    *per_count = 1u; /* SysTick (processor clock source) counts core clock cycles */
    return MC_COUNTER_CYCLES;
}

void mc_platform_uart_write(const char *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        while (UART_FR & (1u << 5)) {
        }
        UART_DR = (uint8_t)buf[i];
    }
}

int mc_platform_uart_read(char *buf, size_t len, uint32_t timeout_ms)
{
    uint32_t budget = timeout_ms * (MC_CLOCK_HZ / 1000u);
    uint32_t start = mc_platform_cycles();
    size_t n = 0;

    while (n < len && mc_platform_cycles() - start < budget) {
        if (!(UART_FR & (1u << 4)))
            buf[n++] = (char)UART_DR;
    }
    return (int)n;
}

void mc_platform_exit(int code)
{
    (void)code;
    while (UART_FR & (1u << 3)) { /* drain the console, then park */
    }
    for (;;) {
    }
}

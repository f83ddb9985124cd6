#include "poll_pause.h"
#include "nrf_uart.h"

#define REG(addr) (*(volatile uint32_t *)(addr))
#define UART0 0x40002000u
#define TASKS_STARTRX REG(UART0 + 0x000u)
#define TASKS_STARTTX REG(UART0 + 0x008u)
#define EVENTS_RXDRDY REG(UART0 + 0x108u)
#define EVENTS_TXDRDY REG(UART0 + 0x11Cu)
#define ENABLE REG(UART0 + 0x500u)     /* 4: UART */
#define PSELTXD REG(UART0 + 0x50Cu)
#define PSELRXD REG(UART0 + 0x514u)
#define RXD REG(UART0 + 0x518u)
#define TXD REG(UART0 + 0x51Cu)
#define BAUDRATE REG(UART0 + 0x524u)
#define CONFIG REG(UART0 + 0x56Cu)     /* 0: no parity, no flow control */
#define BAUD_115200 0x01D7E000u

#define GPIO_P0 0x50000000u
#define GPIO_OUTSET REG(GPIO_P0 + 0x508u)
#define GPIO_DIRSET REG(GPIO_P0 + 0x518u)

void mc_nrf_uart_init(uint32_t tx_pin, uint32_t rx_pin)
{
    /* The TX pin idles high as an output before the UART takes it (PS: "UART pin configuration"). */
    GPIO_OUTSET = 1u << tx_pin;
    GPIO_DIRSET = 1u << tx_pin;
    PSELTXD = tx_pin;
    PSELRXD = rx_pin;
    BAUDRATE = BAUD_115200;
    CONFIG = 0u;
    ENABLE = 4u;
    TASKS_STARTTX = 1u;
    TASKS_STARTRX = 1u;
}

void mc_nrf_uart_write(const char *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        EVENTS_TXDRDY = 0u;
        TXD = (uint8_t)buf[i];
        while (EVENTS_TXDRDY == 0u) {
        }
    }
}

int mc_nrf_uart_read(char *buf, size_t len, uint32_t budget, uint32_t (*now)(void))
{
    uint32_t start = now();
    size_t n = 0;

    while (n < len && now() - start < budget) {
        if (EVENTS_RXDRDY != 0u) {
            EVENTS_RXDRDY = 0u;
            buf[n++] = (char)RXD;
        } else {
            mc_poll_pause();
        }
    }
    return (int)n;
}

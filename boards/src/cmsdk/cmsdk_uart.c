#include "cmsdk_uart.h"
#include "poll_pause.h"

#define REG(addr) (*(volatile uint32_t *)(addr))
#define DATA(b) REG((b) + 0x00u)
#define STATE(b) REG((b) + 0x04u) /* bit0 TX full, bit1 RX full */
#define CTRL(b) REG((b) + 0x08u)  /* bit0 TX enable, bit1 RX enable */
#define BAUDDIV(b) REG((b) + 0x10u)

void mc_cmsdk_uart_init(uint32_t base)
{
    BAUDDIV(base) = 16u; /* minimum legal divider; QEMU ignores the baud rate */
    CTRL(base) = 0x3u;
}

void mc_cmsdk_uart_write(uint32_t base, const char *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        while (STATE(base) & 1u) {
        }
        DATA(base) = (uint8_t)buf[i];
    }
}

int mc_cmsdk_uart_read(uint32_t base, char *buf, size_t len, uint32_t budget, uint32_t (*now)(void))
{
    uint32_t start = now();
    size_t n = 0;

    while (n < len && now() - start < budget) {
        if (STATE(base) & 2u)
            buf[n++] = (char)DATA(base);
        else
            mc_poll_pause();
    }
    return (int)n;
}

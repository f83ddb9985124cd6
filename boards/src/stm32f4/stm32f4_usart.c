#include "stm32f4_usart.h"
#include "poll_pause.h"

#define SR(b) MC_REG((b) + 0x00u)  /* bit7 TXE, bit6 TC, bit5 RXNE */
#define DR(b) MC_REG((b) + 0x04u)
#define BRR(b) MC_REG((b) + 0x08u)
#define CR1(b) MC_REG((b) + 0x0Cu) /* bit13 UE, bit3 TE, bit2 RE */

void mc_stm32_usart_init(uint32_t base, uint32_t brr)
{
    BRR(base) = brr;
    CR1(base) = (1u << 13) | (1u << 3) | (1u << 2);
}

void mc_stm32_usart_write(uint32_t base, const char *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        while (!(SR(base) & (1u << 7))) {
        }
        DR(base) = (uint8_t)buf[i];
    }
}

int mc_stm32_usart_read(uint32_t base, char *buf, size_t len, uint32_t budget, uint32_t (*now)(void))
{
    uint32_t start = now();
    size_t n = 0;

    while (n < len && now() - start < budget) {
        if (SR(base) & (1u << 5))
            buf[n++] = (char)DR(base);
        else
            mc_poll_pause();
    }
    return (int)n;
}

void mc_stm32_usart_flush(uint32_t base)
{
    while (!(SR(base) & (1u << 6))) {
    }
}

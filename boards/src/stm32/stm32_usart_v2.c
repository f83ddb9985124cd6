#include "stm32_usart_v2.h"

#define REG(addr) (*(volatile uint32_t *)(addr))
#define CR1(b) REG((b) + 0x00u) /* bit0 UE, bit2 RE, bit3 TE */
#define BRR(b) REG((b) + 0x0Cu)
#define ISR(b) REG((b) + 0x1Cu) /* bit5 RXNE, bit6 TC, bit7 TXE */
#define ICR(b) REG((b) + 0x20u) /* bit3 ORECF */
#define RDR(b) REG((b) + 0x24u)
#define TDR(b) REG((b) + 0x28u)

void mc_stm32_usart_v2_init(uint32_t base, uint32_t brr)
{
    CR1(base) = 0u;
    BRR(base) = brr;
    CR1(base) = (1u << 3) | (1u << 2) | 1u;
}

void mc_stm32_usart_v2_write(uint32_t base, const char *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        while (!(ISR(base) & (1u << 7))) {
        }
        TDR(base) = (uint8_t)buf[i];
    }
}

int mc_stm32_usart_v2_read(uint32_t base, char *buf, size_t len, uint32_t budget, uint32_t (*now)(void))
{
    uint32_t start = now();
    size_t n = 0;

    ICR(base) = 1u << 3; /* an overrun from before would block RXNE */
    while (n < len && now() - start < budget) {
        if (ISR(base) & (1u << 5))
            buf[n++] = (char)RDR(base);
    }
    return (int)n;
}

void mc_stm32_usart_v2_flush(uint32_t base)
{
    while (!(ISR(base) & (1u << 6))) {
    }
}

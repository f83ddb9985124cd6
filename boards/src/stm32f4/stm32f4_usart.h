/* Polled USART helpers shared by the STM32F4 platforms (RM0390 section 25 / RM0090 section 30). */
#ifndef MC_STM32F4_USART_H
#define MC_STM32F4_USART_H

#include <stddef.h>
#include <stdint.h>

#define MC_REG(addr) (*(volatile uint32_t *)(addr))

/* RCC, RM0390 6.3 / RM0090 7.3 */
#define MC_RCC 0x40023800u
#define MC_RCC_AHB1ENR MC_REG(MC_RCC + 0x30u)
#define MC_RCC_APB1ENR MC_REG(MC_RCC + 0x40u)
#define MC_RCC_APB2ENR MC_REG(MC_RCC + 0x44u)

/* 8N1, TX+RX enabled, brr = f_pclk / baud (oversampling by 16). */
void mc_stm32_usart_init(uint32_t base, uint32_t brr);
void mc_stm32_usart_write(uint32_t base, const char *buf, size_t len);
/* Reads while elapsed() < budget; elapsed() is in the caller's counter units. */
int mc_stm32_usart_read(uint32_t base, char *buf, size_t len, uint32_t budget, uint32_t (*now)(void));
/* Waits until the last byte left the shift register. */
void mc_stm32_usart_flush(uint32_t base);

#endif

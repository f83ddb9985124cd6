/* Polled U(S)ART with the register layout of the STM32F7, L4 and H7 (ISR/TDR/RDR; RM0385 31.8,
 * RM0432 50.8 and 51.7 for LPUART, RM0433 48.7). 8N1, oversampling by 16. */
#ifndef MC_STM32_USART_V2_H
#define MC_STM32_USART_V2_H

#include <stddef.h>
#include <stdint.h>

/* brr: f_ck / baud for a USART, 256 * f_ck / baud for an LPUART. */
void mc_stm32_usart_v2_init(uint32_t base, uint32_t brr);
void mc_stm32_usart_v2_write(uint32_t base, const char *buf, size_t len);
/* Reads while now() - start < budget; now() and budget are in the caller's counter units. */
int mc_stm32_usart_v2_read(uint32_t base, char *buf, size_t len, uint32_t budget, uint32_t (*now)(void));
/* Waits until the last byte has left the shift register. */
void mc_stm32_usart_v2_flush(uint32_t base);

#endif

/* Polled UART0 of the nRF51 and nRF52 (the legacy UART without EasyDMA, at 0x40002000 on both:
 * nRF51 RM 3.0 section 29, nRF52840 PS 1.7 section 6.33), 115200 baud 8N1, no flow control. */
#ifndef MC_NRF_UART_H
#define MC_NRF_UART_H

#include <stddef.h>
#include <stdint.h>

/* tx_pin, rx_pin: GPIO P0 pin numbers. */
void mc_nrf_uart_init(uint32_t tx_pin, uint32_t rx_pin);
void mc_nrf_uart_write(const char *buf, size_t len);
/* Reads while now() - start < budget; now() and budget are in the caller's counter units. */
int mc_nrf_uart_read(char *buf, size_t len, uint32_t budget, uint32_t (*now)(void));

#endif

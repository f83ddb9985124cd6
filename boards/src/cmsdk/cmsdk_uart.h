/* Polled CMSDK APB UART (Arm DDI 0479, "APB UART"), shared by the MPS2/MPS3 platforms. */
#ifndef MC_CMSDK_UART_H
#define MC_CMSDK_UART_H

#include <stddef.h>
#include <stdint.h>

void mc_cmsdk_uart_init(uint32_t base);
void mc_cmsdk_uart_write(uint32_t base, const char *buf, size_t len);
/* Reads while now() - start < budget; now() and budget are in the caller's counter units. */
int mc_cmsdk_uart_read(uint32_t base, char *buf, size_t len, uint32_t budget, uint32_t (*now)(void));

#endif

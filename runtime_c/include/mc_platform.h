/* mc_platform.h: the porting layer. Each board implements these six functions in
 * its own platform .c file (chosen by board data, never by #ifdef here). */
#ifndef MC_PLATFORM_H
#define MC_PLATFORM_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Clocks, console UART and cycle counter. Called once before anything else. */
void mc_platform_init(void);
/* Free-running up-counter: DWT->CYCCNT on real silicon, a timer under QEMU. Wraps at 2^32. */
uint32_t mc_platform_cycles(void);
/* Rate of mc_platform_cycles(), in counts per second. */
uint32_t mc_platform_cycles_per_second(void);
/* Blocking write of len bytes to the console. */
void mc_platform_uart_write(const char *buf, size_t len);
/* Reads up to len bytes, waiting at most timeout_ms in total. Returns the bytes read. */
int mc_platform_uart_read(char *buf, size_t len, uint32_t timeout_ms);
/* Semihosting exit under QEMU, process exit on the host; parks the core on real boards. */
void mc_platform_exit(int code);

#ifdef __cplusplus
}
#endif

#endif /* MC_PLATFORM_H */

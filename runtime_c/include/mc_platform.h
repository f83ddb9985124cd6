/* mc_platform.h: the porting layer. Each board implements these functions in its own
 * platform .c file (chosen by board data, never by #ifdef here); mc_platform_reset is
 * shared by every Cortex-M (boards/src/cortex-m/reset.c). */
#ifndef MC_PLATFORM_H
#define MC_PLATFORM_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MC_COUNTER_CYCLES 0u
#define MC_COUNTER_INSTRUCTIONS 1u
#define MC_COUNTER_NANOSECONDS 2u

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
/* What one count of mc_platform_cycles() is, for profiles: MC_COUNTER_CYCLES (core clock
 * cycles: DWT->CYCCNT on silicon), MC_COUNTER_INSTRUCTIONS (a timer under QEMU -icount,
 * BENCHMARK.md) or MC_COUNTER_NANOSECONDS (the host); *per_count is how many of them. */
uint32_t mc_platform_counter_unit(uint32_t *per_count);
/* Restart from the reset vector (the agent's RESET command). Never returns. */
void mc_platform_reset(void);
/* Semihosting exit under QEMU, process exit on the host; parks the core on real boards. */
void mc_platform_exit(int code);

#ifdef __cplusplus
}
#endif

#endif /* MC_PLATFORM_H */

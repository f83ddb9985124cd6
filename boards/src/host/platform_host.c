/* Platform for native host builds (tests): stdio console, CLOCK_MONOTONIC in ns. */
#define _POSIX_C_SOURCE 199309L
#include "mc_platform.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void mc_platform_init(void)
{
}

uint32_t mc_platform_cycles(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

uint32_t mc_platform_cycles_per_second(void)
{
    return 1000000000u;
}

void mc_platform_uart_write(const char *buf, size_t len)
{
    fwrite(buf, 1, len, stdout);
}

int mc_platform_uart_read(char *buf, size_t len, uint32_t timeout_ms)
{
    (void)timeout_ms; /* blocking read; tests feed stdin */
    return (int)fread(buf, 1, len, stdin);
}

void mc_platform_exit(int code)
{
    fflush(stdout);
    exit(code);
}

/* The host measures no stack (main.c prints no MC-STACK line for 0). */
uint32_t mc_stack_peak_bytes(void)
{
    return 0;
}

/* Platform for native host builds (tests): stdio console, CLOCK_MONOTONIC in ns.
 * The host agent talks over stdin/stdout (a pipe from microcompile); the end of stdin
 * ends the process, and a reset re-executes it with the same pipes. */
#define _POSIX_C_SOURCE 199309L
#include "mc_platform.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void mc_platform_init(void)
{
    setvbuf(stdin, NULL, _IONBF, 0); /* nothing read ahead is lost at a reset's exec */
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

uint32_t mc_platform_counter_unit(uint32_t *per_count)
{
    *per_count = 1u;
    return MC_COUNTER_NANOSECONDS;
}

void mc_platform_uart_write(const char *buf, size_t len)
{
    fwrite(buf, 1, len, stdout);
}

int mc_platform_uart_read(char *buf, size_t len, uint32_t timeout_ms)
{
    size_t n;

    (void)timeout_ms; /* blocking read from the pipe */
    fflush(stdout);   /* what was written must reach the host before we wait for it */
    n = fread(buf, 1, len, stdin);
    if (n == 0 && feof(stdin))
        mc_platform_exit(0); /* the host closed the link */
    return (int)n;
}

void mc_platform_reset(void)
{
    fflush(stdout);
    execl("/proc/self/exe", "firmware", (char *)NULL);
    mc_platform_exit(1); /* no /proc: end instead */
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

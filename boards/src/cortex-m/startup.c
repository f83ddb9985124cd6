/* Generic Cortex-M startup: vector table, .data copy, .bss and arena clear, FPU (and Helium)
 * enable, stack painting, main.
 *
 * Only the 16 core exceptions are listed: the firmware enables no peripheral interrupt, so
 * no vendor IRQ table is needed. A platform that uses SysTick defines SysTick_Handler (the
 * weak default below parks the core). A fault prints `MC-ERROR fault` on the console and
 * exits through the platform, so a crash under QEMU ends the run at once instead of hanging
 * until the host's timeout. Symbols come from the project's linker script (linker.ld). */
#include <stdint.h>

#include "mc_platform.h"

#define MC_STACK_PAINT 0x5AC3A55Cu /* what an unused stack word holds */

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _sarena, _earena, _sstack, _estack;
extern int main(void);

void Reset_Handler(void);
void Default_Handler(void);
void Fault_Handler(void);
void SysTick_Handler(void) __attribute__((weak, alias("Default_Handler")));
uint32_t mc_stack_peak_bytes(void);

static void zero(uint32_t *dst, const uint32_t *end)
{
    while (dst < end)
        *dst++ = 0;
}

/* Fill the free stack area below the current stack pointer (minus a margin for this frame). */
static void paint_stack(void)
{
    uint32_t *p = &_sstack, *sp;

    __asm__ volatile("mov %0, sp" : "=r"(sp));
    while (p < sp - 16)
        *p++ = MC_STACK_PAINT;
}

void Reset_Handler(void)
{
    uint32_t *src = &_sidata;
    uint32_t *dst;

    for (dst = &_sdata; dst < &_edata;)
        *dst++ = *src++;
    zero(&_sbss, &_ebss);
    zero(&_sarena, &_earena);
#if defined(__ARM_FP)
    /* Hard-float builds: grant full access to CP10/CP11 (CPACR, ARMv7-M ARM B3.2.20), which
     * also enables Helium on an Armv8.1-M core, before the first FP or vector instruction.
     * Soft-float cores have no FPU to enable. */
    *(volatile uint32_t *)0xE000ED88u |= (0xFu << 20);
    __asm__ volatile("dsb\n\tisb");
#endif
    paint_stack();
    (void)main();
    for (;;) {
    }
}

/* Bytes of stack used so far: from _estack down to the lowest word that lost its paint. */
uint32_t mc_stack_peak_bytes(void)
{
    const uint32_t *p = &_sstack;

    while (p < &_estack && *p == MC_STACK_PAINT)
        ++p;
    return (uint32_t)((const uint8_t *)&_estack - (const uint8_t *)p);
}

void Default_Handler(void)
{
    for (;;) {
    }
}

void Fault_Handler(void)
{
    static const char msg[] = "\nMC-ERROR fault\n";

    mc_platform_uart_write(msg, sizeof msg - 1);
    mc_platform_exit(1);
    for (;;) {
    }
}

typedef void (*mc_vector_t)(void);

__attribute__((section(".isr_vector"), used)) static const mc_vector_t mc_vectors[16] = {
    (mc_vector_t)(uintptr_t)&_estack, /* initial SP */
    Reset_Handler,
    Default_Handler, /* NMI */
    Fault_Handler,   /* HardFault */
    Fault_Handler,   /* MemManage */
    Fault_Handler,   /* BusFault */
    Fault_Handler,   /* UsageFault */
    Fault_Handler,   /* SecureFault (Armv8-M) */
    0, 0, 0,
    Default_Handler, /* SVCall */
    Default_Handler, /* DebugMonitor */
    0,
    Default_Handler, /* PendSV */
    SysTick_Handler,
};

/* Generic Cortex-M startup: vector table, .data copy, .bss clear, FPU enable, main.
 *
 * Only the 16 core exceptions are listed: the firmware enables no peripheral
 * interrupt, so no vendor IRQ table is needed. Symbols come from the project's
 * linker script (linker.ld). */
#include <stdint.h>

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
extern int main(void);

void Reset_Handler(void);
void Default_Handler(void);

void Reset_Handler(void)
{
    uint32_t *src = &_sidata;
    uint32_t *dst;

    for (dst = &_sdata; dst < &_edata;)
        *dst++ = *src++;
    for (dst = &_sbss; dst < &_ebss;)
        *dst++ = 0;
#if defined(__ARM_FP)
    /* Hard-float builds: grant full access to CP10/CP11 (CPACR, ARMv7-M ARM B3.2.20)
     * before the first FP instruction. Soft-float cores (cortex-m3) have no CPACR. */
    *(volatile uint32_t *)0xE000ED88u |= (0xFu << 20);
    __asm__ volatile("dsb\n\tisb");
#endif
    (void)main();
    for (;;) {
    }
}

void Default_Handler(void)
{
    for (;;) {
    }
}

typedef void (*mc_vector_t)(void);

__attribute__((section(".isr_vector"), used)) static const mc_vector_t mc_vectors[16] = {
    (mc_vector_t)(uintptr_t)&_estack, /* initial SP */
    Reset_Handler,
    Default_Handler, /* NMI */
    Default_Handler, /* HardFault */
    Default_Handler, /* MemManage */
    Default_Handler, /* BusFault */
    Default_Handler, /* UsageFault */
    0, 0, 0, 0,
    Default_Handler, /* SVCall */
    Default_Handler, /* DebugMonitor */
    0,
    Default_Handler, /* PendSV */
    Default_Handler, /* SysTick */
};

#include "semihosting.h"

#include <stdint.h>

#define SYS_EXIT 0x18u
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u /* QEMU: exit status 0 */
#define ADP_STOPPED_RUNTIME_ERROR 0x20023u    /* QEMU: exit status 1 */

void mc_semihosting_exit(int code)
{
    register uint32_t r0 __asm__("r0") = SYS_EXIT;
    register uint32_t r1 __asm__("r1") = code == 0 ? ADP_STOPPED_APPLICATION_EXIT : ADP_STOPPED_RUNTIME_ERROR;

    /* On 32-bit ARM, SYS_EXIT takes the reason code itself in r1 (not a pointer). */
    __asm__ volatile("bkpt #0xAB" : "+r"(r0) : "r"(r1) : "memory");
    for (;;) {
    }
}

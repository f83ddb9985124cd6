/* A pause between two polls of an empty UART receive register.
 *
 * Under QEMU every device register read takes the emulator's global lock, which its I/O
 * thread also needs to hand the guest the next received byte; a loop that does nothing
 * but read the register can starve that thread for a second or more (measured on the
 * MPS2 and STM32 twins). A few hundred plain instructions between reads let it in. On
 * silicon the pause is a few microseconds, well under one byte time at 115200 baud (87 us). */
#ifndef MC_POLL_PAUSE_H
#define MC_POLL_PAUSE_H

#include <stdint.h>

static inline void mc_poll_pause(void)
{
    volatile uint32_t i;

    for (i = 0; i < 512u; i++) {
    }
}

#endif

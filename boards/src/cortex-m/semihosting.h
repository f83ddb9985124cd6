/* ARM semihosting, used by emulated twins to end QEMU with an exit status. */
#ifndef MC_SEMIHOSTING_H
#define MC_SEMIHOSTING_H

/* SYS_EXIT: QEMU exits with status 0 for code 0, 1 otherwise. Never returns. */
void mc_semihosting_exit(int code);

#endif

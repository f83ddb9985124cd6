/* RP2040 second-stage boot loader (boot2) for any QSPI flash: the source of the bytes in
 * boot2_03h.c, which tests/target/test_rp2040_boot2.py assembles again and checks, CRC included.
 *
 * The boot ROM copies the first 256 bytes of flash into SRAM (0x20041f00), checks the CRC32 of
 * the first 252 against the last 4, and calls it (RP2040 datasheet 2.8.1). This stage sets the
 * flash interface (SSI, datasheet 4.10) to serve reads of the 0x10000000 window with the
 * standard serial READ command 03h, which every SPI flash supports, and then starts the
 * firmware through its vector table at 0x10000100: VTOR, stack pointer, reset handler. */
    .syntax unified
    .cpu cortex-m0plus
    .thumb
    .section .text
    .global _boot2
    .thumb_func
_boot2:
    ldr r3, =0x18000000      /* XIP_SSI_BASE */
    movs r1, #0
    str r1, [r3, #0x08]      /* SSIENR = 0: disable the SSI to configure it */
    movs r1, #4
    str r1, [r3, #0x14]      /* BAUDR = 4: SCK = clk_sys / 4 */
    ldr r1, =0x001F0300      /* CTRLR0: DFS_32 = 31 (32-bit frames), TMOD = 3 (EEPROM read), standard SPI */
    str r1, [r3, #0x00]
    ldr r1, =0x03000218      /* SPI_CTRLR0: XIP_CMD = 0x03, INST_L = 2 (8 bits), ADDR_L = 6 (24 bits) */
    ldr r0, =0x180000F4      /* SPI_CTRLR0 */
    str r1, [r0]
    movs r1, #0
    str r1, [r3, #0x04]      /* CTRLR1 = 0: one data frame per transfer */
    movs r1, #1
    str r1, [r3, #0x08]      /* SSIENR = 1 */
    ldr r0, =0x10000100      /* the firmware's vector table */
    ldr r1, =0xE000ED08      /* VTOR */
    str r0, [r1]
    ldmia r0!, {r1, r2}      /* initial SP, reset handler */
    msr msp, r1
    bx r2
    .ltorg

/* Copy micro-kernels (mc_copy.h) for Armv8.1-M cores with Helium (MVE): the Cortex-M55.
 * Copied into a project only when the board's core has MVE.
 *
 * mc_copy_mve_s8 copies a run of int8 (a run of input channels of a conv's im2col column,
 * schedule/gemm_schedule.py) with mc_mve.h's mc_copy_run_mve: 16 bytes per VLDRB/VSTRB pair,
 * the last n % 16 under a tail predicate (VCTP). No alignment is required.
 * The byte loop it replaces took five instructions per byte. */
#if !defined(__ARM_FEATURE_MVE)
#error "microcompile: this kernel uses Helium (MVE), which the compiler flags do not enable: compile with the core's -mcpu (e.g. -mcpu=cortex-m55), or export the model for a board whose core lacks Helium"
#endif
#include <arm_mve.h>

#include "mc_copy.h"
#include "mc_mve.h"

void mc_copy_mve_s8(int8_t *dst, const int8_t *src, int32_t n)
{
    mc_copy_run_mve(dst, src, n);
}

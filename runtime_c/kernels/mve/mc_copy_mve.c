/* Copy micro-kernels (mc_copy.h) for Armv8.1-M cores with Helium (MVE): the Cortex-M55.
 * Copied into a project only when the board's core has MVE.
 *
 * mc_copy_mve_s8 copies a run of int8 (a run of input channels of a conv's im2col column,
 * schedule/gemm_schedule.py): 16 bytes per VLDRB/VSTRB pair, the last n % 16 under a tail
 * predicate (VCTP), so nothing past either end is read or written. No alignment is required.
 * The byte loop it replaces took five instructions per byte. */
#if !defined(__ARM_FEATURE_MVE)
#error "microcompile: this kernel uses Helium (MVE), which the compiler flags do not enable: compile with the core's -mcpu (e.g. -mcpu=cortex-m55), or export the model for a board whose core lacks Helium"
#endif
#include <arm_mve.h>

#include "mc_copy.h"

void mc_copy_mve_s8(int8_t *dst, const int8_t *src, int32_t n)
{
    for (int32_t i = 0; i < n; i += 16) {
        const mve_pred16_t tail = vctp8q((uint32_t)(n - i));

        vstrbq_p_s8(dst + i, vldrbq_z_s8(src + i, tail), tail);
    }
}

/* mc_copy.h: data-movement micro-kernels for scratch buffers (e.g. an im2col column).
 *
 *   mc_widen_dsp_s8_s16(dst, src, n):   dst[i] = (int16_t)src[i] for i < n
 *
 * The `tensorize` schedule primitive reaches it from a copy loop of that shape; it uses
 * SXTB16 + PKHBT/PKHTB (4 elements per 10 instructions) and is compiled only for cores
 * with the DSP extension. Other cores keep the plain loop, which is as fast as any call
 * there. No alignment is required.
 *
 *   mc_unpack_s4_s8(dst, src, n):       dst[i] = the i-th signed 4-bit value of src, for i < n
 *   mc_unpack_s4_s16(dst, src, n):      the same into int16
 *
 * expands weights stored as packed int4 (two per byte, the first in the low nibble) into
 * scratch at the start of a kernel (the schedule primitive store_int4); every core.
 *
 *   mc_move_bytes(dst, src, n):         memmove(dst, src, n)
 *
 * moves the rows a patch stage's window keeps from one band to the next to the window's
 * top (the regions overlap when more rows are kept than dropped); every core.
 *
 *   mc_copy_mve_s8(dst, src, n):        dst[i] = src[i] for i < n (int8, no overlap)
 *
 * copies a run of input channels into a conv's im2col column on Helium cores (16 bytes per
 * vector load and store); other cores keep the plain loop. */
#ifndef MC_COPY_H
#define MC_COPY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void mc_widen_dsp_s8_s16(int16_t *dst, const int8_t *src, int32_t n);
void mc_unpack_s4_s8(int8_t *dst, const uint8_t *src, int32_t n);
void mc_unpack_s4_s16(int16_t *dst, const uint8_t *src, int32_t n);
void mc_move_bytes(void *dst, const void *src, int32_t n);
void mc_copy_mve_s8(int8_t *dst, const int8_t *src, int32_t n);

#ifdef __cplusplus
}
#endif

#endif /* MC_COPY_H */

/* mc_matmul.h: int8 matrix multiply of two run-time operands (BATCH_MATMUL: attention's
 * Q K^T and P V), bit-exact with TFLite's reference_ops::BatchMatMul for int8. */
#ifndef MC_MATMUL_H
#define MC_MATMUL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One batch element: y[m][n] = clamp(requantize(sum_k (a(m,k) + lhs_offset) *
 * (b(k,n) + rhs_offset)) + output_offset), a(m,k) at a[m * a_row_stride + k * a_col_stride],
 * b(k,n) at b[k * b_row_stride + n * b_col_stride] (any transposition), y row-major [rows][cols].
 * `rounding`: 0 gemmlowp's double rounding (mc_mul_by_qm), 1 single rounding, 2 single
 * rounding ties away from zero, 3 ties to even (mc_fixedpoint.h). */
typedef struct {
    int32_t rows, cols, depth;
    int32_t a_row_stride, a_col_stride, b_row_stride, b_col_stride;
    int32_t lhs_offset, rhs_offset, output_offset;
    int32_t output_multiplier, output_shift, act_min, act_max, rounding;
} mc_matmul_params_t;

/* The bytes of scratch mc_matmul_s8 needs: b with its offset as int16, one row of depth
 * (rounded up to 4) per column. */
#define MC_MATMUL_SCRATCH_BYTES(cols, depth) ((int32_t)(cols) * (((int32_t)(depth) + 3) & ~3) * 2)

/* b is first copied into scratch, offset added, column by column (k contiguous, each group of
 * four k stored k0 k2 k1 k3, zero-padded): on a DSP core the inner loop takes two k of a row of
 * a (SXTB16 of one load, the offset added by SADD16) and two SMLAD for four columns at a time. */
void mc_matmul_s8(int8_t *y, const int8_t *a, const int8_t *b, int16_t *scratch, const mc_matmul_params_t *params);

/* mc_matmul_s8 in two steps, for a b shared by several calls (a fused attention head's K or
 * V, multiplied by one query row at a time): the packing of b into scratch, then the product
 * with a packed b, which may be called any number of times. */
void mc_matmul_s8_pack_b(int16_t *scratch, const int8_t *b, const mc_matmul_params_t *params);
void mc_matmul_s8_packed(int8_t *y, const int8_t *a, const int16_t *packed_b, const mc_matmul_params_t *params);

/* The 16x8 form (TFLite's int16 BATCH_MATMUL): symmetric int16 operands (the offsets are 0),
 * an int64 sum, requantized as the 16x8 kernels do (MultiplyByQuantizedMultiplier of an int64,
 * mc_s16.h), clamped to act_min..act_max; `rounding` is not read. No scratch. */
void mc_matmul_s16(int16_t *y, const int16_t *a, const int16_t *b, const mc_matmul_params_t *params);

#ifdef __cplusplus
}
#endif

#endif /* MC_MATMUL_H */

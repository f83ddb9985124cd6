/* mc_gemm_s4.h: the int4 twins of mc_gemm.h's panel kernels, for cores with the DSP extension
 * (kernels/dsp/mc_gemm_s4_dsp.c):
 *
 *   mc_gemm_p4_dsp_s4(c, a, b, params)                          as mc_gemm_p4_dsp_s8
 *   mc_gemm_p4_rq_dsp_s4(y, a, b, bias, mult, rshift, params)   as mc_gemm_p4_rq_dsp_s8
 *
 * on the same panels (four rows, groups of four k) stored as packed int4: each group's 16
 * values in two words of nibbles, in the order tir/intrinsics_gemm.py S4_GROUP_ORDER gives,
 * each nibble holding the weight plus 8 (kernels/dsp/mc_gemm_s4_dsp.c says why). The schedule
 * primitive store_int4 (in place) reaches them; the weights never leave flash. */
#ifndef MC_GEMM_S4_H
#define MC_GEMM_S4_H

#include <stdint.h>

#include "mc_gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

void mc_gemm_p4_dsp_s4(int32_t *c, const uint8_t *a, const int8_t *b, const mc_gemm_params_t *params);
void mc_gemm_p4_rq_dsp_s4(int8_t *y, const uint8_t *a, const int8_t *b, const int32_t *bias, const int32_t *mult,
                          const int32_t *rshift, const mc_gemm_rq_params_t *params);

#ifdef __cplusplus
}
#endif

#endif /* MC_GEMM_S4_H */

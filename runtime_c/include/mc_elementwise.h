/* mc_elementwise.h: elementwise int8 micro-kernels.
 *
 *   mc_add_tables_mve_s8(y, a, b, ta, tb, &{n, mult, rshift, out_offset, act_min, act_max}):
 *       for i < n:
 *           s = ta[a[i] + 128] + tb[b[i] + 128]
 *           y[i] = clamp(mc_mul_by_qm_pos_rshift(s, mult, rshift) + out_offset, act_min, act_max)
 *
 * an int8 ADD whose inputs' rescales are 256-entry int32 tables (schedule/tabulate.py),
 * on Helium cores (kernels/mve/mc_elementwise_mve.c): four elements per vector, the tables read
 * by gathers. mult >= 0, rshift >= 1 and |s| < 2^30: mc_requant.h's cheap exact domain, which
 * the lowering proves before it emits mc_mul_by_qm_pos_rshift. */
#ifndef MC_ELEMENTWISE_H
#define MC_ELEMENTWISE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t n;                     /* elements */
    int32_t mult, rshift;          /* the output rescale */
    int32_t out_offset, act_min, act_max;
} mc_add_tables_params_t;

void mc_add_tables_mve_s8(int8_t *y, const int8_t *a, const int8_t *b, const int32_t *ta, const int32_t *tb,
                          const mc_add_tables_params_t *params);

#ifdef __cplusplus
}
#endif

#endif /* MC_ELEMENTWISE_H */

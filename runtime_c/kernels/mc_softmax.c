/* int8 softmax, TFLite reference_ops::Softmax with gemmlowp fixed point.
 *
 * Every helper mirrors the function of the same name in microcompile/ir/fixedpoint.py
 * (the Python oracle); raw values are int32 fixed point with the integer bits named in
 * the comments (Q5.26 scaled differences, Q0.31 exps, Q12.19 sum). Additions that gemmlowp
 * lets wrap are done in uint32 so that the C is defined behaviour. */
#include "mc_softmax.h"
#include "mc_fixedpoint.h"

#define SCALED_DIFF_INTEGER_BITS 5
#define ACCUMULATION_INTEGER_BITS 12

/* exp(a) for a in [-1/4, 0), Q0.31 in and out: Taylor series around -1/8. */
static int32_t exp_on_interval_between_negative_one_quarter_and_0_excl(int32_t a)
{
    const int32_t constant_term = 1895147668;       /* exp(-1/8) in Q0.31 */
    const int32_t constant_1_over_3 = 715827883;
    const int32_t x = mc_add_wrap(a, 1 << 28);          /* a + 1/8 */
    const int32_t x2 = mc_srdhm(x, x);
    const int32_t x3 = mc_srdhm(x2, x);
    const int32_t x4 = mc_srdhm(x2, x2);
    const int32_t x4_over_4 = mc_rounding_divide_by_pot(x4, 2);
    const int32_t poly = mc_rounding_divide_by_pot(
        mc_add_wrap(mc_srdhm(mc_add_wrap(x4_over_4, x3), constant_1_over_3), x2), 1);
    return mc_add_wrap(constant_term, mc_srdhm(constant_term, mc_add_wrap(x, poly)));
}

/* exp(a) for a <= 0 given in Q5.26; result Q0.31. */
static int32_t exp_on_negative_values(int32_t a)
{
    /* exp(-2^k) in Q0.31 for k = -2 .. 4, applied for each set bit of the remainder. */
    static const int32_t barrel[7] = {1672461947, 1302514674, 790015084, 290630308,
                                      39332535, 720401, 242};
    const int32_t frac_bits = 31 - SCALED_DIFF_INTEGER_BITS;
    const int32_t one_quarter = (int32_t)1 << (frac_bits - 2);
    const int32_t mask = one_quarter - 1;
    const int32_t a_mod_quarter_minus_one_quarter = (a & mask) - one_quarter;
    int32_t result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        mc_rescale(a_mod_quarter_minus_one_quarter, SCALED_DIFF_INTEGER_BITS, 0));
    const int32_t remainder = mc_add_wrap(a_mod_quarter_minus_one_quarter, (int32_t)(0u - (uint32_t)a));
    int32_t k;

    for (k = 0; k < 7; k++) {
        const int32_t bit = (int32_t)1 << (frac_bits - 2 + k);
        if ((remainder & bit) != 0)
            result = mc_srdhm(result, barrel[k]);
    }
    return a == 0 ? INT32_MAX : result;
}

/* 1/(1+a) for a in [0, 1), Q0.31 in and out: three Newton-Raphson steps. */
static int32_t one_over_one_plus_x_for_x_in_0_1(int32_t a)
{
    const int64_t s = (int64_t)a + INT32_MAX;        /* RoundingHalfSum(a, One) */
    const int32_t half_denominator = (int32_t)(s >= 0 ? (s + 1) / 2 : -((1 - s) / 2));
    const int32_t constant_48_over_17 = 1515870810;     /* Q2.29 */
    const int32_t constant_neg_32_over_17 = -1010580540; /* Q2.29 */
    int32_t x = mc_add_wrap(constant_48_over_17, mc_srdhm(half_denominator, constant_neg_32_over_17));
    int32_t i;

    for (i = 0; i < 3; i++) {
        const int32_t half_denominator_times_x = mc_srdhm(half_denominator, x);
        const int32_t one_minus = mc_add_wrap((int32_t)1 << 29, (int32_t)(0u - (uint32_t)half_denominator_times_x));
        x = mc_add_wrap(x, mc_rescale(mc_srdhm(x, one_minus), 4, 2));
    }
    return mc_rescale(x, 1, 0);
}

/* RoundingDivideByPOT for exponents that may exceed 31 (computed in 64 bits). */
static int32_t rounding_divide_by_pot_wide(int32_t x, int32_t exponent)
{
    const int64_t mask = ((int64_t)1 << exponent) - 1;
    const int64_t remainder = (int64_t)x & mask;
    const int64_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (int32_t)(((int64_t)x >> exponent) + (remainder > threshold ? 1 : 0));
}

/* exp of the scaled difference `diff` (<= 0, >= diff_min): from `exp_table` when given. */
static int32_t exp_of_diff(int32_t diff, const int32_t *exp_table, const mc_softmax_params_t *params)
{
    if (exp_table != 0)
        return exp_table[-diff];
    return exp_on_negative_values(
        mc_srdhm((int32_t)((uint32_t)diff << params->input_left_shift), params->input_multiplier));
}

/* The int8-input softmax with `out_bits` (8 or 16) bits of output: scale 2^-out_bits, zero
 * point -2^(out_bits-1), as TFLite's Softmax<int8_t, OutputT> (the exponent of the last
 * rounding takes out_bits). Writes int8 or int16 elements. `exp_table` (or NULL): the exps of
 * the 256 differences, tabulated on the host. */
static void softmax_s8_rows(const int8_t *input, void *output, const int32_t *exp_table,
                            const mc_softmax_params_t *params, int32_t out_bits)
{
    const int32_t rows = params->rows, depth = params->depth, diff_min = params->diff_min;
    const int32_t lo = -((int32_t)1 << (out_bits - 1)), hi = ((int32_t)1 << (out_bits - 1)) - 1;
    int32_t r, c;

    for (r = 0; r < rows; r++) {
        const int8_t *x = input + r * depth;
        int32_t max_in_row = x[0];
        int32_t sum_of_exps = 0;  /* Q12.19 */

        for (c = 1; c < depth; c++)
            max_in_row = x[c] > max_in_row ? x[c] : max_in_row;
        for (c = 0; c < depth; c++) {
            const int32_t diff = x[c] - max_in_row;
            if (diff >= diff_min)
                sum_of_exps += mc_rescale(exp_of_diff(diff, exp_table, params), 0, ACCUMULATION_INTEGER_BITS);
        }
        /* GetReciprocal: 1/sum as a Q0.31 in [0.5, 1) and a power of two. */
        const int32_t headroom_plus_one = __builtin_clz((uint32_t)sum_of_exps);
        const int32_t num_bits_over_unit = ACCUMULATION_INTEGER_BITS - headroom_plus_one;
        const int32_t shifted_sum_minus_one =
            (int32_t)(((uint32_t)sum_of_exps << headroom_plus_one) - 0x80000000u);
        const int32_t shifted_scale = one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one);

        for (c = 0; c < depth; c++) {
            const int32_t diff = x[c] - max_in_row;
            int32_t out = lo;
            if (diff >= diff_min) {
                const int32_t exp_in_0 = exp_of_diff(diff, exp_table, params);
                /* keep out_bits bits, then shift to the zero point lo */
                const int32_t unsat = rounding_divide_by_pot_wide(mc_srdhm(shifted_scale, exp_in_0),
                                                                  num_bits_over_unit + 31 - out_bits);
                const int32_t shifted = unsat + lo;
                out = shifted < lo ? lo : (shifted > hi ? hi : shifted);
            }
            if (out_bits == 8)
                ((int8_t *)output)[r * depth + c] = (int8_t)out;
            else
                ((int16_t *)output)[r * depth + c] = (int16_t)out;
        }
    }
}

void mc_softmax_s8(const int8_t *input, int8_t *output, const mc_softmax_params_t *params)
{
    softmax_s8_rows(input, output, 0, params, 8);
}

void mc_softmax_s8_s16(const int8_t *input, int16_t *output, const mc_softmax_params_t *params)
{
    softmax_s8_rows(input, output, 0, params, 16);
}

void mc_softmax_s8_table(const int8_t *input, int8_t *output, const int32_t *exp_table,
                         const mc_softmax_params_t *params)
{
    softmax_s8_rows(input, output, exp_table, params, 8);
}

void mc_softmax_s8_s16_table(const int8_t *input, int16_t *output, const int32_t *exp_table,
                             const mc_softmax_params_t *params)
{
    softmax_s8_rows(input, output, exp_table, params, 16);
}

/* int8 log-softmax, TFLite reference_integer_ops::LogSoftmax with gemmlowp fixed point.
 *
 * Every helper mirrors a function of microcompile/ir/fixedpoint.py or fixedpoint_log.py
 * (the Python oracle). Raw values are int32 fixed point: Q5.26 scaled differences, Q12.19
 * sum of exps, Q0.31 inside the log. Additions that gemmlowp lets wrap are done in uint32
 * so that the C is defined behaviour. */
#include "mc_log_softmax.h"
#include "mc_fixedpoint.h"

#define INPUT_INTEGER_BITS 5
#define ACCUMULATION_INTEGER_BITS 12
#define OUTPUT_INTEGER_BITS 4
#define OUTPUT_ZERO_POINT 127
#define LOG_ACCUM_INTEGER_BITS (INPUT_INTEGER_BITS + 1)   /* one bit of headroom in the log */

static int32_t saturate_i64(int64_t x)
{
    return (int32_t)(x > INT32_MAX ? INT32_MAX : (x < INT32_MIN ? INT32_MIN : x));
}

static int32_t rounding_half_sum(int32_t a, int32_t b)
{
    const int64_t s = (int64_t)a + b;
    return (int32_t)((s + (s >= 0 ? 1 : -1)) / 2);
}

static int32_t count_leading_zeros(int32_t x)
{
    return x == 0 ? 32 : __builtin_clz((uint32_t)x);
}

/* 1/(1+a) for a in [0, 1), Q0.31 in and out: three Newton-Raphson steps. */
static int32_t one_over_one_plus_x_for_x_in_0_1(int32_t a)
{
    const int32_t half_denominator = rounding_half_sum(a, INT32_MAX);
    const int32_t constant_48_over_17 = 1515870810;      /* Q2.29 */
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

/* log(x) for x >= 1, x in Q12.19, result in Q5.26 (log_x_for_x_greater_than_or_equal_to_1):
 * x = 2^z * r with r in [sqrt(1/2), 1), log r from a rational approximation around 2^(-1/4). */
static int32_t log_q12_to_q5(int32_t z_a)
{
    const int32_t log_2 = 1488522236, sqrt_sqrt_half = 1805811301, sqrt_half = 1518500250;
    const int32_t alpha_n = 117049297, alpha_d = 127690142, alpha_i = 1057819769, alpha_f = 638450708;
    const int32_t shifted_quarter = mc_rescale(536870912, 0, LOG_ACCUM_INTEGER_BITS);
    const int32_t unit_shift = 31 - LOG_ACCUM_INTEGER_BITS;   /* an integer in Q6.25 */

    const int32_t z_a_headroom_plus_1 = count_leading_zeros(z_a);
    const int32_t r_a_tmp = mc_saturating_left_shift(z_a, z_a_headroom_plus_1 - 1);
    const int32_t r_a = mc_saturating_left_shift(mc_srdhm(r_a_tmp, sqrt_half), 1);
    const int32_t z_a_pow_2_adj = saturate_i64(
        (int64_t)mc_saturating_left_shift(ACCUMULATION_INTEGER_BITS - z_a_headroom_plus_1, unit_shift) + shifted_quarter);
    const int32_t z_b = mc_srdhm(z_a, sqrt_half);
    const int32_t z_b_headroom = count_leading_zeros(z_b) - 1;
    const int32_t r_b = mc_saturating_left_shift(z_a, z_b_headroom);
    const int32_t z_b_pow_2_adj = saturate_i64(
        (int64_t)mc_saturating_left_shift(ACCUMULATION_INTEGER_BITS - z_b_headroom, unit_shift) - shifted_quarter);
    const int32_t r = r_a < r_b ? r_a : r_b;
    const int32_t z_pow_2_adj = z_a_pow_2_adj > z_b_pow_2_adj ? z_a_pow_2_adj : z_b_pow_2_adj;

    const int32_t p = rounding_half_sum(r, sqrt_sqrt_half);
    int32_t q = mc_add_wrap(r, -sqrt_sqrt_half);
    q = mc_add_wrap(q, q);
    const int32_t common_sq = mc_srdhm(q, q);
    const int32_t num = mc_add_wrap(mc_srdhm(q, r), mc_srdhm(mc_srdhm(q, common_sq), alpha_n));
    const int32_t denom_minus_one = mc_add_wrap(
        mc_srdhm(p, mc_add_wrap(mc_add_wrap(alpha_i, q), mc_srdhm(alpha_d, common_sq))), mc_srdhm(alpha_f, q));
    const int32_t recip_denom = one_over_one_plus_x_for_x_in_0_1(denom_minus_one);
    const int32_t num_scaled = mc_rescale(num, 0, LOG_ACCUM_INTEGER_BITS);
    const int32_t total = mc_add_wrap(mc_srdhm(z_pow_2_adj, log_2), mc_srdhm(num_scaled, recip_denom));
    return mc_rescale(total, LOG_ACCUM_INTEGER_BITS, INPUT_INTEGER_BITS);
}

void mc_log_softmax_s8(const int8_t *input, int8_t *output, const int32_t *exp_table,
                       const mc_log_softmax_params_t *params)
{
    const int32_t rows = params->rows, depth = params->depth, diff_min = params->diff_min;
    const int32_t input_multiplier = params->input_multiplier, input_left_shift = params->input_left_shift;
    const int32_t reverse_multiplier = params->reverse_multiplier, reverse_shift = params->reverse_shift;
    int32_t r, c;

    for (r = 0; r < rows; r++) {
        const int8_t *x = input + r * depth;
        int8_t *y = output + r * depth;
        int32_t max_in_row = x[0];
        int32_t sum_of_exps = 0;  /* Q12.19 */

        for (c = 1; c < depth; c++)
            max_in_row = x[c] > max_in_row ? x[c] : max_in_row;
        for (c = 0; c < depth; c++)
            sum_of_exps += exp_table[max_in_row - x[c]];
        const int32_t log_sum = log_q12_to_q5(sum_of_exps);
        /* Differences at or below the cutoff underflow the output range: -128. */
        const int32_t reversed = mc_mul_by_qm(mc_add_wrap(log_sum, INT32_MIN), reverse_multiplier, -reverse_shift);
        const int32_t cutoff = reversed > diff_min - 1 ? reversed : diff_min - 1;

        for (c = 0; c < depth; c++) {
            const int32_t diff = x[c] - max_in_row;
            int32_t out = -128;
            if (diff > cutoff) {
                const int32_t scaled = mc_mul_by_qm(diff, input_multiplier, input_left_shift);
                out = mc_rounding_divide_by_pot(mc_add_wrap(scaled, -log_sum),
                                                31 - INPUT_INTEGER_BITS - OUTPUT_INTEGER_BITS) + OUTPUT_ZERO_POINT;
                out = out < -128 ? -128 : (out > 127 ? 127 : out);
            }
            y[c] = (int8_t)out;
        }
    }
}

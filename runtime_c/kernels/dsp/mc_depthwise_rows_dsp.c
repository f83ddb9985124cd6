/* mc_depthwise_3x3_rows_dsp_s8 (mc_depthwise.h): a whole int8 3x3 depthwise layer for
 * Armv7E-M cores with the DSP extension, one output row at a time.
 *
 * SMLAD does two MACs of one channel when its two int16 lanes hold two taps of that channel.
 * So each padded input row is turned, once, into int16 pairs of adjacent columns,
 * H[k][c] = (x[2k][c], x[2k+1][c]) (the padding reads zp_in), in a ring of three rows in
 * scratch (two LDR, four SXTB16, four PKH and two STRD per four pairs). With filter row i
 * packed as W01 = (w0, w1) and W12 = (w1, w2), two outputs take two pairs per filter row:
 *
 *   y[2k]   += SMLAD(H[k], W01) + SMLABT(H[k+1], W12)    x[2k]w0   + x[2k+1]w1 + x[2k+2]w2
 *   y[2k+1] += SMLATB(H[k], W01) + SMLAD(H[k+1], W12)    x[2k+1]w0 + x[2k+2]w1 + x[2k+3]w2
 *
 * (an odd row ends with three outputs at once). Per channel and pair of outputs: 12 MAC
 * instructions for 18 MACs, 6 loads of pairs and 4 LDM of the record, 2 * 4 of output
 * arithmetic and 2 STRB: 34 instructions (dw_pair below). At stride 2 outputs k and k+1 read
 * pairs k, k+1 and k+1, k+2, sharing pair k+1:
 *
 *   y[k]   += SMLAD(H[k], W01)   + SMLABT(H[k+1], W12)
 *   y[k+1] += SMLAD(H[k+1], W01) + SMLABT(H[k+2], W12)
 *
 * 12 MAC instructions, 9 loads of pairs: 37 instructions per channel and pair of outputs where
 * two single outputs took 46 (dw_pair2; an odd row's last output alone, dw_single).
 *
 * Output arithmetic: the weights and bias are doubled on the host, so the sum is 2*acc, the
 * operand of SMMULR's exact form of the high multiply (mc_requant_dsp.h). Its rounding shift
 * floor((s - [s<0] + 2^(e-1)) / 2^e) + out_offset is floor((s + K - [acc<0]) / 2^e) with
 * K = 2^(e-1) + out_offset * 2^e from the record ([s<0] and [acc<0] differ only when s = 0,
 * where both give out_offset since e >= 1), and SMMLAR adds K - [acc<0] for free: SUB, SMMLAR,
 * ASR, SSAT per output. The host checks that K and 2*acc fit (intrinsics_depthwise.py).
 *
 * The ring holds `block` channels (its scratch is 3 * block * pairs words, sized on the host),
 * so a layer runs in passes of `block` channels, each all rows.
 *
 * In-place: within a pass, output row r is written after every input row it reads was copied
 * into the ring, pixels in row-major order, as memory/inplace.py's "window" rule asks. Passes
 * of fewer than all channels are also safe when every output byte lies on an input byte of its
 * own channel (a distance between output and input of whole pixels, or no overlap); otherwise
 * the kernel computes pixel after pixel without the ring (rows_direct). */
#include <string.h>

#include "mc_dsp.h"
#include "mc_depthwise.h"

/* Pairs [k0, k1) of padded input row r, channels [c0, c0 + cb), into `slot` ([pair][channel]). */
typedef struct {
    int32_t k0, k1, c0, cb;
} rows_span_t;

/* Pairs of `kn` consecutive pair columns, n4 groups of four channels each: columns a and b
 * (four bytes each) -> four pairs in 14 instructions (two LDR, four SXTB16, four PKH, two STRD,
 * the loop); `skip` bytes take a and b from one pair column's channels to the next's. */
typedef struct {
    const int8_t *pa, *pb;
    int32_t n4, kn, skip;
} rows_cols_t;

static inline void rows_form4(int32_t *d, rows_cols_t q)
{
    const int8_t *pa = q.pa, *pb = q.pb;
    int32_t n, a, b, t0, t1, t2, kn = q.kn;

    __asm__ volatile("2:\n\t"
                     "mov %[n], %[n4]\n\t"
                     "1:\n\t"
                     "ldr %[a], [%[pa]], #4\n\t"
                     "ldr %[b], [%[pb]], #4\n\t"
                     "sxtb16 %[t0], %[a]\n\t"
                     "sxtb16 %[t1], %[b]\n\t"
                     "sxtb16 %[a], %[a], ror #8\n\t"
                     "sxtb16 %[b], %[b], ror #8\n\t"
                     "pkhbt %[t2], %[t0], %[t1], lsl #16\n\t"     /* channel c:   (a_c, b_c) */
                     "pkhtb %[t1], %[t1], %[t0], asr #16\n\t"     /* channel c+2 */
                     "pkhbt %[t0], %[a], %[b], lsl #16\n\t"       /* channel c+1 */
                     "pkhtb %[b], %[b], %[a], asr #16\n\t"        /* channel c+3 */
                     "strd %[t2], %[t0], [%[d]], #8\n\t"
                     "strd %[t1], %[b], [%[d]], #8\n\t"
                     "subs %[n], %[n], #1\n\t"
                     "bne 1b\n\t"
                     "add %[pa], %[pa], %[skip]\n\t"
                     "add %[pb], %[pb], %[skip]\n\t"
                     "subs %[kn], %[kn], #1\n\t"
                     "bne 2b\n\t"
                     : [d] "+r"(d), [pa] "+r"(pa), [pb] "+r"(pb), [kn] "+r"(kn), [n] "=&r"(n), [a] "=&r"(a),
                       [b] "=&r"(b), [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2)
                     : [n4] "r"(q.n4), [skip] "r"(q.skip)
                     : "cc", "memory");
}

/* How every input row of a pass becomes its pairs: up to three runs of pair columns (a first
 * pair whose first column is padding, the pairs between, a last pair whose second column is),
 * the same for every row, so worked out once per pass (rows_plan). */
typedef struct {
    int32_t a, b;          /* byte offsets of the run's first columns in the row; -1: padding */
    int32_t kn, d;         /* pair columns in the run; its first pair's word offset in a slot */
} rows_run_t;

typedef struct {
    rows_run_t run[3];
    int32_t n4, skip, tail;   /* groups of four channels; bytes from a column's block to the next pair's; c % 4 */
} rows_plan_t;

static rows_plan_t rows_plan(rows_span_t s, const mc_depthwise_rows_params_t *p)
{
    const int32_t channels = p->channels, in_w = p->in_w, c4 = s.cb & ~3;
    rows_plan_t plan = {{{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}, c4 >> 2, 2 * channels - c4, s.cb - c4};
    int32_t k = s.k0, ca = 2 * s.k0 - p->pad_left, n = 0;   /* ca: the pair's first input column */

    while (k < s.k1) {
        const int inner = ca >= 0 && ca + 1 < in_w;
        /* pairs whose two columns are both in the row: ca + 2j + 1 < in_w */
        const int32_t kn = inner ? (s.k1 - k < (in_w - 2 - ca) / 2 + 1 ? s.k1 - k : (in_w - 2 - ca) / 2 + 1) : 1;
        const rows_run_t r = {ca >= 0 ? ca * channels : -1, ca + 1 < in_w ? (ca + 1) * channels : -1, kn, k * s.cb};

        if (n == 3 || plan.tail) {      /* a partial group: one pair column at a time (rows_form) */
            plan.run[0].kn = -1;
            return plan;
        }
        plan.run[n++] = r;
        k += kn, ca += 2 * kn;
    }
    return plan;
}

/* What every row of a pass shares. */
typedef struct {
    const mc_depthwise_rows_params_t *p;
    const int8_t *x, *zrow;      /* the batch item's input; zp_in for every channel of the block */
    rows_span_t s;
    rows_plan_t plan;
} rows_ctx_t;

/* Padded input row r, channels [c0, c0 + cb), into `slot` ([pair][channel]). */
static __attribute__((noinline)) void rows_form(int32_t *slot, int32_t r, const rows_ctx_t *ctx)
{
    const mc_depthwise_rows_params_t *p = ctx->p;
    const rows_span_t s = ctx->s;
    const int32_t channels = p->channels, ih = r - p->pad_top, in_w = p->in_w, c4 = s.cb & ~3;
    const int8_t *zrow = ctx->zrow, *row;
    int32_t *d = slot + s.k0 * s.cb;

    if (ih < 0 || ih >= p->in_h) {      /* a padding row: zp_in pairs */
        const int32_t zz = (int32_t)(((uint32_t)p->zp_in & 0xFFFFu) | ((uint32_t)p->zp_in << 16));

        for (int32_t i = (s.k1 - s.k0) * s.cb; i > 0; --i)
            *d++ = zz;
        return;
    }
    row = ctx->x + ih * in_w * channels + s.c0;
    if (ctx->plan.run[0].kn >= 0) {     /* the runs, no partial group */
        for (int32_t i = 0; i < 3 && ctx->plan.run[i].kn > 0; ++i) {
            const rows_run_t *u = &ctx->plan.run[i];
            const rows_cols_t q = {u->a < 0 ? zrow : row + u->a, u->b < 0 ? zrow : row + u->b, ctx->plan.n4, u->kn,
                                   ctx->plan.skip};

            rows_form4(slot + u->d, q);
        }
        return;
    }
    /* pairs [k0, k1) hold an input column each (rows_live_pairs): only the first column of the
     * first pair and the second of the last may be padding */
    for (int32_t k = s.k0, ca = 2 * s.k0 - p->pad_left; k < s.k1; ++k, ca += 2, d += s.cb) {
        const rows_cols_t q = {ca >= 0 ? row + ca * channels : zrow, ca + 1 < in_w ? row + (ca + 1) * channels : zrow,
                               c4 >> 2, 1, 0};

        if (c4)
            rows_form4(d, q);
        for (int32_t c = c4; c < s.cb; ++c)
            d[c] = (int32_t)(((uint32_t)q.pa[c] & 0xFFFFu) | ((uint32_t)q.pb[c] << 16));
    }
}

/* ---------------------------------------------------------------- one tile, every channel
 * A tile is one or two outputs of a row; the loop runs over the channels, so the record
 * (ten words) streams through four LDM and the pairs through post-incremented loads.
 * r0/r1 the sums, r2/r3 a pair of pairs, r4/r5 a filter row, r6-r8 the three pair rows,
 * r9 the records, r10 the output, r11 channels (the next output's distance), r12 channels*4
 * (the next pair's), lr the end of the outputs; [sp] act_min, [sp, #4] act_max. */
typedef struct {
    const int32_t *h0, *h1, *h2;   /* pair k of the three rows, channel 0 */
    const int32_t *rec;
    int8_t *y, *yend;              /* this tile's first output, channel 0; y + channels */
    int32_t yc, hc;                /* channels; channels * 4 */
    int32_t act_min, act_max;
} rows_tile_t;

#define DWP_ROW(H)                                                                                   \
    "ldr r3, [" H ", r12]\n\t" "ldr r2, [" H "], #4\n\t"                                          \
    "smlad r0, r2, r4, r0\n\t" "smlatb r1, r2, r4, r1\n\t"                                        \
    "smlabt r0, r3, r5, r0\n\t" "smlad r1, r3, r5, r1\n\t"
#define DWP_ROW0(H) /* the first filter row: both sums start from 2*bias in r1 */                    \
    "ldr r3, [" H ", r12]\n\t" "ldr r2, [" H "], #4\n\t"                                          \
    "smlad r0, r2, r4, r1\n\t" "smlatb r1, r2, r4, r1\n\t"                                        \
    "smlabt r0, r3, r5, r0\n\t" "smlad r1, r3, r5, r1\n\t"
/* Stride 2: outputs k and k+1 read pairs k, k+1 and k+1, k+2 (sharing pair k+1):
 *   y[k]   += SMLAD(H[k], W01) + SMLABT(H[k+1], W12)      x[2k]w0   + x[2k+1]w1 + x[2k+2]w2
 *   y[k+1] += SMLAD(H[k+1], W01) + SMLABT(H[k+2], W12)    x[2k+2]w0 + x[2k+3]w1 + x[2k+4]w2
 * three loads and four MACs per filter row where two singles take four and four. */
#define DW2_ROW(H)                                                                                   \
    "ldr r3, [" H ", r12]\n\t" "ldr r2, [" H ", r12, lsl #1]\n\t"                                \
    "smlabt r0, r3, r5, r0\n\t" "smlad r1, r3, r4, r1\n\t" "smlabt r1, r2, r5, r1\n\t"          \
    "ldr r2, [" H "], #4\n\t" "smlad r0, r2, r4, r0\n\t"
#define DW2_ROW0(H) /* the first filter row: both sums start from 2*bias in r1 */                    \
    "ldr r3, [" H ", r12]\n\t" "ldr r2, [" H ", r12, lsl #1]\n\t"                                \
    "smlabt r0, r3, r5, r1\n\t" "smlad r1, r3, r4, r1\n\t" "smlabt r1, r2, r5, r1\n\t"          \
    "ldr r2, [" H "], #4\n\t" "smlad r0, r2, r4, r0\n\t"
#define DWS_ROW(H)                                                                                   \
    "ldr r3, [" H ", r12]\n\t" "ldr r2, [" H "], #4\n\t"                                          \
    "smlad r0, r2, r4, r0\n\t" "smlabt r0, r3, r5, r0\n\t"
/* 2*acc in R -> int8 (r2 mult, r3 K, r4 e; r5 scratch) */
#define DW_RQ(R)                                                                                     \
    "sub r5, r3, " R ", lsr #31\n\t" "smmlar " R ", " R ", r2, r5\n\t"                            \
    "asr " R ", " R ", r4\n\t" "ssat " R ", #8, " R "\n\t"
#define DW_CLAMP(R)                                                                                  \
    "ldrd r2, r5, [sp]\n\t" "cmp " R ", r2\n\t" "it lt\n\t" "movlt " R ", r2\n\t"                 \
    "cmp " R ", r5\n\t" "it gt\n\t" "movgt " R ", r5\n\t"
#define DW_ENTER                                                                                     \
    "push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t"                                             \
    "sub sp, sp, #8\n\t"                                                                          \
    "ldrd r1, r2, [r0, #32]\n\t" "strd r1, r2, [sp]\n\t"                                          \
    "ldm r0, {r6, r7, r8, r9, r10, lr}\n\t"                                                       \
    "ldrd r11, r12, [r0, #24]\n\t"
#define DW_LEAVE "add sp, sp, #8\n\t" "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n\t"

/* Two outputs of a row: (2k, 2k+1) at stride 1 (DWP_ROW), (k, k+1) at stride 2 (DW2_ROW). */
#define DW_PAIR(ROW0, ROW, CLAMP0, CLAMP1)                                                           \
    __asm__ volatile(DW_ENTER                                                                       \
                     "1:\n\t"                                                                       \
                     "ldm r9!, {r1, r4, r5}\n\t" ROW0("r6")                                         \
                     "ldm r9!, {r4, r5}\n\t" ROW("r7")                                             \
                     "ldm r9!, {r4, r5}\n\t" ROW("r8")                                             \
                     "ldm r9!, {r2, r3, r4}\n\t"                                                    \
                     DW_RQ("r0") DW_RQ("r1") CLAMP0 CLAMP1                                          \
                     "strb r1, [r10, r11]\n\t" "strb r0, [r10], #1\n\t"                            \
                     "cmp r10, lr\n\t" "bne 1b\n\t"                                                 \
                     DW_LEAVE)

/* One output starting at pair k (stride 2, or the last of an odd stride-1 row). */
#define DW_SINGLE(CLAMP0)                                                                            \
    __asm__ volatile(DW_ENTER                                                                       \
                     "1:\n\t"                                                                       \
                     "ldm r9!, {r0, r4, r5}\n\t"                                                    \
                     DWS_ROW("r6")                                                                  \
                     "ldm r9!, {r4, r5}\n\t" DWS_ROW("r7")                                         \
                     "ldm r9!, {r4, r5}\n\t" DWS_ROW("r8")                                         \
                     "ldm r9!, {r2, r3, r4}\n\t"                                                    \
                     DW_RQ("r0") CLAMP0                                                             \
                     "strb r0, [r10], #1\n\t"                                                       \
                     "cmp r10, lr\n\t" "bne 1b\n\t"                                                 \
                     DW_LEAVE)

/* Three outputs (2k, 2k+1, 2k+2) of a stride-1 row: the end of an odd row, in place of a pair
 * and a single (50 instructions per channel where those took 57). r0-r2 the sums, r3-r5 pairs
 * k..k+2, r6/r7 a filter row, r8-r10 the pair rows, r11 the records, r12 the output, lr
 * channels*4; [sp] act_min, act_max, channels, the end of the outputs. */
#define DWT_ROW(H, FIRST)                                                                            \
    "ldr r4, [" H ", lr]\n\t" "ldr r5, [" H ", lr, lsl #1]\n\t" "ldr r3, [" H "], #4\n\t"          \
    FIRST                                                                                           \
    "smlabt r0, r4, r7, r0\n\t" "smlad r1, r4, r7, r1\n\t" "smlabt r2, r5, r7, r2\n\t"
#define DWT_FIRST "smlad r0, r3, r6, r2\n\t" "smlatb r1, r3, r6, r2\n\t" "smlad r2, r4, r6, r2\n\t"
#define DWT_NEXT "smlad r0, r3, r6, r0\n\t" "smlatb r1, r3, r6, r1\n\t" "smlad r2, r4, r6, r2\n\t"
#define DWT_RQ(R)                                                                                    \
    "sub r6, r4, " R ", lsr #31\n\t" "smmlar " R ", " R ", r3, r6\n\t"                            \
    "asr " R ", " R ", r5\n\t" "ssat " R ", #8, " R "\n\t"
#define DWT_CLAMP(R)                                                                                 \
    "cmp " R ", r6\n\t" "it lt\n\t" "movlt " R ", r6\n\t"                                        \
    "cmp " R ", r7\n\t" "it gt\n\t" "movgt " R ", r7\n\t"
#define DW_TRIPLE(CLAMP)                                                                             \
    __asm__ volatile("push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t"                             \
                     "sub sp, sp, #16\n\t"                                                          \
                     "ldrd r1, r2, [r0, #32]\n\t" "strd r1, r2, [sp]\n\t"                          \
                     "ldr r1, [r0, #24]\n\t" "ldr r2, [r0, #20]\n\t" "strd r1, r2, [sp, #8]\n\t" \
                     "ldr lr, [r0, #28]\n\t"                                                        \
                     "ldm r0, {r8, r9, r10, r11, r12}\n\t"                                          \
                     "1:\n\t"                                                                       \
                     "ldm r11!, {r2, r6, r7}\n\t" DWT_ROW("r8", DWT_FIRST)                         \
                     "ldm r11!, {r6, r7}\n\t" DWT_ROW("r9", DWT_NEXT)                              \
                     "ldm r11!, {r6, r7}\n\t" DWT_ROW("r10", DWT_NEXT)                             \
                     "ldm r11!, {r3, r4, r5}\n\t"                                                   \
                     DWT_RQ("r0") DWT_RQ("r1") DWT_RQ("r2") CLAMP                                   \
                     "ldr r7, [sp, #8]\n\t"                                                         \
                     "strb r2, [r12, r7, lsl #1]\n\t" "strb r1, [r12, r7]\n\t" "strb r0, [r12], #1\n\t" \
                     "ldr r7, [sp, #12]\n\t" "cmp r12, r7\n\t" "bne 1b\n\t"                      \
                     "add sp, sp, #16\n\t"                                                          \
                     "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n\t")

__attribute__((naked, noinline)) static void dw_triple(const rows_tile_t *t __attribute__((unused)))
{
    DW_TRIPLE("");
}

__attribute__((naked, noinline)) static void dw_triple_clamp(const rows_tile_t *t __attribute__((unused)))
{
    DW_TRIPLE("ldrd r6, r7, [sp]\n\t" DWT_CLAMP("r0") DWT_CLAMP("r1") DWT_CLAMP("r2"));
}

__attribute__((naked, noinline)) static void dw_pair(const rows_tile_t *t __attribute__((unused)))
{
    DW_PAIR(DWP_ROW0, DWP_ROW, "", "");
}

__attribute__((naked, noinline)) static void dw_pair_clamp(const rows_tile_t *t __attribute__((unused)))
{
    DW_PAIR(DWP_ROW0, DWP_ROW, DW_CLAMP("r0"), DW_CLAMP("r1"));
}

__attribute__((naked, noinline)) static void dw_pair2(const rows_tile_t *t __attribute__((unused)))
{
    DW_PAIR(DW2_ROW0, DW2_ROW, "", "");
}

__attribute__((naked, noinline)) static void dw_pair2_clamp(const rows_tile_t *t __attribute__((unused)))
{
    DW_PAIR(DW2_ROW0, DW2_ROW, DW_CLAMP("r0"), DW_CLAMP("r1"));
}

__attribute__((naked, noinline)) static void dw_single(const rows_tile_t *t __attribute__((unused)))
{
    DW_SINGLE("");
}

__attribute__((naked, noinline)) static void dw_single_clamp(const rows_tile_t *t __attribute__((unused)))
{
    DW_SINGLE(DW_CLAMP("r0"));
}

/* Pairs [k0, k1) of a padded row hold input columns: the others are padding in every row,
 * filled once. */
static rows_span_t rows_live_pairs(const mc_depthwise_rows_params_t *p)
{
    rows_span_t s = {0, 0, 0, 0};

    while (s.k0 < p->pairs && 2 * s.k0 + 1 - p->pad_left < 0)
        ++s.k0;
    s.k1 = s.k0;
    while (s.k1 < p->pairs && 2 * s.k1 - p->pad_left < p->in_w)
        ++s.k1;
    return s;
}

/* The same layer without the ring, pixel after pixel (all channels of one before the next), for
 * an output planned over its input at an offset that is not a whole number of pixels: the ring's
 * channel blocks would then overwrite input bytes of channels still to come. */
static void rows_direct(int8_t *y, const int8_t *x, const int32_t *rec, const mc_depthwise_rows_params_t *p)
{
    const int32_t channels = p->channels, in_h = p->in_h, in_w = p->in_w;

    for (int32_t n = 0; n < p->batch; ++n, x += in_h * in_w * channels) {
        for (int32_t oh = 0; oh < p->out_h; ++oh) {
            for (int32_t ow = 0; ow < p->out_w; ++ow) {
                for (int32_t c = 0; c < channels; ++c, ++y) {
                    const int32_t *r = rec + c * 10;
                    int32_t acc = r[0], v, t;

                    for (int32_t i = 0; i < 3; ++i) {
                        const int32_t ih = oh * p->stride_h + i - p->pad_top;
                        const int32_t w[3] = {(int16_t)r[1 + 2 * i], r[1 + 2 * i] >> 16, r[2 + 2 * i] >> 16};

                        for (int32_t j = 0; j < 3; ++j) {
                            const int32_t iw = ow * p->stride_w + j - p->pad_left;
                            const int32_t in = ih >= 0 && ih < in_h && iw >= 0 && iw < in_w;

                            acc += (in ? x[(ih * in_w + iw) * channels + c] : p->zp_in) * w[j];
                        }
                    }
                    t = r[8] - (int32_t)((uint32_t)acc >> 31);
                    __asm__("smmlar %0, %1, %2, %3" : "=r"(v) : "r"(acc), "r"(r[7]), "r"(t));
                    __asm__("ssat %0, #8, %1" : "=r"(v) : "r"(v >> r[9]));
                    v = v < p->act_min ? p->act_min : v;
                    *y = (int8_t)(v > p->act_max ? p->act_max : v);
                }
            }
        }
    }
}

/* One batch item's output, channels [span.c0, span.c0 + span.cb): row after row, each row's
 * new input rows into the ring first, then its tiles. */
static __attribute__((noinline)) void rows_pass(int8_t *y, const int8_t *x, const int32_t *rec, int32_t *ring,
                                                rows_span_t span, const mc_depthwise_rows_params_t *p, int clamp)
{
    const int32_t channels = p->channels, cb = span.cb, slot = p->pairs * cb, out_w = p->out_w;
    const int32_t stride_h = p->stride_h, out_row = out_w * channels;
    const rows_ctx_t ctx = {p, x, (const int8_t *)(ring + 3 * p->pairs * p->block), span, rows_plan(span, p)};
    void (*const pair)(const rows_tile_t *) = p->stride_w == 1 ? (clamp ? dw_pair_clamp : dw_pair)
                                                               : (clamp ? dw_pair2_clamp : dw_pair2);
    void (*const triple)(const rows_tile_t *) = clamp ? dw_triple_clamp : dw_triple;
    void (*const single)(const rows_tile_t *) = clamp ? dw_single_clamp : dw_single;
    const int32_t pairs_w = p->stride_w == 1 ? (out_w - (out_w & 1 && out_w > 1 ? 3 : out_w & 1)) / 2 : out_w / 2;
    const int32_t pair_step = p->stride_w * cb;   /* pair columns from one pair of outputs to the next */
    const int tail3 = p->stride_w == 1 && out_w > 1 && (out_w & 1);
    rows_tile_t t = {0, 0, 0, rec + span.c0 * 10, 0, 0, channels, 4 * cb, p->act_min, p->act_max};
    int32_t formed = 0, fslot = 0;   /* padded input rows in the ring: [formed - 3, formed); the next one's slot */
    int32_t s0 = 0;                  /* the slot of the current output row's first input row */

    y += span.c0;
    for (int32_t oh = 0, last = 3; oh < p->out_h; ++oh, y += out_row, last += stride_h) {
        const int32_t *h0 = ring + s0 * slot, *h1 = ring + (s0 == 2 ? 0 : s0 + 1) * slot;
        const int32_t *h2 = ring + (s0 == 0 ? 2 : s0 - 1) * slot;
        int8_t *yt = y;

        for (; formed < last; ++formed, fslot = fslot == 2 ? 0 : fslot + 1)
            rows_form(ring + fslot * slot, formed, &ctx);
        /* pairs of outputs; stride 1: an odd row's last three at once; stride 2 (or a
         * one-output row): an odd row's last alone */
        for (int32_t i = 0; i < pairs_w; ++i, h0 += pair_step, h1 += pair_step, h2 += pair_step, yt += 2 * channels) {
            t.h0 = h0, t.h1 = h1, t.h2 = h2, t.y = yt, t.yend = yt + cb;
            pair(&t);
        }
        if (tail3) {
            t.h0 = h0, t.h1 = h1, t.h2 = h2, t.y = yt, t.yend = yt + cb;
            triple(&t);
        } else {
            for (int32_t ow = 2 * pairs_w; ow < out_w; ++ow, h0 += cb, h1 += cb, h2 += cb, yt += channels) {
                t.h0 = h0, t.h1 = h1, t.h2 = h2, t.y = yt, t.yend = yt + cb;
                single(&t);
            }
        }
        for (int32_t i = 0; i < stride_h; ++i)
            s0 = s0 == 2 ? 0 : s0 + 1;
    }
}

void mc_depthwise_3x3_rows_dsp_s8(int8_t *y, const int8_t *x, const int32_t *rec, int32_t *scratch,
                                  const mc_depthwise_rows_params_t *params)
{
    const mc_depthwise_rows_params_t *p = params;
    const int32_t channels = p->channels, block = p->block;
    const int32_t in_size = p->in_h * p->in_w * channels, out_size = p->out_h * p->out_w * channels;
    const int clamp = p->act_min > -128 || p->act_max < 127;   /* SSAT alone gives [-128, 127] */
    const int32_t zz = (int32_t)(((uint32_t)p->zp_in & 0xFFFFu) | ((uint32_t)p->zp_in << 16));
    const int overlap = x < y + p->batch * out_size && (const int8_t *)y < x + p->batch * in_size;
    rows_span_t span = rows_live_pairs(p);
    int32_t filled = 0;

    memset(scratch + 3 * p->pairs * block, p->zp_in, (size_t)block);    /* the padding columns' bytes */
    /* Channel blocks are safe in place when each output byte lies on an input byte of its own
     * channel (or nothing overlaps): channel c's output reads channel c's input only. */
    if (block < channels && overlap && (int32_t)(x - (const int8_t *)y) % channels != 0) {
        rows_direct(y, x, rec, p);
        return;
    }
    for (int32_t n = 0; n < p->batch; ++n, x += in_size, y += out_size) {
        for (span.c0 = 0; span.c0 < channels; span.c0 += block) {
            span.cb = channels - span.c0 < block ? channels - span.c0 : block;
            /* The padding pairs outside [k0, k1) are never formed (rows_form writes all the
             * others): fill them whenever the ring's layout changes (a block of another size). */
            if (filled != span.cb) {
                for (int32_t r = 0; r < 3; ++r) {
                    int32_t *slot = scratch + r * p->pairs * span.cb;

                    for (int32_t i = 0; i < span.k0 * span.cb; ++i)
                        slot[i] = zz;
                    for (int32_t i = span.k1 * span.cb; i < p->pairs * span.cb; ++i)
                        slot[i] = zz;
                }
                filled = span.cb;
            }
            rows_pass(y, x, rec, scratch, span, p, clamp);
        }
    }
}

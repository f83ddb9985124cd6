/* The model-independent part of the runtime: arena checks, tensor lookup, the kernel
 * loop with its optional per-kernel profiling hook, float <-> int conversion helpers, and
 * a weak default cycle counter for applications that bring no platform layer. */
#include "mc_runtime.h"
#include "mc_platform.h"

int mc_init(mc_ctx_t *ctx, const mc_model_t *model, uint8_t *arena, size_t arena_bytes)
{
    if (ctx == NULL || model == NULL || arena == NULL)
        return MC_ERR_ARGS;
    if (arena_bytes < model->arena_bytes)
        return MC_ERR_ARENA_SIZE;
    if (((uintptr_t)arena % MC_ARENA_ALIGN) != 0)
        return MC_ERR_ARENA_ALIGN;
    ctx->model = model;
    ctx->arena = arena;
    ctx->hook = NULL;
    ctx->hook_user = NULL;
    if (model->load_weights != NULL)
        model->load_weights();
    mc_reset_state(ctx);
    return MC_OK;
}

void mc_reset_state(mc_ctx_t *ctx)
{
    if (ctx->model->reset_state != NULL)
        ctx->model->reset_state();
}

void *mc_input(mc_ctx_t *ctx, uint32_t i)
{
    if (i >= ctx->model->num_inputs)
        return NULL;
    return ctx->arena + ctx->model->inputs[i].offset;
}

void *mc_output(mc_ctx_t *ctx, uint32_t i)
{
    if (i >= ctx->model->num_outputs)
        return NULL;
    return ctx->arena + ctx->model->outputs[i].offset;
}

int mc_run(mc_ctx_t *ctx)
{
    const mc_model_t *m = ctx->model;
    uint32_t k;

    if (ctx->hook == NULL) {
        for (k = 0; k < m->num_kernels; k++)
            m->kernels[k].fn(ctx->arena);
        return MC_OK;
    }
    for (k = 0; k < m->num_kernels; k++) {
        uint32_t start = mc_platform_cycles();
        m->kernels[k].fn(ctx->arena);
        /* unsigned subtraction is correct across one counter wrap */
        ctx->hook(ctx->hook_user, k, mc_platform_cycles() - start);
    }
    return MC_OK;
}

int mc_run_until(mc_ctx_t *ctx, uint32_t end)
{
    uint32_t k;

    if (end > ctx->model->num_kernels)
        return MC_ERR_ARGS;
    for (k = 0; k < end; k++)
        ctx->model->kernels[k].fn(ctx->arena);
    return MC_OK;
}

void mc_set_profile_hook(mc_ctx_t *ctx, mc_profile_hook hook, void *user)
{
    ctx->hook = hook;
    ctx->hook_user = user;
}

uint32_t mc_tensor_elements(const mc_tensor_t *t)
{
    switch (t->dtype) {
    case MC_INT8:
        return t->bytes;
    case MC_INT16:
        return t->bytes / 2u;
    case MC_UINT64:
        return t->bytes / 8u;
    default:
        return t->bytes / 4u;
    }
}

/* Round half away from zero of a float already clamped to +-2^30: the difference from the
 * truncated value is exact (Sterbenz), so no libm and no double rounding. */
static int32_t mc_round_away(float v)
{
    int32_t i = (int32_t)v;
    float frac = v - (float)i;

    if (frac >= 0.5f)
        i++;
    else if (frac <= -0.5f)
        i--;
    return i;
}

int mc_quantize_f32(const mc_tensor_t *t, const float *src, void *dst)
{
    uint32_t i, n;
    int32_t lo, hi;

    if (t == NULL || src == NULL || dst == NULL ||
        (t->dtype != MC_INT8 && t->dtype != MC_INT16 && t->dtype != MC_FLOAT32))
        return MC_ERR_ARGS;
    n = mc_tensor_elements(t);
    if (t->dtype == MC_FLOAT32) {
        for (i = 0; i < n; i++)
            ((float *)dst)[i] = src[i];
        return MC_OK;
    }
    lo = t->dtype == MC_INT8 ? -128 : -32768;
    hi = t->dtype == MC_INT8 ? 127 : 32767;
    for (i = 0; i < n; i++) {
        float v = src[i] / t->scale;
        int32_t q;

        if (!(v >= -1073741824.0f)) /* also NaN */
            v = -1073741824.0f;
        else if (v > 1073741824.0f)
            v = 1073741824.0f;
        q = mc_round_away(v) + t->zero_point;
        q = q < lo ? lo : q > hi ? hi : q;
        if (t->dtype == MC_INT8)
            ((int8_t *)dst)[i] = (int8_t)q;
        else
            ((int16_t *)dst)[i] = (int16_t)q;
    }
    return MC_OK;
}

int mc_dequantize_f32(const mc_tensor_t *t, const void *src, float *dst)
{
    uint32_t i, n;

    if (t == NULL || src == NULL || dst == NULL ||
        (t->dtype != MC_INT8 && t->dtype != MC_INT16 && t->dtype != MC_FLOAT32))
        return MC_ERR_ARGS;
    n = mc_tensor_elements(t);
    for (i = 0; i < n; i++) {
        /* |q - zero_point| < 2^17 and a float scale: the product is exact before its one
         * rounding to float, as Python's float64 product rounded to float32. */
        if (t->dtype == MC_FLOAT32)
            dst[i] = ((const float *)src)[i];
        else if (t->dtype == MC_INT8)
            dst[i] = (float)(((const int8_t *)src)[i] - t->zero_point) * t->scale;
        else
            dst[i] = (float)(((const int16_t *)src)[i] - t->zero_point) * t->scale;
    }
    return MC_OK;
}

/* A default for applications without a platform layer (an exported library in the user's
 * firmware): the DWT cycle counter on cores that have one (started on first use), 0
 * elsewhere. Weak: the board's platform file, or the application, defines its own. */
#if defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) || defined(__ARM_ARCH_8M_MAIN__) || \
    defined(__ARM_ARCH_8_1M_MAIN__)
__attribute__((weak)) uint32_t mc_platform_cycles(void)
{
    volatile uint32_t *const demcr = (volatile uint32_t *)0xE000EDFCu;
    volatile uint32_t *const dwt_ctrl = (volatile uint32_t *)0xE0001000u;
    volatile uint32_t *const dwt_cyccnt = (volatile uint32_t *)0xE0001004u;
    volatile uint32_t *const dwt_lar = (volatile uint32_t *)0xE0001FB0u;

    if ((*dwt_ctrl & 1u) == 0u) {
        *demcr |= 1u << 24;      /* TRCENA: the DWT on */
        *dwt_lar = 0xC5ACCE55u;  /* unlock where a lock exists (Cortex-M7, M55); ignored elsewhere */
        *dwt_cyccnt = 0u;
        *dwt_ctrl |= 1u;         /* CYCCNTENA */
    }
    return *dwt_cyccnt;
}
#else
__attribute__((weak)) uint32_t mc_platform_cycles(void)
{
    return 0u;
}
#endif

/* The model-independent part of the runtime: arena checks, tensor lookup, and the
 * kernel loop with its optional per-kernel profiling hook. */
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

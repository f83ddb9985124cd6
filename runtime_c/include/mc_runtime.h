/* mc_runtime.h: the public C API of a microcompile model.
 *
 * The generated model (model.h/model.c) defines `const mc_model_t mc_model` and
 * `MC_MODEL_ARENA_BYTES` (an exported model N: N.h, `N_model` and `N_ARENA_BYTES`). The
 * application owns the arena (MC_ARENA_ALIGN-aligned, at least MC_MODEL_ARENA_BYTES long);
 * the runtime never allocates. Several models share one runtime, each with its own context.
 *
 *   static uint8_t arena[MC_MODEL_ARENA_BYTES] __attribute__((aligned(16)));
 *   mc_ctx_t ctx;
 *   if (mc_init(&ctx, &mc_model, arena, sizeof arena) != 0) { ... }
 *   memcpy(mc_input(&ctx, 0), data, mc_model.inputs[0].bytes);
 *   mc_run(&ctx);
 *   const int8_t *y = mc_output(&ctx, 0);
 *
 * A recurrent model (LSTM, SVDF) also keeps state between runs in a static buffer of
 * model.c (mc_model.state_bytes, not the arena); mc_reset_state starts over.
 */
#ifndef MC_RUNTIME_H
#define MC_RUNTIME_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MC_ARENA_ALIGN 16u

/* Return codes of mc_init / mc_run. */
#define MC_OK 0
#define MC_ERR_ARGS (-1)
#define MC_ERR_ARENA_SIZE (-2)
#define MC_ERR_ARENA_ALIGN (-3)

/* MC_UINT32 / MC_UINT64: the plain integers of TFLite Micro's signal ops (no scale). */
typedef enum { MC_INT8 = 0, MC_FLOAT32 = 1, MC_INT32 = 2, MC_INT16 = 3, MC_UINT32 = 4, MC_UINT64 = 5 } mc_dtype_t;

typedef struct {
    const char *name;
    mc_dtype_t dtype;
    uint32_t offset; /* in arena */
    uint32_t bytes;
    uint32_t ndim;
    const int32_t *shape;
    float scale;
    int32_t zero_point;
} mc_tensor_t;

typedef void (*mc_kernel_fn)(uint8_t *arena);

typedef struct {
    const char *name;
    const char *op;
    uint32_t macs;
    mc_kernel_fn fn;
} mc_kernel_t;

typedef struct {
    uint32_t arena_bytes;
    uint32_t num_inputs;
    const mc_tensor_t *inputs;
    uint32_t num_outputs;
    const mc_tensor_t *outputs;
    uint32_t num_kernels;
    const mc_kernel_t *kernels;
    /* Recurrent state (LSTM, SVDF) persists between inferences in a static buffer of
     * model.c, state_bytes long; reset_state (NULL without state) sets it to its initial
     * value. */
    uint32_t state_bytes;
    void (*reset_state)(void);
    /* Weights copied from flash to RAM (--weights-in-ram): copies them; NULL without any.
     * mc_init calls it. */
    void (*load_weights)(void);
} mc_model_t;

typedef void (*mc_profile_hook)(void *user, uint32_t kernel_index, uint32_t cycles);

typedef struct {
    const mc_model_t *model;
    uint8_t *arena;
    mc_profile_hook hook;
    void *hook_user;
} mc_ctx_t;

/* 0 ok; MC_ERR_ARENA_SIZE if arena_bytes < model->arena_bytes,
 * MC_ERR_ARENA_ALIGN if the arena is not MC_ARENA_ALIGN-aligned. */
int mc_init(mc_ctx_t *ctx, const mc_model_t *model, uint8_t *arena, size_t arena_bytes);
/* Pointer into the arena for input/output i; NULL if i is out of range. */
void *mc_input(mc_ctx_t *ctx, uint32_t i);
void *mc_output(mc_ctx_t *ctx, uint32_t i);
/* Runs the kernels in order. If a hook is set, calls it after each kernel with
 * the platform cycle-counter delta of that kernel. Returns 0. A recurrent model's
 * state carries over from one mc_run to the next (a stream of frames). */
int mc_run(mc_ctx_t *ctx);
/* Runs kernels [0, end) only, without the hook (the host agent reads a planned tensor right
 * after its kernel ran). MC_ERR_ARGS if end exceeds the kernel count; 0 otherwise. */
int mc_run_until(mc_ctx_t *ctx, uint32_t end);
/* Back to the initial state (mc_init does it too): the next mc_run starts a new sequence. */
void mc_reset_state(mc_ctx_t *ctx);
void mc_set_profile_hook(mc_ctx_t *ctx, mc_profile_hook hook, void *user);

/* Elements of tensor t (its bytes over its element size). */
uint32_t mc_tensor_elements(const mc_tensor_t *t);
/* mc_tensor_elements(t) floats into t's dtype with t's scale and zero point, as TFLite's
 * QUANTIZE does (round half away from zero, saturate; NaN becomes the lowest value); a
 * float32 tensor is copied. Typical use: mc_quantize_f32(&N_model.inputs[0], x, mc_input(&ctx, 0)).
 * Returns MC_OK, or MC_ERR_ARGS for an int32 tensor or a NULL pointer. No maths library needed. */
int mc_quantize_f32(const mc_tensor_t *t, const float *src, void *dst);
/* The opposite: t's int8/int16 values as floats, (q - zero_point) * scale, bit-exact with
 * microcompile's Python dequantize; float32 is copied. Returns MC_OK or MC_ERR_ARGS. */
int mc_dequantize_f32(const mc_tensor_t *t, const void *src, float *dst);

#ifdef __cplusplus
}
#endif

#endif /* MC_RUNTIME_H */

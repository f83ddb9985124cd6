"""The schedule version: what a tuning record's trace and knob values mean.

A record (tune/records.py) names knob values and replays a trace of schedule primitives; both
are only meaningful against the default schedules and knob semantics they were measured with.
Every record carries SCHEDULE_VERSION, and `deploy/run/profile --records` and `tune --resume`
ignore records of another version with a note, so an old record is never misapplied.

BUMP SCHEDULE_VERSION (by one) in the same commit that changes a default schedule (a default
knob value, a default tile, the widening rule), adds, removes or renames a knob or a knob
value, or changes what a knob value or a primitive does. Adding a new kernel family's knobs
without touching the existing ones needs no bump (its workloads have no records yet).
Records written before the version existed have none and count as version 0.

    1  issue 10: knob spaces of conv2d, fully_connected, depthwise, add, pooling, softmax,
       elementwise (schedule/knobs.py, schedule/spaces.py) and the defaults with the tuner's
       folded findings (im2col blocks within a conv's arena slack, schedule/blocks.py)
    2  conv2d knobs pointwise, pad_split, cache_read_at, cache_write_at; pad_split's default is
       auto (the interior rows' im2col copy without a row test wherever it applies)
    3  conv2d knobs gemm_loop_order and gemm_tile; gemm_tile's default is auto (4x2 where offered
       and the input channels are widened by calls)
       fully_connected knob fc_input; with int16 weights on DSP cores the default reads the
       int8 input in place (mc_gemm_p4_dsp_s16_s8) instead of widening it into scratch, so the
       arena no longer keeps large layers' weights int8
    4  depthwise knob value depthwise_kernel=rows (the whole-layer 3x3 kernel, the default on DSP
       cores where its ring fits) and knob depthwise_rows_block (schedule/depthwise_intrin.py)
    5  on Helium cores the int8 im2col copy's runs of input channels are one mc_copy_mve_s8 call
       each (schedule/gemm_schedule.py MVE_COPY_MIN_RUN)
    6  the "loops" family (knobs loop_order, split_inner) is replaced by the "sketch" family
       derived from the loop nest (schedule/sketch.py: knob sketch); its default tiles reduction
       blocks by 4 (tile4); float and int16 depthwise and float adds moved to it
    7  on Helium cores float32 conv2d and fully_connected call the vector GEMM kernels
       (mc_gemm_p4_<clamp>mve_f32) and copy im2col runs by vectors (mc_copy_mve_f32); float32
       depthwise's default sketch there is `tensorize` (mc_depthwise_<clamp>mve_f32), which the
       sketch value `tensorize` now reaches
    8  the int16 DSP requantizing GEMM kernels read bias, multipliers and shifts as one records
       constant made at compile time (RQ_RECORD_KERNELS), and the default trace drops the
       constants no code reads any more (drop_unused_constants); an odd depth's int16 im2col
       columns are spaced to an even stride (cache_read's even_rows argument) for their
       assembly tail of pairs
    9  conv2d knob im2col (auto | columns | window); its default, auto, is window where it
       applies (schedule/window.py: a row block's shared input columns cached once and read as
       overlapping columns, weights laid out (oc, kw, kh, ic)); fully_connected with
       fc_input=int16 on DSP cores is one call of the fused kernel mc_gemm_p4_rq_away_dsp_s16
       (no int32 tile) where LiteRT's rounding fits it, and the compiler takes fc_input=int16
       wherever the widened input row fits the arena's slack (schedule/blocks.py)
   10  on Helium cores the whole-layer 3x3 depthwise kernel runs in passes of
       depthwise_rows_block channels (primitive depthwise_layer_mve's block argument): a layer
       whose rows of every channel exceed LAYER_MVE_BYTES_MAX takes the most channels that fit
       (the per-pixel kernel before), and more where the arena has slack
"""

SCHEDULE_VERSION = 10

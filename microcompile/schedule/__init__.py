"""Schedules over the loop IR: primitives, replayable traces and the default schedule."""

from .primitives import PRIMITIVES, ScheduleError, primitive, reorder, split, unroll  # noqa: F401
from .tensorize import TENSOR_INTRINS, TensorIntrin, affine, perfect_nest, tensor_intrin, tensorize  # noqa: F401
from .trace import Decision, Schedule, Trace  # noqa: F401

# The modules that register primitives (@primitive) and tensor intrinsics (@tensor_intrin).
from . import cache, copy_intrin, depthwise_intrin, gemm_intrin, gemm_mixed_intrin, loop_xform, tabulate  # noqa: F401,E402
from . import depthwise_f32, gemm_f32, window  # noqa: F401,E402
from .loop_xform import compute_at, vectorize  # noqa: F401,E402
from .default import default_schedule  # noqa: F401,E402
from .variants import KERNEL_SETS, kernel_set  # noqa: F401,E402
from .knobs import KNOBS, Knob, declare_knob  # noqa: F401,E402
from .spaces import (FAMILIES, InvalidConfig, KnobSpace, apply_config, default_config,  # noqa: F401,E402
                     knob_space)

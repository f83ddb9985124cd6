"""Schedules over the loop IR: primitives, replayable traces and the default schedule."""

from . import cache, copy_intrin, gemm_intrin, loop_xform, tensorize as _tensorize  # noqa: F401  (register primitives, intrinsics)
from .loop_xform import compute_at, vectorize  # noqa: F401
from .default import default_schedule  # noqa: F401
from .tensorize import TENSOR_INTRINS, TensorIntrin, affine, perfect_nest, register_tensor_intrin, tensorize  # noqa: F401
from .primitives import PRIMITIVES, ScheduleError, reorder, split, unroll  # noqa: F401
from .trace import Decision, Schedule, Trace  # noqa: F401

"""Static arena planning: liveness -> pure planner -> plan (with an overlap check)."""

from .liveness import BufferReq  # noqa: F401
from .plan import MemoryPlan, plan_memory  # noqa: F401
from .planner import OverlapError, check_no_overlap, greedy_by_size  # noqa: F401

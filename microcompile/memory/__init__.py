"""Static arena planning: liveness -> pure planner -> plan (with an overlap check), plus the
in-place rules (inplace.py) and the execution order that lowers the peak (order.py)."""

from .liveness import Alias, BufferReq, Overlap, live_bytes, lower_bound  # noqa: F401
from .plan import MemoryPlan, plan_memory  # noqa: F401
from .planner import (OverlapError, branch_and_bound, check_no_overlap, greedy_by_conflict,  # noqa: F401
                      greedy_by_size)
from .inplace import concat_slices, overlap_rules  # noqa: F401,E402
from .liveness import aliases  # noqa: F401,E402
from .order import best_order  # noqa: F401,E402

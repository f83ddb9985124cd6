"""Schedules over the loop IR: primitives, replayable traces and the default schedule."""

from .default import default_schedule  # noqa: F401
from .primitives import PRIMITIVES, ScheduleError, reorder, split, unroll  # noqa: F401
from .trace import Decision, Schedule, Trace  # noqa: F401

"""Autotuning: workloads deduplicated by key (workload.py), knob spaces (schedule/spaces.py),
search strategies (search.py), the tuning loop (tuner.py) and JSON-lines records (records.py).
The measuring (build, device, bit-exact check) and `tune_model` are in run.py."""

from .records import Environment, Outcome, RecordWriter, Selection, read_records, record, select  # noqa: F401
from .search import COST_MODELS, STRATEGIES, check_cost_model, make_search  # noqa: F401
from .tuner import Budget, Plan, TuneResult, WorkloadStats, tune  # noqa: F401
from .workload import Workload, extract_workloads, workload_key  # noqa: F401

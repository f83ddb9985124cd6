"""The Ray executor on a local Ray instance started by the test (ray.init(num_cpus=2)): trials
run as Ray tasks, two at a time, each with its own QEMU twin, and their records are the same
as the local executor's. Slow (Ray starts worker processes); skipped when Ray, the optional
extra microcompile[ray], is not installed (an allowed reason in tests/skip_budget.py)."""

from __future__ import annotations

import subprocess

import pytest

import microcompile as mc
from microcompile.errors import UserError
from microcompile.autotune import Budget, read_records
from support import multi_op_models as M
from tests.skip_budget import NO_RAY



@pytest.mark.slow
@pytest.mark.qemu
def test_trials_run_as_ray_tasks_on_a_local_instance(tmp_path):
    # Imported here, not at module level: a collection-time skip would count against the skip
    # budget even where the slow marker deselects this test (CI).
    ray = pytest.importorskip("ray", reason=NO_RAY)
    path = M.write("dscnn_int8", tmp_path)
    records = tmp_path / "tune.jsonl"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with pytest.raises(UserError, match="resource 'board:nucleo-f446re'"):
            from microcompile.autotune.ray_executor import RayExecutor
            RayExecutor(None, board="nucleo-f446re")
        options = mc.TuneOptions(Budget(trials=5), jobs=2, executor="ray", work_dir=tmp_path / "work")
        result = mc.tune(mc.compile(path, "mps2-an386"), records=records, options=options,
                         link=mc.Link(emulate=True, timeout=10)).result
    finally:
        ray.shutdown()
    recs, _ = read_records(records)
    measured = [r for r in recs if r["status"] != "invalid"]
    assert result.trials == 5 and len(measured) == 5
    assert all(r["status"] == "ok" and r["count"] > 0 for r in measured), [r["error"] for r in measured]
    assert sorted(d.name for d in (tmp_path / "work").iterdir()) == ["job0", "job1"]
    out = subprocess.run(["pgrep", "-af", "qemu-system"], capture_output=True, text=True).stdout
    assert str(tmp_path) not in out, "a QEMU was left running"

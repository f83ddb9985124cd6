"""What `--records` says it used: the file's records for this core, not only the winners (a
file of 101 records that beat no default was reported as "0 in the file for this core")."""

from types import SimpleNamespace

from microcompile.autotune.records import Environment, select, tuned_summary

ENV = Environment("mps2-an386", "cortex-m4f", "dsp", ("-mcpu=cortex-m4",), "arm-none-eabi-gcc 12")


def _rec(workload: str, count: int, default: bool = False, core: str = "cortex-m4f") -> dict:
    return {"v": 1, "workload": workload, "status": "ok", "count": count, "unit": "instructions",
            "trace": [{"primitive": "knob", "args": ["x", 1]}], "default": default, "core": core,
            "kernel_set": "dsp", "toolchain": ENV.toolchain, "schedule_version": ENV.schedule_version}


def test_records_none_faster_than_the_default_are_counted_and_said():
    records = [_rec("w1", 100, default=True)] + [_rec("w1", 100 + k) for k in range(100)] + [_rec("w2", 50, core="x")]
    sel = select(records, ENV)
    assert sel.best == {} and sel.applicable == 101 and sel.slower == 1
    compiled = SimpleNamespace(tuned={}, kernels=[1, 2, 3], patch=None)
    text = tuned_summary(compiled, sel)
    assert "the file holds 101 record(s) for this core and toolchain" in text
    assert "1 no faster than their default" in text and "0 of 3 kernels tuned" in text
    assert any("1 record(s) from core x/dsp ignored" in n for n in sel.notes)


def test_a_faster_record_is_used():
    sel = select([_rec("w1", 100, default=True), _rec("w1", 90)], ENV)
    assert list(sel.best) == ["w1"] and sel.slower == 0 and sel.applicable == 2

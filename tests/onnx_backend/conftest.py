"""Print the backend suite's counts per category (the figures the README quotes)."""

from collections import Counter


def pytest_terminal_summary(terminalreporter):
    counts: Counter = Counter()
    for reports in terminalreporter.stats.values():
        for r in reports:
            nodeid = getattr(r, "nodeid", "")
            if getattr(r, "when", None) != "call" or "test_onnx_backend.py::OnnxBackend" not in nodeid:
                continue
            category = nodeid.split("::")[1].replace("OnnxBackend", "").replace("ModelTest", "")
            counts[(category, r.outcome)] += 1
    if not counts:
        return
    terminalreporter.section("ONNX backend suite (tests/onnx_backend/expected_pass.txt)")
    for category in sorted({c for c, _ in counts}):
        row = {k: counts[(category, k)] for k in ("passed", "failed", "skipped")}
        terminalreporter.write_line(f"{category:18s} " + "  ".join(f"{k} {v}" for k, v in row.items()))


def pytest_ignore_collect(collection_path, config):
    """Generating onnx's ~1900 node test cases takes ~20 s; skip it when slow tests are off."""
    if collection_path.name == "test_onnx_backend.py" and "not slow" in (config.option.markexpr or ""):
        return True
    return None

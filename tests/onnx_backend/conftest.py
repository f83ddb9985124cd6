"""Print the backend suite's counts (the figures issue 4's closing note quotes)."""

from collections import Counter


def _kind(report) -> str:
    if report.skipped:
        reason = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr)
        return "excluded" if "exclude pattern" in reason else "unsupported"
    return report.outcome


def pytest_terminal_summary(terminalreporter):
    counts: Counter = Counter()
    for reports in terminalreporter.stats.values():
        for r in reports:
            if getattr(r, "when", None) in ("call", "setup") and "test_onnx_backend.py::" in getattr(r, "nodeid", ""):
                if r.when == "setup" and not r.skipped and r.passed:
                    continue
                category = r.nodeid.split("::")[1].replace("OnnxBackend", "").replace("ModelTest", "")
                counts[(category, _kind(r))] += 1
    if not counts:
        return
    terminalreporter.section("ONNX backend suite")
    for category in sorted({c for c, _ in counts}):
        row = {k: counts[(category, k)] for k in ("passed", "failed", "unsupported", "excluded")}
        terminalreporter.write_line(f"{category:18s} " + "  ".join(f"{k} {v}" for k, v in row.items()))


def pytest_ignore_collect(collection_path, config):
    """Generating onnx's ~1900 node test cases takes ~20 s; skip it when slow tests are off."""
    if collection_path.name == "test_onnx_backend.py" and "not slow" in (config.option.markexpr or ""):
        return True
    return None

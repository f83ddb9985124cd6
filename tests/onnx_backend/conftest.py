"""The backend suite's collection switch (its per-category counts are printed by the root
conftest, which pytest-xdist's controller loads; this one only its workers do)."""


def pytest_ignore_collect(collection_path, config):
    """Generating onnx's ~1900 node test cases takes ~20 s; skip it when heavy tests are off."""
    if collection_path.name == "test_onnx_backend.py" and "not heavy" in (config.option.markexpr or ""):
        return True
    return None

"""Helpers the tests share, importable as `support.<module>` (tests/ is on sys.path through the
root conftest), so that no test edits sys.path to reach another test directory's helpers."""

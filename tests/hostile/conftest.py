"""Hostile inputs (issue 22): models, projects and output paths built to make microcompile
misbehave. Each test asserts the exact outcome: exit 0 with matching outputs, or exit 2 with a
message naming the problem; never exit 3, never a traceback, never a write outside -o."""

"""Hostile inputs (issue 22): models built to make microcompile misbehave. Each test asserts the
exact outcome: exit 0 with matching outputs, or exit 2 with a message naming the problem."""

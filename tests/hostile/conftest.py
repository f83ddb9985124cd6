"""Hostile inputs: files that attack or are not models. Each test asserts the exact outcome."""

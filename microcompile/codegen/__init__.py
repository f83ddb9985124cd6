"""Code generation: loop IR -> C, the model/weights templates, and manifest.json."""

from .model_emitter import MemoryPlan, emit_artifact  # noqa: F401

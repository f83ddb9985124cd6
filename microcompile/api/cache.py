"""Where a project goes when the user names no directory: a per-user cache (platformdirs'
user cache directory, e.g. ~/.cache/microcompile on Linux; $XDG_CACHE_HOME is honoured), one
directory per model, board, kind of firmware and build id, so that a rerun finds its build."""

from __future__ import annotations

from pathlib import Path

from ..deploy import Artifact, BuildOptions
from ..escape import c_identifier
from ..project.agent import build_id


def cache_root() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("microcompile", appauthor=False)) / "projects"


def project_cache_dir(artifact: Artifact, options: BuildOptions) -> Path:
    """The cache directory of `artifact` built with `options`."""
    kind = "agent" if options.agent else "trace" if options.trace else "selftest"
    platform = "twin" if options.emulate else "board"
    bid = build_id(artifact.directory, artifact.compiled.manifest)
    name = c_identifier(artifact.name)[:40]
    return cache_root() / f"{name}-{artifact.board.name}-{kind}-{platform}-{bid}"

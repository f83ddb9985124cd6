"""What the export templates print: the environment over templates/export and the values of
the build files, every one a name microcompile made (generated())."""

from __future__ import annotations

import hashlib
import math

from .. import __version__
from ..codegen.c_emitter import C_TYPES
from ..resources import resource_dir
from ..templating import environment, generated
from .tree import LibraryTree


def env():
    return environment(resource_dir("templates") / "export")


def export_id(tree: LibraryTree) -> str:
    """A short name for this export's build-file variables: two exports in one build differ."""
    return hashlib.sha256(",".join(m.name for m in tree.models).encode()).hexdigest()[:8]


def build_values(tree: LibraryTree, lang: str) -> dict:
    """What the build-file templates print, each value marked generated for `lang`."""
    def g(text) -> str:
        return generated(str(text), lang)

    board = tree.board
    groups = [{"name": g(name), "sources": [g(s) for s in sources]}
              for name, sources in sorted(tree.kernel_groups.items())]
    models = [{"name": g(m.name), "sources": [g(s) for s in tree.model_sources(m)],
               "arena_bytes": m.manifest["arena_bytes"], "weights_bytes": m.manifest["weights_bytes"],
               "kernels": [g(name) for name in sorted(tree.kernel_groups) if f"mc_{name}.h" in m.kernel_headers]}
              for m in tree.models]
    bsp = None
    if tree.bsp:
        bsp = {"sources": [g(s) for s in tree.bsp["sources"]], "include_dirs": [g(d) for d in tree.bsp["include_dirs"]],
               "defines": [g(d) for d in tree.bsp["defines"]],
               "linker_script": g(tree.bsp["linker_script"]) if tree.bsp["linker_script"] else None}
    return {"version": g(__version__), "board": g(board.name), "core": g(board.target.core),
            "export_id": g(export_id(tree)), "models": [g(m.name) for m in tree.models],
            "runtime_sources": [g(s) for s in tree.runtime_sources], "kernel_groups": groups,
            "model_targets": models, "bsp": bsp}


def sample_io(m) -> tuple[list[dict], list[dict]]:
    """What a sample program (the Arduino sketch, the Zephyr application) prints of model `m`
    (tree.ModelFiles): its test inputs as rows of C bytes, and each output's C type and size."""
    inputs = []
    for k, data in enumerate(m.test_inputs):
        rows = [", ".join(f"0x{b:02x}" for b in data[i:i + 16]) for i in range(0, len(data), 16)]
        inputs.append({"index": k, "bytes": len(data), "rows": [generated(r) for r in rows]})
    outputs = [{"index": k, "dtype": generated(C_TYPES[o["dtype"]]), "elements": math.prod(o["shape"]),
                "float": o["dtype"] == "float32"} for k, o in enumerate(m.manifest["outputs"])]
    return inputs, outputs

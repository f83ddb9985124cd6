"""Each export format's build files, over the shared tree (tree.py).

    cmake        CMakeLists.txt for add_subdirectory: microcompile::runtime, microcompile::<N>
    make         microcompile.mk to include: MC_SRCS, MC_INCLUDES, MC_CFLAGS, MC_LDLIBS
    lib          (library.py) libmicrocompile_<N>.a built with the board's core flags
    arduino      (arduino.py) an Arduino library with an example sketch
    zephyr       (zephyr.py) a Zephyr module with a sample application
    cmsis-pack   (cmsis_pack.py) a .pdsc and the .pack archive

Every value a template prints is a name microcompile made (a checked model name, a path of
its own files, the board data's flags): generated(); a name from the model goes through the
template language's filter (md_code in README.md).
"""

from __future__ import annotations

import numpy as np

from .. import __version__
from ..project.generate import bsp_files
from ..project.placement import model_banks
from ..templating import generated
from . import arduino, cmsis_pack, library, measure, zephyr
from .options import ExportOptions
from .render import build_values, env
from .tree import LibraryTree, describe, finish

_WRITERS = {"lib": library.write, "arduino": arduino.write, "zephyr": zephyr.write, "cmsis-pack": cmsis_pack.write}

_USAGE = {
    "cmake": ("In your CMakeLists.txt:\n\n```cmake\nadd_subdirectory(path/to/this/directory microcompile)\n"
              "target_link_libraries(app PRIVATE {targets})\n```\n\nThe core flags come from your toolchain "
              "file; the targets add `-O2` for the kernels whatever the build type."),
    "make": ("In your Makefile:\n\n```make\ninclude path/to/this/directory/microcompile.mk\nSRCS += $(MC_SRCS)\n"
             "CFLAGS += $(MC_INCLUDES)\nLDLIBS += $(MC_LDLIBS)\n```\n\nCompile `$(MC_SRCS)` with `$(MC_CFLAGS)` "
             "besides your core flags (`-O2`: the kernels' inline assembly needs an optimizing build)."),
}


def write_format(tree: LibraryTree, options: ExportOptions) -> dict:
    """Add the format's files, the board support when asked, README.md and microcompile.json
    to `tree`; returns microcompile.json's content."""
    if options.bsp:
        banks = sorted({b for m in tree.models for b in model_banks(m.manifest)})
        files, sources, include_dirs, defines = bsp_files(tree.board, options.emulate, tuple(banks))
        for rel, data in files.items():
            tree.add(rel, data)
        tree.bsp = {"sources": sources, "include_dirs": include_dirs, "defines": defines,
                    "linker_script": "bsp/linker.ld" if "bsp/linker.ld" in files else None,
                    "platform": "twin" if options.emulate else "board"}
    extra = {}
    if options.format == "cmake":
        tree.add("CMakeLists.txt", _render("CMakeLists.txt.j2", tree, "cmake"))
    elif options.format == "make":
        tree.add("microcompile.mk", _render("microcompile.mk.j2", tree, "make"))
    else:
        extra = _WRITERS[options.format](tree, options)
    tree.add("README.md", readme(tree, options.format, extra.pop("usage", None)))
    if options.format == "cmsis-pack":        # the archive holds README.md: made after it
        tree.add(extra["pack"], cmsis_pack.archive(tree, extra))
    return finish(tree, describe(tree, options.format, extra, measure.code_bytes(tree)))


def _render(template: str, tree: LibraryTree, lang: str) -> str:
    return env().get_template(template).render(**build_values(tree, lang))


def readme(tree: LibraryTree, fmt: str, usage: str | None = None) -> str:
    def g(text) -> str:
        return generated(str(text), "md")

    models = []
    for m in tree.models:
        man = m.manifest
        rows = {kind: [{"name": t["name"], "dtype": g(t["dtype"]), "shape": g(t["shape"]), "bytes": t["bytes"],
                        "scale": g(f"{t['scale']:.9g}"), "zero_point": t["zero_point"]} for t in man[kind]]
                for kind in ("inputs", "outputs")}
        models.append({"name": g(m.name), "macro": g(m.name.upper()), "source": man["model"],
                       "arena_bytes": man["arena_bytes"], "weights_bytes": man["weights_bytes"],
                       "kernels": len(man["kernels"]), **rows,
                       "in_elements": int(np.prod(man["inputs"][0]["shape"])) if man["inputs"] else 0,
                       "out_elements": int(np.prod(man["outputs"][0]["shape"])) if man["outputs"] else 0})
    targets = " ".join(f"microcompile::{m.name}" for m in tree.models)
    text = usage if usage is not None else _USAGE[fmt].format(targets=targets)
    title = "microcompile library: " + ", ".join(m.name for m in tree.models)
    return env().get_template("README.md.j2").render(
        title=g(title), version=g(__version__), board=g(tree.board.name), core=g(tree.board.target.core),
        format=g(fmt), models=models, usage=g(text))

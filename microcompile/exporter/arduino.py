"""The `arduino` format: an Arduino library (the 1.5 library specification).

    DIR/library.properties
    DIR/src/            every source and header in one folder: Arduino compiles src/ and its
                        subfolders but puts only src/ on the include path
    DIR/src/microcompile_<names>.h   the header a sketch includes (every N.h)
    DIR/examples/<N>/<N>.ino         runs model N on the test input `deploy` embeds, prints it

The shared tree's include/, runtime/ and models/ are moved into src/ (their file names do not
collide: the runtime's start with mc_, which no model name may).
"""

from __future__ import annotations

from .. import __version__
from ..templating import generated
from .render import env, sample_io
from .options import ExportOptions
from .tree import LibraryTree

def library_name(tree: LibraryTree) -> str:
    return "microcompile_" + "_".join(m.name for m in tree.models)


def write(tree: LibraryTree, options: ExportOptions) -> dict:
    name = library_name(tree)
    tree.flatten("src/")
    tmpl = env()

    def t(text) -> str:
        return generated(str(text), "text")

    tree.add("library.properties", tmpl.get_template("library.properties.j2").render(
        name=t(name), version=t(__version__), models=t(", ".join(m.name for m in tree.models)),
        core=t(tree.board.target.core), board=t(tree.board.name), header=t(f"{name}.h")))
    tree.add(f"src/{name}.h", tmpl.get_template("arduino_library.h.j2").render(
        guard=generated(name.upper() + "_H"), models=[generated(m.name) for m in tree.models],
        version=generated(__version__)))
    for m in tree.models:
        tree.add(f"examples/{m.name}/{m.name}.ino", sketch(tree, m, name))
    usage = (f"Copy this directory into your Arduino `libraries/` folder (or zip it and use Sketch > Include "
             f"Library > Add .ZIP Library), then open File > Examples > {name}. Include `<{name}.h>` in your "
             f"sketch. The kernels are for the {tree.board.target.core} core: a board with another core stops the "
             f"build with an #error naming the flags. Only the sources and the example were compiled here "
             f"(arm-none-eabi-g++ against a stub Arduino.h), not by the Arduino IDE.")
    return {"arduino_library": name, "usage": usage}


def sketch(tree: LibraryTree, m, library: str) -> str:
    inputs, outputs = sample_io(m)
    return env().get_template("sketch.ino.j2").render(
        library=generated(library), name=generated(m.name), macro=generated(m.name.upper()),
        model=m.manifest["model"], inputs=inputs, outputs=outputs, version=generated(__version__))

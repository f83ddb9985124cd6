"""The `zephyr` format: a Zephyr module (an external module, listed in the application's
ZEPHYR_EXTRA_MODULES or in a west manifest) with a sample application.

    DIR/zephyr/module.yml       name and build: cmake zephyr, kconfig zephyr/Kconfig
    DIR/zephyr/CMakeLists.txt   a zephyr_library of the runtime, the kernels and the models,
                                when CONFIG_MICROCOMPILE_<NAMES> is set
    DIR/zephyr/Kconfig          that option (it selects the maths library)
    DIR/samples/<N>/            CMakeLists.txt, prj.conf, src/main.c: runs N on the test input

Built here only as far as CMake parses the module's file and the sources compile: there is
no Zephyr SDK in the test environment (docs/export.md says so).
"""

from __future__ import annotations

from .. import __version__
from ..templating import generated
from .render import build_values, env, sample_io
from .options import ExportOptions
from .tree import LibraryTree


def module_name(tree: LibraryTree) -> str:
    return "microcompile_" + "_".join(m.name for m in tree.models)


def write(tree: LibraryTree, options: ExportOptions) -> dict:
    name = module_name(tree)
    option = "MICROCOMPILE_" + "_".join(m.name.upper() for m in tree.models)
    tmpl = env()

    def t(text) -> str:
        return generated(str(text), "text")

    tree.add("zephyr/module.yml", tmpl.get_template("module.yml.j2").render(name=t(name)))
    tree.add("zephyr/Kconfig", tmpl.get_template("Kconfig.j2").render(
        option=t(option), models=t(", ".join(m.name for m in tree.models)), version=t(__version__)))
    values = build_values(tree, "cmake")
    tree.add("zephyr/CMakeLists.txt", tmpl.get_template("CMakeLists.zephyr.j2").render(
        option=generated(option, "cmake"), library=generated(option.lower(), "cmake"), **values))
    for m in tree.models:
        man = m.manifest
        inputs, outputs = sample_io(m)
        base = f"samples/{m.name}"
        tree.add(f"{base}/CMakeLists.txt", tmpl.get_template("CMakeLists.sample.j2").render(
            name=generated(m.name, "cmake")))
        tree.add(f"{base}/prj.conf", f"CONFIG_{option}=y\nCONFIG_PRINTK=y\n")
        tree.add(f"{base}/src/main.c", tmpl.get_template("zephyr_main.c.j2").render(
            name=generated(m.name), macro=generated(m.name.upper()), model=man["model"], inputs=inputs,
            outputs=outputs, version=generated(__version__)))
    usage = (f"Add this directory to your application's Zephyr modules (`list(APPEND ZEPHYR_EXTRA_MODULES "
             f"path/to/this/directory)` before `find_package(Zephyr)`, or a west manifest entry), set "
             f"`CONFIG_{option}=y` in prj.conf, and include `<N.h>`. `samples/` holds an application per model "
             f"(`west build -b <board> samples/<N>`). Only checked here: module.yml against Zephyr's schema, the "
             f"CMake file parsed, the sources compiled; no Zephyr SDK was run.")
    return {"zephyr_module": name, "zephyr_option": f"CONFIG_{option}", "usage": usage}

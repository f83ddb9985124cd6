"""The `cmsis-pack` format: a CMSIS-Pack, the format Keil MDK, the CMSIS-Toolbox (csolution)
and pack-aware IDEs install.

    DIR/microcompile.<name>.pdsc                     the pack description
    DIR/microcompile.<name>.<version>.pack           a zip of the .pdsc and the files it lists

The description has a condition for the board's core (and its DSP, Helium and FPU), one
component for the runtime with the kernels the models use, and one per model that requires
it. The archive is deterministic: entries sorted, fixed dates and modes. Checked here against
Arm's published PACK.xsd; Arm's packchk was not run (not available in the test environment).
"""

from __future__ import annotations

import io
import zipfile

from .. import __version__
from ..errors import UserError
from ..templating import generated
from .render import env
from .options import ExportOptions
from .tree import LibraryTree

VENDOR = "microcompile"
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
# Our core names (a trailing f or d: with a single or double precision FPU) -> the pack
# schema's Dcore values.
_DCORE = {"cortex-m0": "Cortex-M0", "cortex-m0plus": "Cortex-M0+", "cortex-m3": "Cortex-M3",
          "cortex-m4": "Cortex-M4", "cortex-m7": "Cortex-M7", "cortex-m23": "Cortex-M23",
          "cortex-m33": "Cortex-M33", "cortex-m55": "Cortex-M55", "cortex-m85": "Cortex-M85"}
_DFPU = {"none": "NO_FPU", "fpv4-sp-d16": "SP_FPU", "fpv5-sp-d16": "SP_FPU", "fpv5-d16": "DP_FPU"}


def pack_name(tree: LibraryTree) -> str:
    return "microcompile_" + "_".join(m.name for m in tree.models)


def dcore(core: str) -> str:
    key = core.lower()
    for name in (key, key.rstrip("fd")):
        if name in _DCORE:
            return _DCORE[name]
    raise UserError(f"core {core} has no CMSIS-Pack device core name",
                    hint="export for an Arm Cortex-M board, or use --format cmake/make/lib")


def write(tree: LibraryTree, options: ExportOptions) -> dict:
    t = tree.board.target
    if t.is_host:
        raise UserError("a CMSIS-Pack is for Arm Cortex-M devices, not the host board",
                        hint="export for an Arm board (e.g. --board mps2-an386), or use --format cmake/make")
    name = pack_name(tree)
    files = [rel for rel in sorted(tree.files) if rel.startswith(("include/", "runtime/", "models/"))] + ["README.md"]
    pdsc_name = f"{VENDOR}.{name}.pdsc"
    pack_file = f"{VENDOR}.{name}.{__version__}.pack"

    def x(text) -> str:
        return generated(str(text), "xml")

    kernels = sorted(s for g in tree.kernel_groups.values() for s in g)
    models = [{"name": x(m.name), "arena_bytes": m.manifest["arena_bytes"],
               "weights_bytes": m.manifest["weights_bytes"], "model": m.manifest["model"],
               "sources": [x(s) for s in tree.model_sources(m)], "header": x(f"include/{m.name}.h")}
              for m in tree.models]
    headers = [x(rel) for rel in files if rel.startswith("include/mc_")]
    pdsc = env().get_template("pack.pdsc.j2").render(
        name=x(name), vendor=x(VENDOR), version=x(__version__), board=x(tree.board.name), core=x(t.core),
        dcore=x(dcore(t.core)), dfpu=x(_DFPU.get(t.fpu_kind, "NO_FPU")) if t.fpu else None,
        dsp=t.dsp, mve=t.mve, runtime_sources=[x(s) for s in tree.runtime_sources],
        kernel_sources=[x(s) for s in kernels], headers=headers, models=models, readme=x("README.md"))
    tree.add(pdsc_name, pdsc)
    tree.add("README.md", b"")         # a placeholder: formats.write_format writes README.md after us
    usage = (f"Install `{pack_file}` in your IDE's pack installer (Keil MDK: Pack Installer > File > Import; "
             f"CMSIS-Toolbox: `cpackget add {pack_file}`), then select the components Data Processing > "
             f"microcompile > runtime and the models in the run-time environment. Checked here against Arm's "
             f"PACK.xsd; `packchk` was not run.")
    return {"pack": pack_file, "pdsc": pdsc_name, "pack_files": files, "usage": usage}


def archive(tree: LibraryTree, description: dict) -> bytes:
    """The .pack: the .pdsc at its root and every file it lists, deterministic."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for rel in sorted([description["pdsc"], *description["pack_files"]]):
            info = zipfile.ZipInfo(rel, date_time=_ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, tree.files[rel])
    return buf.getvalue()

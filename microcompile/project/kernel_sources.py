"""The runtime kernel sources a model links: for each runtime header its generated C includes
(the manifest's `runtime_headers`), the portable file of that name and, on a core with the DSP
extension or Helium, that header's files in the feature folder. A project compiles these and no
others (all of them took half of kws's build), and a library export ships the same.

That they are all a model needs rests on two facts of runtime_c/, checked by
tests/project/test_kernel_sources.py: no kernel source calls an mc_ function of another kernel
source (each calls only its own and the runtime core's), and no header's inline function calls
one either."""

from __future__ import annotations

from pathlib import Path

from ..resources import resource_dir
from ..target import Board

FEATURE_DIRS = (("dsp", "_dsp"), ("mve", "_mve"))


def kernel_headers(artifact_headers: list[str]) -> list[str]:
    """The runtime kernel headers among the ones a model's C includes."""
    runtime = resource_dir("runtime_c") / "include"
    return sorted(h for h in artifact_headers if (runtime / h).is_file())


def feature_sources(runtime: Path, feature: str, suffix: str, stem: str) -> list[Path]:
    """A header's sources in a feature folder: <stem><suffix>.c and <stem>_<part><suffix>.c
    (mc_depthwise_rows_dsp.c: a kernel of mc_depthwise.h in a file of its own), but not the
    files of another header that shares the prefix (mc_gemm_mixed_dsp.c is mc_gemm_mixed.h's)."""
    folder = runtime / "kernels" / feature
    out = []
    for path in sorted(folder.glob(f"{stem}*{suffix}.c")):
        middle = path.name[len(stem):-len(f"{suffix}.c")]
        if middle == "" or (middle.startswith("_") and not (runtime / "include" / f"{stem}{middle}.h").is_file()):
            out.append(path)
    return out


def kernel_sources(board: Board, headers: list[str]) -> dict[str, list[tuple[Path, str]]]:
    """header stem -> its sources for `board`'s core, each as (file, path in a project or
    export: runtime/kernels[/feature]/name.c); headers with no source are left out."""
    runtime = resource_dir("runtime_c")
    groups = {}
    for header in sorted(set(headers)):
        stem = header[:-2]
        candidates = [(runtime / "kernels" / f"{stem}.c", f"runtime/kernels/{stem}.c")]
        for feature, suffix in FEATURE_DIRS:
            if getattr(board.target, feature):
                candidates += [(path, f"runtime/kernels/{feature}/{path.name}")
                               for path in feature_sources(runtime, feature, suffix, stem)]
        found = [(path, rel) for path, rel in candidates if path.is_file()]
        if found:
            groups[stem] = found
    return groups

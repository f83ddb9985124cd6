"""Turn an artifact (manifest + C files) into a standalone Makefile project for a board.

Layout of the generated project:
    Makefile, linker.ld, main.c, test_input.c/.h, manifest.json
    model/      the artifact's C sources and headers
    runtime/    runtime_c/ include, src, kernels
    board/      the board's (and its twin's) startup and platform sources
    .microcompile-project   marker: board, platform, the files we wrote, and whether
                            the generation completed

A new project directory is complete or absent (staging.py); an existing one is updated in
place with the marker written first (complete: false) and last (complete: true).

Every file is written through files.OutputTree: an existing project directory is hostile until
checked, and a symlink or hard link in it (main.c pointing at a file elsewhere, model/ at
another directory) is replaced, never written through. The marker's list of files is read
from that directory too: its names are used only inside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from microcompile.errors import BoardError, UserError
from microcompile.escape import json_text, make_shell_word
from microcompile.files import OutputTree, check_output_dir, read_file
from microcompile.templating import environment, generated
from microcompile.project.agent import build_id as agent_build_id
from microcompile.project.agent import template_values as agent_values
from microcompile.project.fit import check_manifest_fits
from microcompile.project.kernel_sources import kernel_headers, kernel_sources
from microcompile.project.flash_runners import make_command
from microcompile.project.manifest import DTYPES, MANIFEST_NAME, load_manifest
from microcompile.project.options import BuildOptions
from microcompile.project.placement import Placement, model_banks, placement
from microcompile.project.staging import staged
from microcompile.project.trace import template_rows as trace_rows
from microcompile.resources import resource_dir
from microcompile.target import Board, load_board

MARKER = ".microcompile-project"
MARKER_BYTES_MAX = 16 << 20   # a marker lists a project's few hundred files; anything larger is not ours
QEMU_FLAGS = "-nographic -monitor none -semihosting -icount shift=0,sleep=off"


def _kib(n: int) -> str:
    return f"{n / 1024:.0f}" if n % 1024 == 0 else f"{n / 1024:.1f}"


def check_fits(manifest: dict, board: Board, where: Placement | None = None) -> None:
    """Fail early (BoardError) when the weights or the arena (with the stack, when they share a
    bank) exceed their banks, with what would help (project/fit.py). Uses only the manifest's
    figures; the fit report after the link checks everything."""
    if board.is_host:
        return
    check_manifest_fits(manifest, board, where or placement(board))


def _env():
    return environment(resource_dir("templates") / "project")


def _input_bytes(spec: dict, array: np.ndarray) -> bytes:
    array = np.asarray(array)
    if tuple(array.shape) != tuple(spec["shape"]):
        raise UserError(f"test input for {spec['name']!r} has shape {tuple(array.shape)}, "
                        f"the model expects {tuple(spec['shape'])}")
    data = array.astype(DTYPES[spec["dtype"]], copy=False).tobytes()
    if len(data) != spec["bytes"]:
        raise UserError(f"test input for {spec['name']!r} is {len(data)} bytes, the model expects {spec['bytes']}")
    return data


def _hex_rows(data: bytes, per_row: int = 16) -> list[str]:
    return [generated(", ".join(f"0x{b:02x}" for b in data[i:i + per_row])) for i in range(0, len(data), per_row)]


def _board_sources(sources, include_dirs) -> tuple[list[str], list[str]]:
    return [f"board/{s}" for s in sources], [f"board/{d}" for d in include_dirs]


def _flash_command(board: Board) -> tuple[str, str]:
    """`make flash`'s runner and command line: the board's first runner that can run from make."""
    for name in board.flash_runners:
        cmd = make_command(board, name)
        if cmd is not None:
            return name, " ".join(make_shell_word(a) for a in cmd)
    return "(none)", ""


# Sections of firmware.bin: the load image of the code bank only (objcopy -O binary would fill
# the gap up to a weights bank elsewhere with zeros).
BIN_SECTIONS = (".isr_vector", ".text", ".rodata", ".ARM.extab", ".ARM.exidx", ".data")


def _bank_rows(board: Board, unbounded: bool = False) -> list[dict]:
    """MEMORY lines; `unbounded` makes every bank as large as the address space above it allows
    (up to 256 MiB), for measuring a firmware that does not fit (linker.measure.ld)."""
    rows = []
    for b in board.mcu.banks:
        length = min(0x10000000, 0x100000000 - b.origin) if unbounded else b.size
        rows.append({"name": generated(b.name, "ld"), "attrs": generated("rx" if b.kind == "flash" else "rwx", "ld"),
                     "origin": generated(f"0x{b.origin:08X}", "ld"), "length": generated(f"0x{length:08X}", "ld"),
                     "comment": f"{_kib(b.size)} KiB {b.kind}" + (f": {b.note}" if b.note else "")})
    return rows


class _Writer:
    """Writes files under a directory and remembers which ones (for the marker).

    A file whose content is unchanged is not rewritten, so its mtime stays and `make`
    rebuilds only what changed (a new test input recompiles test_input.c alone). No link in
    the directory is followed (files.OutputTree).
    """

    def __init__(self, out_dir: Path):
        self.tree = OutputTree(out_dir)
        self.files: list[str] = []

    def text(self, rel: str, text: str) -> None:
        self._write(rel, text.encode())

    def copy(self, rel: str, src: Path) -> None:
        self._write(rel, src.read_bytes())

    def _write(self, rel: str, data: bytes) -> None:
        self.files.append(rel)
        self.tree.write(rel, data)


def check_out_dir(out_dir: str | Path) -> list[str]:
    """Before any work: refuse a project directory that is a file, cannot be created, or is
    a non-empty directory microcompile did not make; return the files a previous generate wrote."""
    out_dir = check_output_dir(out_dir, "project directory")
    if not out_dir.exists() or not any(out_dir.iterdir()):
        return []
    marker = out_dir / MARKER
    if not marker.is_file():
        raise UserError(f"{out_dir} is not empty and was not generated by microcompile; refusing to overwrite it",
                        hint="choose a new or empty output directory")
    try:
        files = json.loads(read_file(marker, "project marker", MARKER_BYTES_MAX)).get("files", [])
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return []
    return [f for f in files if isinstance(f, str)] if isinstance(files, list) else []


@dataclass(frozen=True)
class _Job:
    """One generation: the artifact, the board, the self-test's inputs, the options."""

    artifact_dir: Path
    manifest: dict
    board: Board
    inputs: list[dict]            # the self-test's embedded inputs (template rows)
    options: BuildOptions
    where: Placement


def generate(artifact_dir: str | Path, board: Board | str, out_dir: str | Path,
             test_inputs: list[np.ndarray] | None, options: BuildOptions = BuildOptions()) -> Path:
    """Write a standalone Makefile project for `board` into `out_dir`; returns out_dir.

    `test_inputs` holds one array per model input (shape as in the manifest) that the
    self-test firmware embeds. `options` (BuildOptions): `emulate` selects the QEMU twin's
    platform as the Makefile's default PLATFORM (the linker script always uses the real
    board's memory). `trace` makes a trace build: the firmware also prints every kernel's
    outputs (project/trace.py parses them; `microcompile verify` compares them layer by layer).
    `agent` makes an agent build instead of the self-test: main.c serves the model over the
    console UART (project/agent.py, runtime_c/agent/); `test_inputs` is then unused and the
    marker records the firmware's build id. `arena_region` / `weights_region` move the arena /
    the weights to another bank (project/placement.py).
    """
    board = load_board(board) if isinstance(board, str) else board
    artifact_dir, out_dir = Path(artifact_dir), Path(out_dir)
    manifest = load_manifest(artifact_dir)
    if options.emulate and board.emulator is None and not board.is_host:
        raise BoardError(f"board {board.name} has no emulated twin", hint="drop --emulate and flash the board")
    where = placement(board, options.arena_region, options.weights_region, emulated=options.emulate,
                      arena_banks=model_banks(manifest))
    check_fits(manifest, board, where)
    if manifest.get("arena_banks") and options.trace:
        # trace.h reads every kernel's outputs at the primary arena's offset.
        raise UserError(f"model {manifest['model']!r} has its arena split over banks "
                        f"{', '.join([where.arena, *where.arena_banks])}: a trace build reads one arena only",
                        hint="compile with --arena-region BANK (one arena), or build the self-test or the agent")
    test_inputs = [] if options.agent else test_inputs
    if not options.agent and len(test_inputs) != len(manifest["inputs"]):
        raise UserError(f"model {manifest['model']!r} has {len(manifest['inputs'])} inputs, got {len(test_inputs)} test inputs")
    inputs = []
    for spec, array in zip(manifest["inputs"], test_inputs):
        data = _input_bytes(spec, array)
        inputs.append({"name": spec["name"], "dtype": generated(spec["dtype"]), "shape": generated(str(list(spec["shape"]))),
                       "bytes": len(data), "rows": _hex_rows(data)})
    for name in manifest["sources"] + manifest["headers"] + manifest.get("data", []):
        if not (artifact_dir / name).is_file():
            raise UserError(f"{artifact_dir / name} is listed in the manifest but missing")

    job = _Job(artifact_dir, manifest, board, inputs, options, where)
    previous = check_out_dir(out_dir)
    if not out_dir.exists():
        # A new project is written beside its place and renamed into it: complete or absent.
        with staged(out_dir) as stage:
            _write_all(stage, [], job)
    else:
        # Regenerating (possibly the user's current or mounted directory, which must not be
        # renamed) happens in place: the marker first says "incomplete", so an interrupted
        # run leaves a project that is still ours but that build and run refuse until rerun.
        _write_marker(out_dir, {"generator": "microcompile", "complete": False, "files": sorted(previous)})
        _write_all(out_dir, previous, job)
    return out_dir


def _write_all(out_dir: Path, previous: list[str], job: _Job) -> None:
    w = _Writer(out_dir)
    facts = _write_project(w, _env(), job)
    # Files a previous generate wrote that this one did not: ours, and stale. The names come
    # from the marker, which is in the directory: OutputTree.remove ignores any name that
    # would leave it.
    for rel in sorted(set(previous) - set(w.files) - {MARKER}):
        w.tree.remove(rel)
    _write_marker(out_dir, {"generator": "microcompile", "complete": True, "board": job.board.name,
                            "model": job.manifest["model"], "files": sorted(w.files), **facts})


def _write_marker(out_dir: Path, marker: dict) -> None:
    OutputTree(out_dir).write(MARKER, (json_text(marker, indent=2, sort_keys=True) + "\n").encode())


def _write_project(w: _Writer, env, job: _Job) -> dict:
    """Write every file of the project through `w`; returns the marker's facts about it
    (default PLATFORM, agent build and its id, placement)."""
    artifact_dir, manifest, board, inputs, where = job.artifact_dir, job.manifest, job.board, job.inputs, job.where
    emulated, trace, agent = job.options.emulate, job.options.trace, job.options.agent
    for name in manifest["sources"] + manifest["headers"] + manifest.get("data", []):
        w.copy(f"model/{name}", artifact_dir / name)
    w.copy(MANIFEST_NAME, artifact_dir / MANIFEST_NAME)
    runtime = resource_dir("runtime_c")
    for sub in ("include", "src"):
        for src in sorted((runtime / sub).glob("*")):
            if src.is_file() and src.suffix in (".c", ".h"):
                w.copy(f"runtime/{sub}/{src.name}", src)
    if agent:
        for src in sorted((runtime / "agent").glob("*")):
            if src.suffix in (".c", ".h"):
                w.copy(f"runtime/agent/{src.name}", src)
    # The kernel sources of the headers the model's C includes, for this core (the DSP and
    # Helium files only where the core has them: the code generator calls them only there).
    for sources in kernel_sources(board, kernel_headers(manifest.get("runtime_headers", []))).values():
        for path, rel in sources:
            w.copy(rel, path)

    emu = board.emulator
    twin_sources = (emu.sources, emu.include_dirs) if emu else (board.mcu.sources, board.mcu.include_dirs)
    for sources, include_dirs in ((board.mcu.sources, board.mcu.include_dirs), twin_sources):
        for rel, path in _board_files(sources, include_dirs).items():
            if f"board/{rel}" not in w.files:
                w.copy(f"board/{rel}", path)

    # Every value of the Makefile and the linker script (_linker_script) is microcompile's or the
    # board data's (files we name, flags, bank names): generated text; a name from the model
    # never goes there.
    def make(text: str):
        return generated(text, "make")

    model_srcs = make(" ".join(f"model/{s}" for s in manifest["sources"]))
    app_srcs = make("main.c" if agent else "main.c test_input.c")
    if board.is_host:
        srcs, incs = _board_sources(board.mcu.sources, board.mcu.include_dirs)
        w.text("Makefile", env.get_template("Makefile.host.j2").render(
            board_srcs=make(" ".join(srcs)), board_incs=make(" ".join(incs)), model_srcs=model_srcs,
            app_srcs=app_srcs))
        platform = "host"
    else:
        platform = "twin" if emulated else "board"
        srcs, incs = _board_sources(board.mcu.sources, board.mcu.include_dirs)
        tsrcs, tincs = _board_sources(*twin_sources)
        qemu = (f"qemu-system-arm -machine {emu.machine} -cpu {emu.cpu} {QEMU_FLAGS} -kernel firmware.elf"
                if emu else "")
        runner, flash_command = _flash_command(board)
        bin_sections = BIN_SECTIONS + ((".weights",) if where.weights == where.code else ())
        w.text("Makefile", env.get_template("Makefile.j2").render(
            board=make(board.name), mcu=make(board.mcu.name), platform=make(platform),
            machine=make(emu.machine if emu else ""), cpuflags=make(" ".join(board.target.cflags)),
            board_srcs=make(" ".join(srcs)), twin_srcs=make(" ".join(tsrcs)),
            board_incs=make(" ".join(incs)), twin_incs=make(" ".join(tincs)), model_srcs=model_srcs, app_srcs=app_srcs,
            board_defs=make(" ".join(board.c_defines())),
            twin_defs=make(" ".join(emu.c_defines() if emu else board.c_defines())),
            bin_sections=make(" ".join(f"-j {s}" for s in bin_sections)),
            flash_runner_name=make(runner), flash_command=make(flash_command), qemu_command=make(qemu)))
        for name, unbounded in (("linker.ld", False), ("linker.measure.ld", True)):
            w.text(name, _linker_script(board, where, unbounded))

    build = agent_build_id(artifact_dir, manifest, where.to_json() if not board.is_host else None)
    if agent:
        w.text("main.c", env.get_template("agent_main.c.j2").render(**agent_values(manifest, board.name, build)))
    else:
        w.text("main.c", env.get_template("main.c.j2").render(model=manifest["model"], board=generated(board.name)))
        w.text("test_input.h", env.get_template("test_input.h.j2").render(inputs=inputs))
        w.text("test_input.c", env.get_template("test_input.c.j2").render(inputs=inputs))
        w.text("trace.h", env.get_template("trace.h.j2").render(enabled=int(trace), tensors=trace_rows(manifest)))

    return {"platform": platform, "agent": bool(agent), "build_id": build,
            "placement": where.to_json() if not board.is_host else None}


def read_marker(project_dir: str | Path) -> dict:
    """The generation record of a complete project; UserError if it is not one of ours, or
    if its generation was interrupted."""
    path = Path(project_dir) / MARKER
    if not path.is_file():
        raise UserError(f"{project_dir} is not a microcompile project (no {MARKER})",
                        hint="generate it with `microcompile deploy`")
    try:
        marker = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        marker = {}
    if not marker.get("complete", "board" in marker):   # markers from before "complete" have a board
        raise UserError(f"the project in {project_dir} is incomplete: its generation was interrupted",
                        hint="rerun the `microcompile deploy` command that made it")
    return marker


def bsp_files(board: Board, emulated: bool = False,
              arena_banks=()) -> tuple[dict[str, bytes], list[str], list[str], list[str]]:
    """The board support of an exported library (`export --bsp`): startup, platform and console
    sources with their headers, and the linker script, as {relative path: bytes} under bsp/;
    then the sources, the include directories and the -D flags to compile them with. The
    QEMU twin's platform with `emulated`. The host board's is its one platform file.
    `arena_banks`: the banks of the models' multi-bank arenas, which the linker script maps."""
    emu = board.emulator
    if emulated and emu is not None:
        sources, include_dirs, defines = emu.sources, emu.include_dirs, emu.c_defines()
    else:
        sources, include_dirs, defines = board.mcu.sources, board.mcu.include_dirs, board.c_defines()
    files = {f"bsp/{rel}": path.read_bytes() for rel, path in _board_files(sources, include_dirs).items()}
    if not board.is_host:
        where = placement(board, emulated=emulated, arena_banks=arena_banks)
        files["bsp/linker.ld"] = _linker_script(board, where).encode()
    return (dict(sorted(files.items())), [f"bsp/{s}" for s in sources], [f"bsp/{d}" for d in include_dirs],
            list(defines))


def _board_files(sources, include_dirs) -> dict[str, Path]:
    """The board data's sources and every header of its include directories, by their path
    below boards/src."""
    board_src = resource_dir("boards") / "src"
    files = {rel: board_src / rel for rel in sources}
    for inc in include_dirs:
        for header in sorted((board_src / inc).glob("*.h")):
            files[f"{inc}/{header.name}"] = header
    return files


def _linker_script(board: Board, where: Placement, unbounded: bool = False) -> str:
    """linker.ld for `board` with `where`'s placement; `unbounded`: linker.measure.ld."""
    def ld(text: str):
        return generated(text, "ld")

    return _env().get_template("linker.ld.j2").render(
        mcu=ld(board.mcu.name), banks=_bank_rows(board, unbounded), code=ld(where.code), ram=ld(where.ram),
        weights=ld(where.weights), arena=ld(where.arena), stack_bytes=where.stack_bytes,
        heap_bytes=where.heap_bytes, measuring=unbounded, arena_banks=[ld(b) for b in where.arena_banks])

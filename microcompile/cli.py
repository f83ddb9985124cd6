"""Command line: parses arguments, calls the Python API (`microcompile.api`), prints results.

`main` is the one error boundary (README, "Errors"). Exit codes:
  0 ok; 1 the device's outputs differ from the reference; 2 a user error (UserError: the
  message and a hint, never a traceback); 3 an internal error (a bug: one line on stderr,
  the traceback in a crash log whose path is printed); 128 + N when signal N stopped it
  (130 SIGINT, 143 SIGTERM, 129 SIGHUP), after every child process was stopped; 141 when
  the reader of stdout went away (`| head`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import signal
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

from .errors import UserError, shown
from .escape import terminal
from .frontend import parse_input_shapes
from .progress import Progress
from .report.memory import parse_bytes

EXIT_MISMATCH = 1
EXIT_INTERNAL = 3
EXIT_BROKEN_PIPE = 128 + 13     # what a shell shows for a process killed by SIGPIPE
_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def _print(*parts, file=None, **kw) -> None:
    """print, with every control, bidi or invisible character escaped (escape.terminal): the
    text may quote names from a model, which must not move the cursor or recolour the terminal."""
    print(*(terminal(str(p), keep_newlines=True) for p in parts), file=file or sys.stdout, **kw)


# The CLI's progress: step lines on stdout, bars on stderr when it is a terminal.
_PROGRESS = Progress()


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived (`timeout`, a CI cancel, a closed terminal). Raised in the
    main thread like KeyboardInterrupt, so every `finally` on the way out runs: child
    process groups are stopped, temporary directories removed, half projects discarded."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _cmd_deploy(args) -> int:
    from . import api

    _check_quantize_args(args)
    _check_outputs(args)
    project_dir = api.check_project_dir(args.project_dir or Path("build") / Path(args.model).stem)
    inputs = api.read_inputs(args.input) if args.input else None
    dump = None
    if args.dump_ir:
        from .ir.printer import print_graph

        dump = lambda name, g: _print(f"--- after {name} ---\n{print_graph(g)}")  # noqa: E731
    link = api.Link(emulate=args.emulate, port=args.port, probe=args.probe, timeout=args.timeout)
    board = api.board(args.board)
    api.check_link(board, link, agent=args.agent or bool(args.port))
    build = api.BuildOptions(emulate=args.emulate, arena_region=args.arena_region, weights_region=args.weights_region)
    api.check_build_options(board, build)
    model, quantized = args.model, None
    shapes = parse_input_shapes(args.input_shape)
    if args.quantize:
        scheme = "16x8" if args.activations == "int16" else "int8"
        _PROGRESS(f"[quantize] {args.model} ({scheme})")
        quantized = api.quantize(args.model, args.calibration, activations=args.activations, input_shapes=shapes)
        model, shapes = quantized, None
    cm = api.compile(model, board, records=args.records, input_shapes=shapes, name=Path(args.model).stem,
                     progress=_PROGRESS, options=_compile_options(args, dump))
    result = cm.deploy(project_dir, inputs=inputs, agent=args.agent, link=link, progress=_PROGRESS,
                       options=build)
    if quantized is not None:   # keep the quantized model the firmware was built from, next to it
        _save_quantized(quantized, project_dir, f"{Path(args.model).stem}_{quantized.options.scheme}.tflite")
    r = result.report
    if args.output:
        api.save_outputs(result.outputs, args.output)
    if args.report:
        api.write_report(r, args.report)
    _print(_summary(r))
    if result.fit is not None:
        _print(result.fit.format())
    return 0 if r["verified"] else EXIT_MISMATCH


def _cmd_export(args) -> int:
    from . import api

    _check_quantize_args(args)
    if args.quantize and len(args.model) > 1:
        raise UserError("--quantize takes one model (its calibration samples fit one model's inputs)",
                        hint="quantize each model with `microcompile quantize` first, then export the .tflite files")
    if args.name and len(args.model) > 1:
        raise UserError("--name names one model; several are named by their file stems",
                        hint="rename the files, or drop --name")
    if args.emulate and not args.bsp:
        raise UserError("--emulate selects the QEMU twin's board support: it needs --bsp", hint="add --bsp")
    board = api.board(args.board)
    names = [args.name] if args.name else [api.model_name(Path(m).stem) for m in args.model]
    api.check_export(args.output_dir, names, given=bool(args.name))
    shapes = parse_input_shapes(args.input_shape)
    compiled = []
    for path in args.model:
        model, model_shapes = path, shapes
        if args.quantize:
            _PROGRESS(f"[quantize] {path} ({'16x8' if args.activations == 'int16' else 'int8'})")
            model = api.quantize(path, args.calibration, activations=args.activations, input_shapes=shapes)
            model_shapes = None
        compiled.append(api.compile(model, board, records=args.records, input_shapes=model_shapes,
                                    name=Path(path).stem, progress=_PROGRESS, options=_compile_options(args)))
    result = api.export(compiled, args.output_dir, format=args.format, bsp=args.bsp, emulate=args.emulate,
                        names=names, progress=_PROGRESS)
    d = result.description
    for m in d["models"]:
        code = f", code {m['code_bytes']:,} bytes" if m.get("code_bytes") is not None else ""
        _print(f"model        {m['name']}: {m['header']}, {m['symbol']}, arena {m['arena_bytes']:,} bytes "
               f"({m['arena_macro']}), weights {m['weights_bytes']:,} bytes{code}")
    if d.get("shared_code_bytes") is not None:
        _print(f"runtime      {d['shared_code_bytes']:,} bytes of code shared by the models (runtime and kernels, "
               f"before the link drops what nothing calls)")
    for key, label in (("library", "library"), ("pack", "pack")):
        if key in d:
            _print(f"{label:<12} {d[key]}")
    _print(f"export       {result.directory} ({args.format}, {len(result.files)} files; usage in README.md)")
    return 0


def _check_quantize_args(args) -> None:
    if args.calibration and not args.quantize:
        raise UserError("--calibration is only used with --quantize int8",
                        hint="add --quantize int8 to quantize the model first, or drop --calibration")
    if args.quantize and not args.calibration:
        raise UserError("--quantize int8 needs --calibration", hint="pass a .npz/.npy of input samples or a directory")


def _save_quantized(quantized, project_dir: Path, name: str) -> None:
    """Save the quantized model in the project; a note (not an error) when TFLite cannot express
    it: the firmware was built from the graph either way."""
    from . import api

    try:
        api.write_in_project(project_dir, name, quantized.tflite())
    except UserError as e:
        _PROGRESS(f"[quantize] not saved as .tflite ({e.message}); the firmware was compiled from the quantized graph")


def _check_outputs(args) -> None:
    """Output files named on the command line: writable, checked before any work is done."""
    from . import api

    for flag in ("report", "output", "json", "csv", "plot"):
        if getattr(args, flag, None):
            api.check_output(getattr(args, flag), f"--{flag} file")


def _summary(r: dict) -> str:
    from .report import memory as memory_report

    outs = ", ".join(f"{name}: {o['n_diff']} differ, max |diff| {o['max_abs_diff']:g}" for name, o in r["outputs"].items())
    sections = "  ".join(f"{k} {v:,}" for k, v in r["sections"].items())
    lines = [
        f"model        {r['model']} on {r['board']}" + (" (emulated)" if r["emulated"] else ""),
        f"outputs match reference: {'yes' if r['verified'] else 'NO'} ({outs})",
        *memory_report.summary_lines(r),
        *([f"state        {r['state_bytes']:>10,} bytes (recurrent and noise-estimate state, kept between inferences)"]
          if r.get("state_bytes") else []),
        f"sections     {sections}",
        f"instructions {r['instructions']:>10,} per inference ({r['macs']:,} MACs)" if r["instructions"] is not None
        else "instructions n/a on this board",
        *([f"estimate     {r['estimated_cycles']:>10,} cycles = {r['estimated_ms']:.3f} ms at "
           f"{r['clock_hz'] / 1e6:g} MHz (a model's estimate, not a measurement: docs/cycles.md)"]
          if r.get("estimated_cycles") else []),
        f"project      {r['project_dir']} (firmware.elf/.bin/.hex, firmware.map; rebuild with make)",
    ]
    return "\n".join(lines)


def _cmd_inspect(args) -> int:
    from . import api
    from .errors import UnsupportedOpError

    _check_outputs(args)
    shapes = parse_input_shapes(args.input_shape)
    try:
        inspection = api.inspect(args.model, input_shapes=shapes, input_layout=args.input_layout)
    except UnsupportedOpError as e:
        rows = api.list_ops(args.model)
        _print(f"{args.model}: {len(rows)} ops")
        for index, op, output, supported in rows:
            _print(f"  {index:>4}  {shown(op, 24):<24} {shown(output, 40):<40} {'' if supported else 'UNSUPPORTED'}")
        _print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    _print(inspection.text())
    if args.memory or args.plot:
        cm = api.compile(args.model, args.board, input_shapes=shapes, options=_compile_options(args))
        _print(f"\nmemory on {args.board}:\n" + cm.memory_report())
        if args.plot:
            cm.plot_memory(args.plot)
            _print(f"wrote {args.plot}")
    return 0


def _compiled(args):
    """The model of a device command (run, profile, verify), compiled for --board, after the
    link to the device is checked (a missing port is found before a minute of compiling)."""
    from . import api

    board = api.board(args.board)
    api.check_link(board, _link(args))
    _placement(args, board)
    return api.compile(args.model, board, records=getattr(args, "records", None), progress=_PROGRESS,
                       options=_compile_options(args))


def _compile_options(args, dump_ir=None):
    """--input-layout, --flash-budget, --dump-ir, --arena-region (a pin: one arena), --patch and --weights-in-ram,
    where the command has them."""
    from . import api
    budget = getattr(args, "flash_budget", None)
    return api.CompileOptions(input_layout=getattr(args, "input_layout", "nchw"),
                              flash_budget=parse_bytes(budget, "--flash-budget") if budget else None, dump_ir=dump_ir,
                              arena_region=getattr(args, "arena_region", None),
                              patch=api.parse_patch(getattr(args, "patch", "auto")),
                              weights_in_ram=api.parse_weights_in_ram(getattr(args, "weights_in_ram", "off")))


def _link(args):
    from . import api

    return api.Link(emulate=args.emulate, port=args.port, probe=getattr(args, "probe", None), timeout=args.timeout)


def _project_dir(args):
    """-o, checked before any work; None (the per-user cache) when absent."""
    from . import api

    return api.check_project_dir(args.project_dir) if args.project_dir else None


def _placement(args, board):
    """--arena-region / --weights-region of a device command (run, profile, verify) as
    BuildOptions, checked against the board before any work; None when neither is given."""
    from . import api

    if not (args.arena_region or args.weights_region):
        return None
    build = api.BuildOptions(emulate=bool(getattr(args, "emulate", False)), arena_region=args.arena_region,
                             weights_region=args.weights_region)
    api.check_build_options(board, build)
    return build


def _device(cm, args, project_dir):
    """The agent firmware on the host, the QEMU twin or the board, for run and profile."""
    link = _link(args)
    options = _placement(args, cm.board)
    if link.emulate or cm.board.is_host:
        return cm.emulate(project_dir, timeout=link.timeout, options=options, progress=_PROGRESS)
    return cm.connect(link.port, link.probe, directory=project_dir, timeout=link.timeout, options=options,
                      progress=_PROGRESS)


def _cmd_verify(args) -> int:
    from . import api

    _check_outputs(args)
    project_dir = _project_dir(args)
    inputs = api.read_inputs(args.input) if args.input else None
    cm = _compiled(args)
    result = cm.verify(project_dir, inputs=inputs, link=_link(args), options=_placement(args, cm.board),
                       progress=_PROGRESS)
    if args.report:
        api.write_report(result.report, args.report)
    _print(result.table)
    return 0 if result.report["verified"] else EXIT_MISMATCH


def _cmd_run(args) -> int:
    from . import api

    _check_outputs(args)
    if args.repeat and args.input is None:      # before a minute of building
        raise UserError("--repeat needs --input with a batch of samples", hint="np.save('x.npy', batch)")
    project_dir = _project_dir(args)
    inputs = api.read_inputs(args.input) if args.input else None
    labels = api.read_inputs(args.labels, "labels file").arrays if args.labels else None
    cm = _compiled(args)
    with _device(cm, args, project_dir) as dev:
        result = dev.check(inputs, labels, count=args.repeat)
    r = result.report
    if args.output:
        api.save_outputs(result.outputs, args.output)
    if args.report:
        api.write_report(r, args.report)
    lines = [f"model        {r['model']} on {r['board']}" + (" (emulated)" if r["emulated"] else "")
             + f", build {r['build_id']}"]
    if r["samples"] == 1:
        outs = ", ".join(f"{n}: {o['n_diff']} differ, max |diff| {o['max_abs_diff']:g}" for n, o in r["outputs"].items())
        lines.append(f"outputs match reference: {'yes' if r['verified'] else 'NO'} ({outs})")
    else:
        lines.append(f"samples      {r['samples']} over one session")
        lines.append(f"agreement    {100 * r['agreement']:.2f}% of the samples equal the reference interpreter "
                     f"(top-1 agrees on {100 * r['top1_agreement']:.2f}%)")
    if "top1_accuracy" in r:
        lines.append(f"accuracy     top-1 {100 * r['top1_accuracy']:.2f}% against the labels")
    lines.append(f"{r['unit']:<12} {r['count_per_inference']:,} per inference (median)")
    lines.append(f"project      {r['project_dir']}")
    _print("\n".join(lines))
    return 0 if r["verified"] else EXIT_MISMATCH


def _cmd_profile(args) -> int:
    from . import api
    from .report.profile import PLOT_FORMATS

    _check_outputs(args)
    fmt = (Path(args.plot).suffix[1:].lower() or "png") if args.plot else "png"
    if fmt not in PLOT_FORMATS:
        raise UserError(f"cannot write the plot {args.plot}: unknown format {fmt!r}",
                        hint=f"end the file name with one of {', '.join('.' + f for f in PLOT_FORMATS)}")
    project_dir = _project_dir(args)
    inputs = api.read_inputs(args.input) if args.input else None
    cm = _compiled(args)
    device = _device(cm, args, project_dir)
    with device as dev:
        prof = dev.profile(inputs)
    sizes = device.built.sizes
    footer = [f"arena {cm.memory.arena_bytes:,} bytes, flash {sizes.flash:,} bytes, "
              f"RAM {sizes.ram:,} bytes (static; agent frame buffers and stack included)",
              f"project {device.built.project_dir}"]
    _print(prof.table(footer))
    writers = {"json": lambda p: api.write_report(prof.report, p), "csv": prof.to_csv,
               "plot": lambda p: prof.plot(p, f"{Path(args.model).stem} on {args.board}: {prof.unit} per layer")}
    for flag, write in writers.items():
        if getattr(args, flag):
            write(getattr(args, flag))
            _print(f"wrote {getattr(args, flag)}")
    return 0


def _families(given) -> tuple[str, ...]:
    """--family NAME (repeatable, or comma-separated): knob family names (checked with the
    other options, autotune/run.check_request)."""
    return tuple(dict.fromkeys(n.strip() for g in (given or ()) for n in g.split(",") if n.strip()))


def _cmd_tune(args) -> int:
    from . import api
    from .autotune.run import format_result, parse_arena_budget, parse_budget

    budget = parse_budget(args.trials, args.budget)
    options = api.TuneOptions(budget, jobs=args.jobs, resume=args.resume, strategy=args.strategy, seed=args.seed,
                              batch=args.batch, cost_model=args.cost_model,
                              scratch_budget=parse_bytes(args.scratch_budget, "--scratch-budget"),
                              arena_budget=parse_arena_budget(args.arena_budget), executor=args.executor,
                              address=args.address, work_dir=args.project_dir, ports=tuple(args.port or ()),
                              probes=tuple(args.probe or ()), objective=args.objective,
                              families=_families(args.family))
    link = api.Link(emulate=args.emulate, timeout=args.timeout)
    board = api.board(args.board)
    api.check_tune(board, args.records, options, link)     # before any work
    cm = api.compile(args.model, board, progress=_PROGRESS, options=_compile_options(args))
    records = api.tune(cm, records=args.records, options=options, link=link, progress=_PROGRESS)
    _print(format_result(records.result, records.workloads))
    _print(f"records      {args.records} (deploy/run/profile --records {args.records})")
    return 130 if records.result.interrupted else 0


def _add_input_layout_arg(p) -> None:
    p.add_argument("--input-layout", choices=("nchw", "nhwc"), default="nchw",
                   help="an ONNX or PyTorch model's 4-D inputs and outputs: nchw (the framework's, default: "
                        "feed the device what you feed the framework) or nhwc (the kernels' layout, no "
                        "transpose at the edges)")


def _add_patch_arg(p) -> None:
    p.add_argument("--weights-in-ram", default="off", metavar="off|auto|BYTES",
                   help="copy the weights of the kernels that read them most from flash to RAM at mc_init: "
                        "off (default), auto (on a board whose flash has wait states, as much as the RAM "
                        "left takes; tightly coupled banks first) or at most BYTES (e.g. 16K)")
    p.add_argument("--patch", default="auto", metavar="auto|off|Bx1@[FIRST:]LAST",
                   help="run the first layers of a CNN band by band so that their large feature maps never "
                        "exist whole: auto (default: the stage with the smallest arena within 10%% more "
                        "instructions, or none), off, or Bx1@[FIRST:]LAST, the layers FIRST..LAST (FIRST: the "
                        "start of LAST's chain) in B bands of full rows (`inspect --memory` names the layers)")


def _add_records_arg(p) -> None:
    p.add_argument("--records", metavar="FILE.jsonl",
                   help="tuning records (microcompile tune): the fastest valid schedule per workload for this "
                        "core and toolchain replaces the default; others keep the default")


def _add_device_args(p, port_help: str,
                     project_help: str = "where the agent project goes (default: a per-user cache directory, "
                                         "printed in the output)",
                     several: bool = False) -> None:
    p.add_argument("--board", required=True, help="board name or alias (see `microcompile boards`)")
    p.add_argument("--emulate", action="store_true", help="run on the board's QEMU twin")
    p.add_argument("--port", help=port_help, action="append" if several else "store")
    p.add_argument("--timeout", type=float, default=10.0,
                   help="seconds to wait for the device's answer to each command (default 10)")
    p.add_argument("-o", "--project-dir", help=project_help)


def _cmd_quantize(args) -> int:
    from . import api

    api.check_output(args.output, "output model")
    if Path(args.output).suffix.lower() != ".tflite":
        raise UserError(f"cannot write {args.output}: quantized models are saved as .tflite",
                        hint="name the output model_int8.tflite (it reloads in microcompile and opens in Netron)")
    keep = tuple(k for k in args.keep_float.split(",") if k)
    keep_int8 = tuple(k for k in args.keep_int8.split(",") if k)
    q = api.quantize(args.model, args.calibration, activations=args.activations, method=args.method, io=args.io,
                     keep_float=keep, input_shapes=parse_input_shapes(args.input_shape), progress=True,
                     weights=args.weights, keep_int8=keep_int8)
    path = q.save(args.output)
    _print(q.table(args.sqnr_threshold))
    scheme = ("16x8: int16 activations, int8 weights" if args.activations == "int16" else
              "int8 activations, int4 weights" if args.weights == "int4" else "int8")
    _print(f"wrote {path} ({scheme}, {args.io} inputs/outputs, calibration method {args.method})")
    return 0


def _cmd_boards(args) -> int:
    from . import api

    rows = [api.board_info(b) for b in api.boards()]
    if args.json:
        _print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        if r["name"] == "host":
            _print(f"{'host':<17} the build machine (native gcc; tests)")
            continue
        banks = ", ".join(f"{m['name']} {_kib(m['size'])}" for m in r["memory"])
        if r["emulator_only"]:
            where = f"QEMU {r['qemu_machine']} only"
        elif r["emulated"]:
            where = f"twin QEMU {r['qemu_machine']}" + (f" ({r['twin']})" if r["twin"] != r["name"] else "")
        else:
            where = "no twin: compiled and linked only"
        alias = f" (alias {', '.join(r['aliases'])})" if r["aliases"] else ""
        runners = ", ".join(r["runners"]) or "-"
        _print(f"{r['name']:<17} {r['core']:<13} {r['kernels']:<4} {banks}")
        _print(f"{'':<17} {r['description']}{alias}; flash: {runners}; {where}")
    _print("\nkernels: c = portable C, dsp = Armv7E-M DSP (SMLAD), mve = Helium. No board has been run on "
           "silicon: the real boards are compiled, linked and fit-checked, and run only through their QEMU twin.")
    return 0


def _kib(n: int) -> str:
    return f"{n // 1024} KiB" if n < 1 << 20 or n % (1 << 20) else f"{n >> 20} MiB"


def _cmd_flash(args) -> int:
    from . import api

    result = api.flash(args.firmware, board=args.board, probe=args.probe)
    _print(f"flashed {result.board} with {result.runner}" + (f" (probe {result.probe})" if result.probe else ""))
    return 0


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = argparse.ArgumentParser(prog="microcompile",
                                description="Compile TFLite, ONNX and PyTorch (torch.export) models to C for microcontrollers.")
    p.add_argument("--version", action="version", version=f"microcompile {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("deploy", help="compile, build, run on a board (or its emulated twin) and verify")
    d.add_argument("model", help="a .tflite, .onnx or .pt2 (torch.export.save) file")
    d.add_argument("--board", required=True, help="board name or alias (see `microcompile boards`)")
    d.add_argument("--emulate", action="store_true", help="run on the board's QEMU twin instead of flashing")
    d.add_argument("--input", help=".npy (one input) or .npz (by input name); default: a deterministic pattern")
    d.add_argument("--output", help="write the device output here (.npy, or .npz for several outputs)")
    d.add_argument("--report", help="write a JSON report here")
    d.add_argument("-o", "--project-dir", help="where the standalone project goes (default build/<model>)")
    d.add_argument("--dump-ir", action="store_true", help="print the graph after every pass")
    d.add_argument("--input-shape", action="append", metavar="NAME:DIMS",
                   help="pin a dynamic ONNX input shape, e.g. input:1x3x32x32 (repeatable)")
    d.add_argument("--quantize", choices=["int8"], help="quantize a float32 model first (needs --calibration)")
    d.add_argument("--calibration", help="calibration samples for --quantize (.npz, .npy or a directory of .npy)")
    d.add_argument("--agent", action="store_true",
                   help="build the host agent firmware and run the input over the serial protocol")
    d.add_argument("--port", help="the board's serial port (implies --agent); default: found by its USB id")
    d.add_argument("--timeout", type=float, default=10.0, help="--agent: seconds per device command (default 10)")
    _add_placement_args(d)
    d.add_argument("--probe", help="on a real board: the debug probe to flash through (its id, as the errors list)")
    d.add_argument("--flash-budget", metavar="BYTES",
                   help="flash the firmware may use (e.g. 400000, 384K, 1M; default: the board's); kernels get "
                        "int16 weights, fastest first, only while the weights still fit")
    from .quantization import ACTIVATION_DTYPES, DEFAULT_METHOD, DEFAULT_THRESHOLD_DB, IO_MODES, METHODS, WEIGHT_DTYPES
    d.add_argument("--activations", choices=ACTIVATION_DTYPES, default="int8",
                   help="with --quantize: int16 quantizes 16x8 (int16 activations, int8 weights)")
    _add_records_arg(d)
    _add_input_layout_arg(d)
    _add_patch_arg(d)
    d.set_defaults(fn=_cmd_deploy)

    e = sub.add_parser("export", help="write the model(s) as a library for your own firmware: CMake, Make, a "
                                      "prebuilt .a, Arduino, Zephyr or CMSIS-Pack",
                       description="Compile each model (as deploy does) and write a library, not a firmware: "
                                   "model N gets include/N.h, N_model and N_ARENA_BYTES, every symbol prefixed "
                                   "N_, over one shared runtime; see README.md in the output directory.")
    e.add_argument("model", nargs="+", help=".tflite, .onnx or .pt2 files (several: one program runs them all)")
    e.add_argument("--board", required=True, help="board name or alias (see `microcompile boards`)")
    from .api.export import FORMATS
    e.add_argument("--format", choices=FORMATS, default="cmake", help="the library's build system (default cmake)")
    e.add_argument("-o", "--output-dir", required=True, help="where the library goes (new, empty, or an earlier "
                                                             "export of microcompile)")
    e.add_argument("--name", help="the model's C name (one model; default: the file stem made a C identifier)")
    e.add_argument("--bsp", action="store_true", help="add the board support (startup, linker script, console, "
                                                     "cycle counter) as its own target")
    e.add_argument("--emulate", action="store_true", help="with --bsp: the QEMU twin's board support")
    e.add_argument("--input-shape", action="append", metavar="NAME:DIMS",
                   help="pin a dynamic ONNX input shape, e.g. input:1x3x32x32 (repeatable)")
    e.add_argument("--quantize", choices=["int8"], help="quantize a float32 model first (needs --calibration)")
    e.add_argument("--calibration", help="calibration samples for --quantize (.npz, .npy or a directory of .npy)")
    e.add_argument("--activations", choices=ACTIVATION_DTYPES, default="int8",
                   help="with --quantize: int16 quantizes 16x8 (int16 activations, int8 weights)")
    e.add_argument("--flash-budget", metavar="BYTES",
                   help="flash the model may use (default: the board's); kernels get int16 weights only while "
                        "the weights still fit")
    _add_records_arg(e)
    _add_input_layout_arg(e)
    _add_patch_arg(e)
    e.set_defaults(fn=_cmd_export)

    port_help = "the board's serial port, e.g. /dev/ttyACM0 (default: found by the board's USB VID:PID)"
    r = sub.add_parser("run", help="run inputs on the board (or its twin) over the host agent and check them",
                       description="Build (or reuse) the agent firmware, start the QEMU twin or flash the board "
                                   "when it does not run this build, send the input(s), write the outputs and "
                                   "compare them with the reference interpreter. --repeat N runs the first N "
                                   "samples of a batch file over one session.")
    r.add_argument("model", help="a .tflite, .onnx or .pt2 file")
    _add_device_args(r, port_help)
    r.add_argument("--input", help=".npy / .npz input; with --repeat a batch [N, ...]; default: a deterministic "
                                   "pattern")
    r.add_argument("--output", help="write the device outputs here (.npy, or .npz for several outputs)")
    r.add_argument("--repeat", type=int, help="run the first N samples of the --input batch")
    r.add_argument("--labels", help="class labels of the batch (.npy, [N] or one-hot [N, C]): adds top-1 accuracy")
    r.add_argument("--report", help="write a JSON report here")
    _add_records_arg(r)
    _add_input_layout_arg(r)
    _add_patch_arg(r)
    _add_placement_args(r)
    r.set_defaults(fn=_cmd_run)

    pr = sub.add_parser("profile", help="per-kernel instructions (QEMU) or cycles (board) over the host agent",
                        description="Run the model once without and once with the per-kernel hooks and print "
                                    "one row per kernel: name, source layers, op, output shape, MACs, count, "
                                    "MACs per count and share of the total.")
    pr.add_argument("model", help="a .tflite, .onnx or .pt2 file")
    _add_device_args(pr, port_help)
    pr.add_argument("--input", help=".npy / .npz input; default: a deterministic pattern")
    pr.add_argument("--json", help='write {"unit", "total", "layers": [{"name", "op", "macs", "count"}]} here')
    pr.add_argument("--csv", help="write the rows as CSV here")
    pr.add_argument("--plot", help="write a bar chart of counts per layer here (.svg/.png; needs microcompile[plot])")
    _add_records_arg(pr)
    _add_input_layout_arg(pr)
    _add_patch_arg(pr)
    _add_placement_args(pr)
    pr.set_defaults(fn=_cmd_profile)

    from .autotune import COST_MODELS, STRATEGIES

    t = sub.add_parser("tune", help="tune the kernels' schedules on the device (or its twin); write records",
                       description="Extract the model's kernels as workloads (identical kernels tuned once), "
                                   "search each workload's knob space, build and measure every candidate on the "
                                   "device (its outputs and its kernels' tensors must equal the reference "
                                   "interpreter's, or it counts as failed), and append one JSON line per "
                                   "measurement to --records. deploy/run/profile --records use the best.")
    t.add_argument("model", help="a .tflite, .onnx or .pt2 file")
    _add_device_args(t, port_help + "; repeat it with --jobs N for N boards, one per job",
                     "where the candidates are built, one directory per job (default: a temporary "
                     "directory, removed at the end)", several=True)
    t.add_argument("--probe", action="append", metavar="ID",
                   help="a board's debug probe id (repeatable: paired in order with --port; default: the probe "
                        "with the port's USB serial number, or every attached board when neither is given)")
    t.add_argument("--records", required=True, metavar="FILE.jsonl", help="where the records go (appended)")
    t.add_argument("--trials", type=int, help="measured candidates in all (records resumed included)")
    t.add_argument("--budget", help="a trial count (200) or a wall time (30m, 2h) for this run")
    t.add_argument("--jobs", type=int, default=1,
                   help="candidates built and measured at once (N QEMU twins with --emulate, else N boards)")
    t.add_argument("--resume", action="store_true", help="continue an existing records file (its points are "
                                                          "not tried again; its trials count)")
    t.add_argument("--strategy", choices=STRATEGIES, default="model",
                   help="model: evolutionary search guided by a cost model (default); random")
    t.add_argument("--cost-model", choices=COST_MODELS, default="ridge",
                   help="the model strategy's cost model: ridge (numpy, default) or xgboost (gradient-boosted "
                        "trees as AutoTVM; needs microcompile[xgboost])")
    t.add_argument("--seed", type=int, default=0, help="seed of the search (default 0)")
    t.add_argument("--objective", choices=("instructions", "cycles"), default="instructions",
                   help="rank candidates by instructions (default) or, on QEMU, by the cycle model's estimated "
                        "cycles (docs/cycles.md); a real board always measures cycles")
    t.add_argument("--family", action="append", metavar="NAME",
                   help="tune only the workloads of this knob family (repeatable or comma-separated: conv2d, "
                        "f32_fpu, fully_connected, depthwise_conv2d, add, softmax, sketch); the others keep their "
                        "default schedules")
    t.add_argument("--scratch-budget", metavar="BYTES", help="reject schedules whose scratch exceeds this")
    t.add_argument("--arena-budget", metavar="BYTES|none",
                   help="reject candidates whose firmware plans a larger arena (default: the default schedules' "
                        "arena, so tuning costs no RAM; none: only the board's memory bounds it)")
    t.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local: --jobs threads with a QEMU each (default); ray: Ray tasks on a cluster "
                        "(needs microcompile[ray])")
    t.add_argument("--address", metavar="HOST:PORT", help="--executor ray: the Ray cluster to join")
    t.add_argument("--batch", action="store_true",
                   help="measure a candidate of every workload in one firmware (fewer builds; a failing "
                        "firmware's candidates are measured again one by one)")
    _add_input_layout_arg(t)
    _add_patch_arg(t)
    t.set_defaults(fn=_cmd_tune)

    q = sub.add_parser("quantize", help="post-training int8 quantization of a float32 .tflite/.onnx model",
                       description="Calibrate a float32 model on input samples, quantize it to TFLite's int8 "
                                   "scheme (per-channel weights, per-tensor activations) and save it as .tflite. "
                                   "Prints the SQNR of every layer's output, int8 against float32.")
    q.add_argument("model", help="a float32 .tflite, .onnx or .pt2 file")
    q.add_argument("--calibration", required=True, help=".npz / .npy of input samples, or a directory of .npy files")
    q.add_argument("-o", "--output", required=True, help="where to write the int8 model (.tflite)")
    q.add_argument("--method", choices=METHODS, default=DEFAULT_METHOD,
                   help=f"activation range selection (default {DEFAULT_METHOD})")
    q.add_argument("--io", choices=IO_MODES, default="float32",
                   help="float32 keeps float inputs/outputs (quantize/dequantize at the edges); int8 (int16 with "
                        "--activations int16) makes them integer")
    q.add_argument("--activations", choices=ACTIVATION_DTYPES, default="int8",
                   help="int16: TFLite's 16x8 scheme (int16 activations, int8 weights, int64 biases), for audio "
                        "models; only ops with 16x8 kernels are quantized (keep others with --keep-float)")
    q.add_argument("--keep-float", default="", help="comma-separated ops or layer names to leave in float32")
    q.add_argument("--weights", choices=WEIGHT_DTYPES, default="int8",
                   help="int4: per-channel int4 weights for conv, depthwise conv and fully connected layers "
                        "(TFLite's packed INT4, half the flash of int8; int8 activations)")
    q.add_argument("--keep-int8", default="",
                   help="with --weights int4: comma-separated layers or ops that keep int8 weights")
    q.add_argument("--sqnr-threshold", type=float, default=DEFAULT_THRESHOLD_DB,
                   help=f"flag layers whose SQNR is below this many dB (default {DEFAULT_THRESHOLD_DB:g})")
    q.add_argument("--input-shape", action="append", metavar="NAME:DIMS",
                   help="pin a dynamic ONNX input shape, e.g. input:1x3x32x32 (repeatable)")
    q.set_defaults(fn=_cmd_quantize)

    v = sub.add_parser(
        "verify", help="run on the (emulated) device and compare every layer with the references",
        description="Build a trace firmware that prints every kernel's outputs, run it once, and compare "
                    "each layer's device tensor with microcompile's reference interpreter and with TFLite's "
                    "reference kernels (LiteRT BUILTIN_REF, when ai_edge_litert is installed). Prints one "
                    "row per layer: name, op, shape, max abs diff, differing elements, first mismatch. "
                    "Exits 1 on any mismatch. On a board (--emulate, or --port / its USB id) the tensors "
                    "are read over the serial link of the host agent, each right after its kernel ran; "
                    "--board=host runs a trace build.")
    v.add_argument("model", help="a .tflite, .onnx or .pt2 file")
    v.add_argument("--board", required=True, help="board name or alias (see `microcompile boards`)")
    v.add_argument("--emulate", action="store_true", help="run on the board's QEMU twin")
    v.add_argument("--input", help=".npy (one input) or .npz (by input name); default: a deterministic pattern")
    v.add_argument("--port", help=port_help)
    v.add_argument("--timeout", type=float, default=10.0, help="seconds per device command (default 10)")
    v.add_argument("--report", help="write the per-layer comparison as JSON here")
    v.add_argument("-o", "--project-dir", help="where the trace project goes (default build/<model>-trace)")
    _add_input_layout_arg(v)
    _add_patch_arg(v)
    _add_placement_args(v)
    v.set_defaults(fn=_cmd_verify)

    i = sub.add_parser("inspect", help="ops, shapes, quantization, MACs, params and tensor bytes per layer; "
                                       "what the graph passes fused or folded")
    i.add_argument("model")
    i.add_argument("--input-shape", action="append", metavar="NAME:DIMS",
                   help="pin a dynamic ONNX input shape, e.g. input:1x3x32x32 (repeatable)")
    i.add_argument("--memory", action="store_true",
                   help="compile for --board and print the arena plan: lower bound, live bytes per step with "
                        "the largest buffers, in-place rules, int16-weight kernels")
    i.add_argument("--plot", metavar="OUT.svg", help="also draw the memory timeline (needs matplotlib)")
    i.add_argument("--board", default="mps2-an386", help="board to plan for with --memory (default mps2-an386)")
    i.add_argument("--flash-budget", metavar="BYTES", help="as for deploy")
    _add_input_layout_arg(i)
    _add_patch_arg(i)
    i.set_defaults(fn=_cmd_inspect)

    b = sub.add_parser("boards", help="list the boards microcompile knows: core, memory banks, kernel set, flash "
                                      "runners, emulated twin")
    b.add_argument("--json", action="store_true", help="print a JSON list of objects (keys in README.md)")
    b.set_defaults(fn=_cmd_boards)

    f = sub.add_parser("flash", help="check that a firmware fits its board and flash it with the board's probe",
                       description="Flash a project directory made by `deploy` (rebuilt for the real board when "
                                   "needed) or a firmware.elf. Prints the fit report first and stops when it does "
                                   "not fit. Picks the flash runner (pyocd, openocd, st-flash, STM32CubeProgrammer, "
                                   "nrfjprog, picotool, UF2 copy) and the probe that is attached.")
    f.add_argument("firmware", help="a project directory or a firmware.elf")
    f.add_argument("--board", help="board name or alias (required for a bare .elf; a project knows its board)")
    f.add_argument("--probe", help="the debug probe to use when several are attached (its id, as listed)")
    f.set_defaults(fn=_cmd_flash)
    return p


def _add_placement_args(parser) -> None:
    parser.add_argument("--arena-region", metavar="BANK",
                        help="put the activation arena in this RAM bank (e.g. DTCM; see `microcompile boards`)")
    parser.add_argument("--weights-region", metavar="BANK",
                        help="put the weights in this flash bank (e.g. QSPI on mps3-an547)")


def main(argv=None) -> int:
    """Run one command; returns the exit code (see the module docstring). Never raises,
    except SystemExit from argparse (usage errors: exit 2 with argparse's message)."""
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    from .project import children

    with _signals_raise():
        try:
            args = build_parser().parse_args(argv)
            return args.fn(args)
        except UserError as e:
            _print(f"error: {e.message}", file=sys.stderr)
            if e.hint:
                _print(f"hint: {e.hint}", file=sys.stderr)
            return e.exit_code
        except KeyboardInterrupt:
            _print("error: stopped by SIGINT (Ctrl-C)", file=sys.stderr)
            return 128 + signal.SIGINT
        except Terminated as t:
            _print(f"error: stopped by {signal.Signals(t.signum).name}", file=sys.stderr)
            return 128 + t.signum
        except BrokenPipeError:
            _stdout_gone()
            return EXIT_BROKEN_PIPE
        except Exception:
            return _internal_error(argv)
        finally:
            children.kill_all()   # normally none is left: each one's `with` block stopped it


@contextlib.contextmanager
def _signals_raise():
    """SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt / Terminated in the main thread;
    once one has arrived, the others are ignored, so that the cleanup it starts finishes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        for s in _STOP_SIGNALS:
            signal.signal(s, signal.SIG_IGN)
        raise KeyboardInterrupt if signum == signal.SIGINT else Terminated(signum)

    previous = {s: signal.signal(s, handler) for s in _STOP_SIGNALS}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _stdout_gone() -> None:
    """The reader of stdout left: point stdout at /dev/null, so that the interpreter's final
    flush does not print a second BrokenPipeError."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _internal_error(argv: list[str]) -> int:
    """A bug: one line on stderr, the full traceback in a crash log."""
    from . import __version__

    exc = sys.exc_info()[1]
    command = "microcompile " + shlex.join(argv)
    report = (f"microcompile {__version__}: internal error\ncommand: {command}\ncwd: {os.getcwd()}\n"
              f"python: {sys.version.split()[0]} on {platform.platform()}\ntime: {time.strftime('%Y-%m-%d %H:%M:%S')}"
              f"\n\n{traceback.format_exc()}")
    log = _write_crash_log(report)
    _print(f"internal error in microcompile {__version__}: {type(exc).__name__}: {shown(str(exc), 200)}",
          file=sys.stderr)
    _print(f"command: {shown(command, 300)}", file=sys.stderr)
    if log is not None:
        _print(f"crash log: {log}", file=sys.stderr)
    else:   # no writable temporary directory: the traceback itself is the last resort
        _print(report, file=sys.stderr)
    _print("hint: this is a bug in microcompile, not a mistake of yours; rerunning the same command reproduces "
          "it. Please report it with the crash log.", file=sys.stderr)
    return EXIT_INTERNAL


def _write_crash_log(text: str) -> str | None:
    """The crash log goes to the temporary directory ($TMPDIR, else /tmp):
    microcompile-crash-<date>-<time>-<random>.log."""
    try:
        fd, path = tempfile.mkstemp(prefix=f"microcompile-crash-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".log")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return path
    except OSError:
        return None


if __name__ == "__main__":
    sys.exit(main())

"""PyTorch programs -> Graph: `torch.export` programs, `.pt2` files and modules.

    load_exported_program(program, nhwc_io=False, name=None) -> Graph
    load_pt2(path_or_bytes, nhwc_io=False, name=None) -> Graph     # a torch.export.save file
    load_module(module, example_inputs, nhwc_io=False, name=None) -> Graph   # calls torch.export

A program is taken after `run_decompositions()` (core ATen). Each ATen op is written as the
ONNX node(s) with the same meaning (aten.py, a table keyed by the op's name, filled by the
`@aten` decorator), and the result is read by the ONNX reader: its converters, layout
handling (NCHW at the edges unless `nhwc_io`, NHWC inside, transposes cancelled) and QDQ
folding (PT2E's quantize/dequantize pairs) are the ones the ONNX frontend is tested with.
This is not torch.onnx: no exporter, no version-sensitive hop; the translation is ours and
covers exactly the ops in aten.py (docs/pytorch.md has the table).

A `.pt2` file is untrusted input (docs/security.md). torch.export.load unpickles parts of the
archive, falling back to full pickle (code execution) when the safe loader refuses: here every
torch.load it makes is forced to `weights_only` (TORCH_FORCE_WEIGHTS_ONLY_LOAD), and an
archive holding custom or opaque objects, which torch reads with plain pickle, is refused
before torch sees it.

torch is imported here only (the `torch` extra).
"""

from __future__ import annotations

import io
import os
import zipfile
from contextlib import contextmanager

from ...errors import ModelFormatError, UserError
from ...files import MODEL_BYTES_MAX, read_file
from ...ir import Graph, budget

PT2_MAGIC = b"PK\x03\x04"
# Entries of a .pt2 archive that torch.export.load reads with plain pickle (torchbind custom
# objects, opaque Python objects): never loaded.
_PICKLED_PREFIXES = ("custom_obj_", "opaque_obj_")


def _torch():
    try:
        import torch
    except ImportError:
        raise UserError("reading a PyTorch program needs torch, which is not installed",
                        hint="pip install 'microcompile[torch]'") from None
    return torch


def load_exported_program(program, nhwc_io: bool = False, name: str | None = None) -> Graph:
    """The Graph of a `torch.export.ExportedProgram` (float32 or PT2E-quantized)."""
    _torch()
    from ..onnx import load_onnx
    from .aten import decompositions, to_onnx

    try:
        with _quiet_torch():
            decomposed = program.run_decompositions(decompositions())
    except Exception as e:      # noqa: BLE001 - torch's own failure, named for the user
        raise ModelFormatError(f"torch could not decompose the program into core ATen ops: {e}",
                               hint="export the model with torch.export.export and a supported torch version") from None
    return load_onnx(to_onnx(decomposed, name or "torch_model"), nhwc_io=nhwc_io, name=name)


def load_module(module, example_inputs, nhwc_io: bool = False, name: str | None = None) -> Graph:
    """Export `module` with `torch.export.export(module.eval(), example_inputs)` and read it."""
    torch = _torch()
    if not isinstance(module, torch.nn.Module):
        raise UserError(f"cannot export a {type(module).__name__}", hint="pass a torch.nn.Module")
    if example_inputs is None:
        raise UserError("compiling a torch.nn.Module needs example inputs to export it with",
                        hint="mc.compile(module, board, example_inputs=(x,)); mc.quantize takes the first sample "
                             "of in-memory calibration arrays (not a path)")
    args = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    args = tuple(torch.as_tensor(a) for a in args)
    try:
        with torch.no_grad():
            program = torch.export.export(module.eval(), args)
    except Exception as e:      # noqa: BLE001
        raise UserError(f"torch.export could not export {type(module).__name__}: {e}",
                        hint="see https://pytorch.org/docs/stable/export.html for what torch.export accepts") from None
    return load_exported_program(program, nhwc_io=nhwc_io, name=name or type(module).__name__)


@contextmanager
def _weights_only():
    old = os.environ.get("TORCH_FORCE_WEIGHTS_ONLY_LOAD")
    os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TORCH_FORCE_WEIGHTS_ONLY_LOAD", None)
        else:
            os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = old


@contextmanager
def _quiet_torch():
    """torch.export.load logs a failed load's traceback as warnings (the error says it once),
    and torch's deprecation warnings about its own internals are no news to a user."""
    import logging
    import warnings
    logger = logging.getLogger("torch.export")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            yield
    finally:
        logger.setLevel(level)


def _register_quantized_ops() -> None:
    """PT2E programs call `quantized_decomposed` ops, which torch knows only once the module
    defining them is imported (torchao imports the same module of torch's)."""
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import torch.ao.quantization.fx._decomposed  # noqa: F401
    except ImportError:      # a torch without it: the load names the op it cannot resolve
        pass


def is_pt2(data: bytes) -> bool:
    """A zip archive written by torch.export.save (it holds a `.data/version` or
    `archive_format` entry)."""
    if not data.startswith(PT2_MAGIC):
        return False
    try:
        names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    except zipfile.BadZipFile:
        return False
    return any(n.endswith(("/archive_format", ".data/version", "serialized_exported_program.json")) for n in names)


def load_pt2(source, nhwc_io: bool = False, name: str | None = None, label: str = "the .pt2 file") -> Graph:
    """Read a file written by `torch.export.save` (a path or its bytes)."""
    return load_exported_program(read_pt2(source, label), nhwc_io=nhwc_io, name=name)


def list_pt2_ops(path) -> list[tuple[int, str, str, bool]]:
    """(index, ATen op, node name, supported) for every op of a .pt2 file's core-ATen program."""
    from .aten import ATEN, decompositions, op_key
    program = read_pt2(path, str(path))
    try:
        with _quiet_torch():
            program = program.run_decompositions(decompositions())
    except Exception as e:      # noqa: BLE001
        raise ModelFormatError(f"torch could not decompose the program into core ATen ops: {e}") from None
    nodes = [n for n in program.graph.nodes if n.op == "call_function"]
    return [(i, op_key(n), n.name, op_key(n) in ATEN) for i, n in enumerate(nodes)]


def read_pt2(source, label: str = "the .pt2 file"):
    """The ExportedProgram of a `torch.export.save` file (a path or its bytes), read without
    unpickling anything but tensors."""
    data = source if isinstance(source, (bytes, bytearray)) else read_file(source, "model file", MODEL_BYTES_MAX,
                                                                               ModelFormatError)
    torch = _torch()
    try:
        entries = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except zipfile.BadZipFile:
        raise ModelFormatError(f"{label} is not a zip archive, so not a torch.export.save file",
                               hint="write it with torch.export.save(torch.export.export(model, args), 'model.pt2')"
                               ) from None
    unpacked = sum(e.file_size for e in entries)
    if unpacked > budget.TOTAL_BYTES:     # zipfile reads no more than an entry's declared size
        raise ModelFormatError(f"{label} unpacks to {unpacked:,} bytes, over the {budget.TOTAL_BYTES:,} a model may "
                               f"take", hint=budget.HINT)
    pickled = sorted(e.filename for e in entries if os.path.basename(e.filename).startswith(_PICKLED_PREFIXES))
    if pickled:
        raise ModelFormatError(f"{label} holds {len(pickled)} pickled Python object(s) ({pickled[0]}); microcompile "
                               f"does not unpickle model files, since a pickle can run code",
                               hint="export a program whose constants are tensors only")
    _register_quantized_ops()
    with _weights_only(), _quiet_torch():
        try:
            program = torch.export.load(io.BytesIO(bytes(data)))
        except Exception as e:      # noqa: BLE001 - whatever torch refuses, named for the user
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ModelFormatError(f"torch could not read {label}: {first[:300]}",
                                   hint="write it with torch.export.save from a torch version near the one "
                                        f"installed ({torch.__version__})") from None
    return program

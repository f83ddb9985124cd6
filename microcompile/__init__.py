"""microcompile: compile TFLite, ONNX and PyTorch models to standalone, bit-exact C for microcontrollers.

    import microcompile as mc
    cm = mc.compile("model.tflite", board="stm32")      # a CompiledModel
    with cm.emulate() as dev:                           # the board's QEMU twin
        y = dev.run(x)

The public names are listed in `__all__`; they load on first use, so that
`from microcompile.device import Session` (the lab-PC side) imports neither numpy nor the
compiler.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# One BLAS thread, set before numpy is first imported: OpenBLAS shuts its thread pool down
# around every fork (pthread_atfork), and `tune --jobs N` forks make and QEMU from other threads
# while the main thread fits the search's cost model; a fork during that fit left the fit
# waiting for pool threads that were gone (seen: a tune run stuck in exec_blas_async_wait).
# Our matrices are small, so one thread costs nothing. A user's own setting is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# name -> the module that defines it
_API = {name: "microcompile.api" for name in (
    "compile", "inspect", "list_ops", "quantize", "tune", "export", "boards", "board", "Exported",
    "CompiledModel", "Inspection", "Firmware", "Device", "Profile", "Quantized", "Records", "TensorSpec",
    "CompileOptions", "BuildOptions", "Link", "TuneOptions", "DeployResult", "VerifyResult", "SamplesResult")}
_API.update({name: "microcompile.errors" for name in (
    "UserError", "ModelError", "ModelFormatError", "UnsupportedOpError", "BoardError", "DoesNotFit",
    "ArenaBudgetError", "DeviceError", "ToolchainError")})
_API["Board"] = "microcompile.target"

__all__ = ["__version__", *sorted(_API)]


def __getattr__(name: str):
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'microcompile' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))


if TYPE_CHECKING:   # for type checkers and IDEs: the names __getattr__ provides
    from .api import (BuildOptions, CompiledModel, CompileOptions, DeployResult, Device, Firmware,  # noqa: F401
                      Inspection, Link, Profile, Quantized, Records, SamplesResult, TensorSpec, TuneOptions,
                      VerifyResult, board, boards, compile, inspect, list_ops, quantize, tune)
    from .errors import (ArenaBudgetError, BoardError, DeviceError, DoesNotFit, ModelError,  # noqa: F401
                         ModelFormatError, ToolchainError, UnsupportedOpError, UserError)
    from .target import Board  # noqa: F401

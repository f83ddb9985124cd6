"""What changes the code the compiler writes for a model: one frozen record, built once at the
edge (the CLI, the Python API) and handed down unchanged."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


def _frozen(m: Mapping | None) -> Mapping:
    return MappingProxyType(dict(m or {}))


@dataclass(frozen=True)
class CompileOptions:
    """Options of `compile_model` / `compile_graph`.

    input_shapes: {input name: shape} pinning dynamic ONNX input dimensions (--input-shape).
    input_layout: "nchw" (the framework's layout at an ONNX or PyTorch model's 4-D inputs and
        outputs, the default) or "nhwc" (the kernels' layout: no transpose at the edges).
    flash_budget: bytes the firmware's flash may take when choosing which kernels get int16
        weights (default: the board's flash; schedule/widening.py).
    tuned: {workload key: schedule Trace} replayed on every kernel of that workload instead of
        its default schedule (tuning records, tune/).
    dump_ir: called with (pass name, Graph) after every graph pass (--dump-ir).
    fuse_rows: run each layer norm's and attention head's ops as one kernel, a row at a time
        (transform/fuse_rows.py); False keeps them apart, to compare.
    arena_region: the RAM bank the whole arena is pinned to (--arena-region): no multi-bank
        placement (compiler/compile.py place_banks).
    patch: "auto" (the patch stage with the smallest arena within the instruction budget, or
        none), "off", or a transform.patch_stage.StageSpec (--patch ROWS@FIRST[:LAST]);
        compiler/patches.py.
    weights_in_ram: "off" (default), "auto" (on a board whose flash has wait states, the
        hottest kernels' constants copied to RAM at mc_init as far as RAM is left) or bytes
        (at most that many, whatever the wait states); compiler/ram_weights.py.
    """

    input_shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    input_layout: str = "nchw"
    flash_budget: int | None = None
    tuned: Mapping[str, object] = field(default_factory=dict)
    dump_ir: Callable | None = None
    fuse_rows: bool = True
    arena_region: str | None = None
    patch: object = "auto"
    weights_in_ram: object = "off"

    def __post_init__(self):
        w = self.weights_in_ram
        if not (w in ("off", "auto") or (isinstance(w, int) and not isinstance(w, bool) and w > 0)):
            from ..errors import UserError
            raise UserError(f"weights_in_ram={w!r} is not \"off\", \"auto\" or a number of bytes",
                            hint="e.g. CompileOptions(weights_in_ram=16384); the CLI takes 16K")
        object.__setattr__(self, "input_shapes", _frozen(self.input_shapes))
        object.__setattr__(self, "tuned", _frozen(self.tuned))

"""What a post-training quantization is asked to do."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class QuantizeOptions:
    """Post-training quantization: `activations` int8 (TFLite's int8 scheme) or int16 (16x8);
    `method` the range selection (None: the default); `io` float32 keeps float inputs and
    outputs, int8/int16 makes them integer; `keep_float` names layers left in float; `weights`
    int4 gives conv, depthwise conv and fully connected layers packed int4 weights, except the
    layers or ops in `keep_int8`."""

    activations: str = "int8"
    method: str | None = None
    io: str = "float32"
    keep_float: tuple[str, ...] = ()
    weights: str = "int8"
    keep_int8: tuple[str, ...] = ()

    @property
    def scheme(self) -> str:
        if self.activations == "int16":
            return "16x8"
        return "int8_w4" if self.weights == "int4" else "int8"

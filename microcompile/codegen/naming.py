"""What a model's C files and symbols are called.

The standalone project's model is `model.c`, `mc_model`, `MC_MODEL_ARENA_BYTES`, kernels
`mc_k0_conv2d` and weights `mc_k0_conv2d_weights`. An exported model N (export/) is `N.c`,
`N_model`, `N_ARENA_BYTES`, `N_k0_conv2d`, `N_k0_conv2d_weights`: every symbol it defines,
static ones included, carries its prefix, so several models link into one program and `nm`
says which model owns which bytes. The runtime's own symbols (`mc_init`, `mc_gemm_*`) are
shared and keep `mc_`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UserError
from ..escape import c_identifier

NAME_MAX = 40      # N_k12_depthwise_conv2d_requant_shift stays a readable symbol


@dataclass(frozen=True)
class Naming:
    stem: str = "model"        # file names: <stem>.c/.h, <stem>_weights.c/.h/.bin
    prefix: str = "mc"         # symbols: <prefix>_model, <prefix>_k0_conv2d, ...
    macro: str = "MC_MODEL"    # macros and include guards: <macro>_ARENA_BYTES, <macro>_H

    @classmethod
    def exported(cls, name: str) -> Naming:
        """The naming of model `name` in an export (check_model_name first)."""
        return cls(name, name, name.upper())

    def symbol(self, name: str) -> str:
        return f"{self.prefix}_{name}"

    @property
    def model_symbol(self) -> str:
        return self.symbol("model")

    @property
    def sources(self) -> tuple[str, ...]:
        return (f"{self.stem}.c", f"{self.stem}_weights.c")

    @property
    def headers(self) -> tuple[str, ...]:
        return (f"{self.stem}.h", f"{self.stem}_weights.h")

    @property
    def bin_name(self) -> str:
        return f"{self.stem}_weights.bin"


def model_name(stem: str) -> str:
    """A model's export name from a file stem: a lower-case C identifier."""
    return c_identifier(stem.lower())[:NAME_MAX].rstrip("_") or "model"


def check_model_name(name: str, given: bool = False) -> str:
    """`name` if it can name an exported model, else UserError saying why and what to do.
    `given`: the user typed it (--name), so the hint says to choose another."""
    hint = "choose another with --name NAME" if given else "give it a name with --name NAME"
    if not name or not (name[0].isalpha() and name.isascii() and name.replace("_", "a").isalnum()):
        raise UserError(f"model name {name!r} is not a C identifier (letters, digits and _, a letter first)",
                        hint=hint)
    if len(name) > NAME_MAX:
        raise UserError(f"model name {name!r} is longer than {NAME_MAX} characters", hint=hint)
    if name.lower() == "mc" or name.lower().startswith("mc_") or name.lower() == "microcompile":
        raise UserError(f"model name {name!r} is reserved: the runtime's files and symbols start with mc_",
                        hint=hint)
    return name

"""User-facing errors.

Every mistake a user can make (bad file, unknown board, missing toolchain, model too
big) raises a `UserError`. The CLI prints its message and hint and exits with code 2;
it never shows a traceback for these. Anything else is a bug in microcompile.
"""

from .escape import terminal


class UserError(Exception):
    """A problem the user can fix. `hint` says how."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class ModelError(UserError):
    """Something is wrong with the model: malformed, unsupported, or not a model at all."""


class UnsupportedOpError(ModelError):
    """The model uses ops microcompile cannot compile. Lists all of them at once."""


class ModelFormatError(ModelError):
    """The model file is truncated, malformed or not the claimed format."""


class ToolchainError(UserError):
    """A required external tool (arm-none-eabi-gcc, qemu-system-arm, make) is missing or failed."""


class BoardError(UserError):
    """Unknown board, or the model does not fit the board's memory."""


class DoesNotFit(BoardError):
    """The firmware does not fit the board's memory; the message says where, by how much, and
    the hint what would help (project.FitError carries the whole fit report)."""


class ArenaBudgetError(BoardError):
    """The planned arena is over the budget the caller set (`tune --arena-budget`)."""


class DeviceError(UserError):
    """No probe attached, or the device/emulator did not answer as expected."""


def shown(text: str, limit: int = 60) -> str:
    """`text` (a name from a model, a path, a user's typo) as it may appear in a message: cut
    when long (a 5,000-character typo is not echoed) and with control, bidi and invisible
    characters escaped (escape.terminal), so that a name cannot forge a line or move the cursor."""
    text = str(text)
    cut = text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"
    return terminal(cut)

"""The public Python API (re-exported by `microcompile`): compile, inspect, quantize, tune,
boards, and the objects they return."""

from ..compiler import CompileOptions  # noqa: F401
from ..compiler.patches import parse_patch  # noqa: F401
from .common import parse_weights_in_ram  # noqa: F401
from ..deploy import BuildOptions, DeployResult, Link, SamplesResult, VerifyResult  # noqa: F401
from ..autotune.run import TuneOptions  # noqa: F401
from .boards import board, board_info, boards, check_build_options, check_link, flash  # noqa: F401
from .files import check_output, check_project_dir, read_inputs, save_outputs, write_in_project, write_report  # noqa: F401
from .device import Device, Profile  # noqa: F401
from .export import Exported, check_export, export, model_name  # noqa: F401
from .firmware import Firmware  # noqa: F401
from .model import CompiledModel, Inspection, compile, inspect, list_ops  # noqa: F401
from .quantize import Quantized, quantize  # noqa: F401
from .tensors import TensorSpec  # noqa: F401
from .tune import Records, check_tune, tune  # noqa: F401

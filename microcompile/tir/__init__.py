"""The loop IR: nodes (nodes.py), verifier, printer, interpreter, and the declarations of
every intrinsic it may call (the scalar helpers and the runtime_c micro-kernels, each with
its Python semantics), so that codegen and the verifier need nothing from schedule/."""

from . import intrinsics  # noqa: F401

# The micro-kernel families, each declaring its intrinsics with @intrinsic.
from . import intrinsics_copy, intrinsics_depthwise, intrinsics_elementwise, intrinsics_gemm  # noqa: F401,E402
from . import intrinsics_gemm_mixed  # noqa: F401,E402
from . import intrinsics_recurrent, intrinsics_s16  # noqa: F401,E402
from . import intrinsics_signal_fft  # noqa: F401,E402
from . import intrinsics_signal  # noqa: F401,E402
from . import intrinsics_matmul  # noqa: F401,E402
from . import intrinsics_gemm_f32  # noqa: F401,E402
from . import intrinsics_depthwise_f32  # noqa: F401,E402

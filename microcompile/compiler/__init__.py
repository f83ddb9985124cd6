"""The compiler proper: model -> optimized graph -> scheduled kernels -> arena plan -> C artifact.

    compile_model(model, board, artifact_dir, CompileOptions(...)) -> Compiled
"""

from .compile import Compiled, check_arena, compile_graph, compile_model, plan_model  # noqa: F401
from .options import CompileOptions  # noqa: F401
from .plan import schedule_and_plan  # noqa: F401

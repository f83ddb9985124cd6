"""From a compiled model to a checked answer from the device: the project and its build
(`build.py`), the inputs (`inputs.py`), the device link and agent session (`session.py`), the
self-test, agent runs, profiles and layer-by-layer verification (`run.py`), and PTQ as the
commands run it (`quantize.py`). Options are frozen records (`options.py`)."""

from .build import Artifact, Built, build, build_with_bar  # noqa: F401
from .inputs import check_finite_inputs, deterministic_input, model_batch, model_inputs  # noqa: F401
from .options import BuildOptions, Link, QuantizeOptions  # noqa: F401
from .run import (AgentRun, DeployResult, SamplesResult, VerifyResult, agent_once, agent_run,  # noqa: F401
                  deploy_result, run_samples_on, selftest, verify_over_agent, verify_traced)
from .session import check_target, open_session, serial_port  # noqa: F401

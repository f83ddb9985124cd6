"""microcompile: compile TFLite/ONNX models to standalone C for microcontrollers."""

import os

__version__ = "0.1.0"

# One BLAS thread, set before numpy is first imported: OpenBLAS shuts its thread pool down
# around every fork (pthread_atfork), and `tune --jobs N` forks make and QEMU from other threads
# while the main thread fits the search's cost model; a fork during that fit left the fit
# waiting for pool threads that were gone (seen: a tune run stuck in exec_blas_async_wait).
# Our matrices are small, so one thread costs nothing. A user's own setting is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

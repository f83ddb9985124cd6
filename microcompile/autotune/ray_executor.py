"""Measurements as Ray tasks on an existing Ray cluster (the optional extra microcompile[ray]).

    tune ... --executor ray --address HOST:PORT

Each trial is one task running the same measure function the local threads run (build, then
the QEMU twin or the board, then the bit-exact check and the profile) on whichever node has
the resources it asks for: one CPU for a QEMU twin, or the custom resource `board:<name>`
for a real board, which a lab PC with that board attached declares when it joins the cluster
(`ray start --address HOST:PORT --resources '{"board:nucleo-f446re": 1}'`). The cluster, not
microcompile, schedules and retries; there is no RPC tracker of our own. The nodes need
microcompile installed and the model file at the same path.
"""

from __future__ import annotations

from ..errors import UserError

RAY_HINT = "pip install 'microcompile[ray]' (Ray is an optional extra)"


def board_resource(board: str) -> str:
    return f"board:{board}"


def _call(fn, *args):
    return fn(*args)


class RayExecutor:
    """submit(fn, *args) -> concurrent.futures.Future, on Ray. `address`: an existing cluster
    (HOST:PORT); None uses the Ray instance this process already started (tests), else a
    local one. `board`: a real board's name (its tasks need the custom resource), or None for
    QEMU twins."""

    def __init__(self, address: str | None = None, board: str | None = None):
        try:
            import ray
        except ImportError:
            raise UserError("--executor ray needs Ray, which is not installed", hint=RAY_HINT) from None
        self._ray = ray
        self._owns = False
        if not ray.is_initialized():
            try:
                ray.init(address=address, log_to_driver=False, include_dashboard=False)
            except (ConnectionError, ValueError, RuntimeError) as e:
                raise UserError(f"cannot reach the Ray cluster at {address}: {e}",
                                hint="start it with `ray start --head` and pass its address (HOST:PORT)") from None
            self._owns = True
        resources = {board_resource(board): 1} if board else {}
        if board and ray.cluster_resources().get(board_resource(board), 0) < 1:
            raise UserError(f"no node of the Ray cluster has the resource {board_resource(board)!r}",
                            hint=f"on the PC with the board: ray start --address HOST:PORT "
                                 f"--resources '{{\"{board_resource(board)}\": 1}}'")
        self._remote = ray.remote(num_cpus=1, resources=resources, max_retries=0)(_call)

    def submit(self, fn, *args):
        return self._remote.remote(fn, *args).future()

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        if self._owns:
            self._ray.shutdown()

"""Child processes that die with microcompile.

Every program microcompile starts (make and the compilers make starts, QEMU, the native
firmware, `size`, flash tools; the serial agent's QEMU too) goes through this module, so
that none outlives it, however microcompile ends:

- **Own process group.** Each child leads a new session and process group, so one
  `killpg` reaches everything it starts in turn (make -> gcc -> cc1 -> as), and a Ctrl-C
  in the terminal reaches microcompile alone, which then stops its children in order.
- **A child lives as long as its block.** Leaving a `spawn` block (or `run`) while the child
  still runs, by an exception (KeyboardInterrupt, the CLI's exception for SIGTERM/SIGHUP,
  a timeout, a bug) or on purpose, stops its whole group: SIGTERM first (make then deletes
  its half-written targets and passes the signal to its compilers; QEMU exits), SIGKILL
  after `GRACE_S`.
- **Parent-death signal (Linux).** When microcompile itself is killed with SIGKILL, no code
  of ours runs; the kernel sends each child `death_signal` instead (prctl PR_SET_PDEATHSIG,
  set between fork and exec). The default SIGKILL suits QEMU; make gets SIGTERM so that it
  stops its compilers (a compiler already running finishes its file, a second at most).
  The signal follows the *thread* that forked the child, so a child asked for on another
  thread (tune --jobs N starts its QEMUs from worker threads, which end before the process)
  is forked by one spawner thread that lives as long as the process.
- `kill_all()` kills every child still running (the CLI calls it on its way out).

macOS has no parent-death signal: there the process groups and the cleanup on every exit
path apply, but a SIGKILLed microcompile leaves its running children to finish on their
own (a self-test QEMU stops when its firmware ends; a long-lived one, as an agent's, keeps
running: a documented limit). Tested on Linux only. Windows has no POSIX process groups
or signals: children are started normally and killed on every exit path except a hard kill
(a Job object with KILL_ON_JOB_CLOSE would be the equivalent; not implemented, Windows is
not a supported host).

    spawn(cmd, *, death_signal=SIGKILL, **popen_kwargs) -> context manager yielding a Popen
    run(cmd, *, timeout=None, input=None, death_signal=SIGKILL, **popen_kwargs) -> CompletedProcess
    stop(proc)          stop one child's group now
    kill_all()          stop every child still running
    live() -> the running children
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from queue import SimpleQueue

GRACE_S = 3.0              # between SIGTERM and SIGKILL when a group is stopped
_PR_SET_PDEATHSIG = 1
_LIVE: set[subprocess.Popen] = set()
_POSIX = os.name == "posix"
_LINUX = sys.platform.startswith("linux")
_SPAWNER: threading.Thread | None = None     # forks the children asked for on other threads
_SPAWN_REQUESTS: SimpleQueue = SimpleQueue()
_SPAWNER_LOCK = threading.Lock()


@contextlib.contextmanager
def spawn(cmd, *, death_signal: int = signal.SIGKILL, **popen_kwargs) -> Iterator[subprocess.Popen]:
    """Start `cmd` as a child that dies with microcompile (see the module docstring).

    The child lives as long as the block: leaving it, normally or by an exception, stops
    the child's whole process group if the child still runs, reaps it and closes its pipes."""
    if _POSIX:
        popen_kwargs.update(start_new_session=True)
    proc = _start(cmd, death_signal, popen_kwargs)
    _LIVE.add(proc)
    try:
        yield proc
    finally:
        try:
            stop(proc)
        finally:
            _LIVE.discard(proc)
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                with contextlib.suppress(OSError):
                    if pipe:
                        pipe.close()


def run(cmd, *, timeout: float | None = None, input: bytes | None = None, death_signal: int = signal.SIGKILL,
        **popen_kwargs) -> subprocess.CompletedProcess:
    """`subprocess.run(cmd, capture_output=True)` through `spawn`: on a timeout the whole
    group is stopped and TimeoutExpired carries the output so far."""
    popen_kwargs.setdefault("stdin", subprocess.DEVNULL if input is None else subprocess.PIPE)
    popen_kwargs.setdefault("stdout", subprocess.PIPE)
    popen_kwargs.setdefault("stderr", subprocess.PIPE)
    with spawn(cmd, death_signal=death_signal, **popen_kwargs) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(proc)
            out, err = proc.communicate()
            raise subprocess.TimeoutExpired(cmd, timeout, out, err) from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def stop(proc: subprocess.Popen) -> None:
    """Stop `proc` and its process group, SIGTERM first and SIGKILL after GRACE_S; reap it.
    Nothing happens to a child that was already reaped (the caller waited for it)."""
    if proc.returncode is not None:
        return
    if not _POSIX:
        proc.kill()
        proc.wait()
        return
    # The group id is the leader's pid, which cannot be reused until the leader is reaped:
    # wait for its exit without reaping it (WNOWAIT), so both signals reach our group only.
    _killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline and not _exited(proc.pid):
        time.sleep(0.02)
    _killpg(proc.pid, signal.SIGKILL)   # what is left: a hung leader, or the children of a dead one
    proc.wait()


def _exited(pid: int) -> bool:
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def kill_all() -> None:
    """Stop every child still running (the CLI's last word on any exit)."""
    for proc in list(_LIVE):
        stop(proc)


def live() -> set[subprocess.Popen]:
    """The running children of the `spawn` blocks not left yet."""
    return {p for p in _LIVE if p.poll() is None}


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass   # the group is gone already


def _start(cmd, death_signal: int, popen_kwargs: dict) -> subprocess.Popen:
    """Popen on a thread that lives as long as the process (Linux: the parent-death signal
    follows the forking thread): the main thread, or else the spawner thread."""
    if not _LINUX:
        return subprocess.Popen(cmd, **popen_kwargs)
    def popen():
        return subprocess.Popen(cmd, preexec_fn=_parent_death(death_signal), **popen_kwargs)
    return popen() if threading.current_thread() in (threading.main_thread(), _SPAWNER) else _on_spawner(popen)


def _on_spawner(fn):
    """Run `fn` on the spawner thread (started once, a daemon: it ends with the process) and
    return its result or raise its exception."""
    global _SPAWNER
    with _SPAWNER_LOCK:
        if _SPAWNER is None:
            _SPAWNER = threading.Thread(target=_spawner_loop, name="microcompile-spawner", daemon=True)
            _SPAWNER.start()
    done: Future = Future()
    _SPAWN_REQUESTS.put((fn, done))
    return done.result()


def _spawner_loop() -> None:
    while True:
        fn, done = _SPAWN_REQUESTS.get()
        try:
            done.set_result(fn())
        except BaseException as e:  # noqa: BLE001 - handed to the thread that asked
            done.set_exception(e)


def _parent_death(sig: int):
    """preexec_fn for Popen: ask the kernel to send `sig` to the child when we die (Linux; for
    Popen on a thread that lives as long as the process, which _start sees to)."""
    prctl = _libc().prctl    # looked up before the fork: the child only calls it
    parent = os.getpid()

    def preexec():
        prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:   # we died between fork and prctl: nobody will send it
            os.kill(os.getpid(), int(sig))
    return preexec


_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC

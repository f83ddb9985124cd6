"""project.children: every child process dies with microcompile, and so do the ones it starts.

The children here are shells that start a grandchild (`sleep`), as make starts gcc. A
process counts as gone when /proc has no entry for it or it is a zombie (dead, not reaped
by its new parent yet).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from microcompile.project import children

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# A shell that starts a long sleep in the background, prints both pids and waits.
PARENT_AND_GRANDCHILD = ["sh", "-c", "sleep 300 & echo $$ $!; wait"]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids, seconds: float = 10.0) -> list[int]:
    """The pids still alive after `seconds` (polling; the deadline only bounds a failure)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def test_run_returns_output_and_status():
    p = children.run(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=30)
    assert (p.returncode, p.stdout, p.stderr) == (3, b"out\n", b"err\n")


def test_run_timeout_kills_the_whole_group():
    with pytest.raises(subprocess.TimeoutExpired) as e:
        children.run(PARENT_AND_GRANDCHILD, timeout=1.0)
    pids = [int(x) for x in e.value.stdout.split()]
    assert len(pids) == 2 and wait_gone(pids) == []


def test_leaving_spawn_by_an_exception_kills_the_whole_group():
    with pytest.raises(KeyboardInterrupt):
        with children.spawn(PARENT_AND_GRANDCHILD, stdout=subprocess.PIPE) as proc:
            pids = [int(x) for x in proc.stdout.readline().split()]
            raise KeyboardInterrupt
    assert wait_gone(pids) == []
    assert proc.returncode is not None, "the child is reaped"


def test_child_leads_its_own_process_group():
    with children.spawn(["sleep", "30"]) as proc:
        assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)
        proc.kill()


def test_kill_all_stops_every_live_child():
    with children.spawn(["sleep", "300"]) as a, children.spawn(["sleep", "300"]) as b:
        assert children.live() == {a, b} or children.live() >= {a, b}
        children.kill_all()
        assert wait_gone([a.pid, b.pid]) == []
    assert not children.live() & {a, b}


def descendants(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return []
    return kids + [d for k in kids for d in descendants(k)]


def test_children_die_when_microcompile_is_killed_with_sigkill(tmp_path):
    """No cleanup code runs on SIGKILL: the kernel's parent-death signal does it (Linux).
    QEMU gets SIGKILL; make gets SIGTERM, on which it stops the compilers it started."""
    (tmp_path / "Makefile").write_text("all:\n\tsleep 300\n")
    code = textwrap.dedent(f"""
        import signal, subprocess, sys, time
        sys.path.insert(0, {str(children.__file__.rsplit('/microcompile/', 1)[0])!r})
        from microcompile.project import children
        with children.spawn(["sleep", "300"]) as qemu_like, \\
                children.spawn(["make", "-C", {str(tmp_path)!r}], death_signal=signal.SIGTERM,
                                stdout=subprocess.DEVNULL) as make:
            print(qemu_like.pid, make.pid, flush=True)
            time.sleep(300)
    """)
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(x) for x in parent.stdout.readline().split()]
        deadline = time.monotonic() + 30
        while not descendants(pids[1]) and time.monotonic() < deadline:
            time.sleep(0.05)
        pids += descendants(pids[1])    # make's recipe: sh and/or sleep
        assert len(pids) >= 3 and all(alive(p) for p in pids)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        assert wait_gone(pids) == [], "a child outlived a SIGKILLed microcompile"
    finally:
        parent.kill()


def test_children_started_from_worker_threads_die_with_a_sigkilled_microcompile():
    """tune --jobs N starts its QEMUs from worker threads, which end before the process does (a
    parent-death signal follows the thread that forked): they are forked by one spawner thread
    that lives as long as the process, so a SIGKILL still takes them down; and a child started
    from a worker thread outlives that thread while its block lasts."""
    code = textwrap.dedent(f"""
        import sys, threading, time
        sys.path.insert(0, {str(children.__file__.rsplit('/microcompile/', 1)[0])!r})
        from microcompile.project import children
        started = []
        def worker():
            cm = children.spawn(["sleep", "300"])
            started.append((cm, cm.__enter__()))
        t = threading.Thread(target=worker)
        t.start(); t.join()                      # the worker thread has ended
        time.sleep(0.5)
        print(started[0][1].pid, flush=True)
        time.sleep(300)
    """)
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(parent.stdout.readline())
        assert alive(pid), "the child died with the worker thread that started it"
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        assert wait_gone([pid]) == [], "a child started from a worker thread outlived a SIGKILLed microcompile"
    finally:
        parent.kill()

"""The stack a firmware needs, from the compiler's own figures: every object's frame sizes and
call graph (`-fstack-usage`, `-fcallgraph-info=su`: one .ci file per object, VCG text).

The need is the deepest path from the reset handler, plus, when the platform enables an
interrupt (SysTick), the deepest interrupt handler on top with its exception frame. Calls
through a pointer (mc_run's kernel table, the profile hook) may reach any function that nobody
calls by name; a function the compiler did not see (newlib, libgcc: memcpy, __aeabi_*) is
assumed to need EXTERNAL_BYTES, and is listed. Recursion makes the need unbounded (None).
The self-test firmware measures the real figure by painting the stack (MC-STACK), and the
tests check that this bound is never below it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

EXTERNAL_BYTES = 64         # the assumed frame of a library function (newlib-nano and libgcc leaves)
EXCEPTION_FRAME = 32        # r0-r3, r12, lr, pc, xPSR stacked on exception entry
EXCEPTION_FRAME_FP = 104    # ... plus s0-s15 and FPSCR (and padding) with an active FP context
ROOT = "Reset_Handler"
INTERRUPTS = ("SysTick_Handler",)    # the only interrupt a platform enables
INDIRECT = "__indirect_call"

_NODE = re.compile(r'node:\s*\{\s*title:\s*"([^"]+)"\s*label:\s*"([^"]*)"')
_EDGE = re.compile(r'edge:\s*\{\s*sourcename:\s*"([^"]+)"\s*targetname:\s*"([^"]+)"')
_BYTES = re.compile(r"\\n(\d+) bytes \((static|dynamic|dynamic,bounded)\)")


@dataclass
class StackNeed:
    bytes: int | None                 # None: unbounded (recursion) or no call graph
    path: list[str] = field(default_factory=list)   # the deepest call chain
    external: list[str] = field(default_factory=list)   # functions assumed to need EXTERNAL_BYTES
    note: str = ""

    def to_json(self) -> dict:
        return {"bytes": self.bytes, "path": self.path, "assumed_external": self.external, "note": self.note}


def _short(title: str) -> str:
    return title.split(":")[-1]


def read_call_graph(build_dir: str | Path) -> tuple[dict[str, int | None], dict[str, set[str]]]:
    """(frame bytes per function, callees per function) from every .ci file under build_dir.
    Functions are keyed by name (static ones as "file:name" resolved to "name" when unique);
    a frame of None means "no figure" (an external declaration)."""
    frames: dict[str, int | None] = {}
    edges: dict[str, set[str]] = {}
    for ci in sorted(Path(build_dir).rglob("*.ci")):
        text = ci.read_text(errors="replace")
        for title, label in _NODE.findall(text):
            m = _BYTES.search(label)
            size = int(m.group(1)) if m else None
            if size is not None or title not in frames:
                frames[title] = size if size is not None else frames.get(title)
        for src, dst in _EDGE.findall(text):
            edges.setdefault(src, set()).add(dst)
    return frames, edges


def stack_need(build_dir: str | Path, fpu: bool = False, linked: set[str] | None = None) -> StackNeed:
    """The static stack bound of the firmware built in build_dir (build/<platform>). `linked`, the
    function names in the final image (when known), keeps the pointer-call targets to functions
    the linker kept."""
    frames, edges = read_call_graph(build_dir)
    if ROOT not in frames:
        return StackNeed(None, note=f"no call graph in {build_dir} (built without -fcallgraph-info?)")
    called = {d for ds in edges.values() for d in ds}
    roots = {ROOT, *INTERRUPTS, "Fault_Handler", "Default_Handler"}
    # Address-taken functions: defined, never called by name, not an entry point.
    indirect_targets = sorted(t for t, f in frames.items() if f is not None and t not in called and t not in roots
                              and (linked is None or _short(t) in linked))
    memo: dict[tuple[str, bool], tuple[int, list[str]] | None] = {}
    external: set[str] = set()
    on_path: set[str] = set()

    def depth(fn: str, top: bool = True) -> tuple[int, list[str]] | None:
        """Deepest (bytes, chain) below fn; None on recursion. Inside a function reached through a
        pointer (top False), a further call through a pointer counts EXTERNAL_BYTES: a pointer
        call that reached its own caller would be recursion through a pointer, which our C has not."""
        key = (fn, top)
        if fn == INDIRECT and not top:
            return (EXTERNAL_BYTES, ["(call through a pointer)"])
        if key in memo:
            return memo[key]
        if fn in on_path:
            return None     # recursion
        if fn == INDIRECT:
            callees, own = indirect_targets, 0
        else:
            callees, own = sorted(edges.get(fn, set())), frames.get(fn)
            if own is None:
                external.add(_short(fn))
                own = EXTERNAL_BYTES
        on_path.add(fn)
        best: tuple[int, list[str]] | None = (0, [])
        for c in callees:
            r = depth(c, top and fn != INDIRECT)
            if r is None:
                best = None
                break
            if r[0] > best[0]:
                best = r
        on_path.discard(fn)
        result = None if best is None else (own + best[0], ([] if fn == INDIRECT else [_short(fn)]) + best[1])
        memo[key] = result
        return result

    main = depth(ROOT)
    if main is None:
        return StackNeed(None, note="recursion in the call graph: the stack need is unbounded")
    total, path = main
    handlers = [h for h in INTERRUPTS if frames.get(h) is not None]
    irq = [depth(h) for h in handlers]
    note = ""
    if irq and all(r is not None for r in irq):
        worst = max(irq, key=lambda r: r[0])
        frame = EXCEPTION_FRAME_FP if fpu else EXCEPTION_FRAME
        total += worst[0] + frame
        note = f"includes {worst[0] + frame} bytes for an interrupt ({worst[1][0]}) on top"
    return StackNeed(total, path, sorted(external), note)

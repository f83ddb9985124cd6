"""Template-free schedules: candidate schedules derived from a kernel's loop nest itself
(Ansor's sketch generation, narrowed to the loop nests of microcontroller kernels), for every
kernel that no hand-written knob space covers (pooling, mean, elementwise ops, float softmax,
float depthwise, hybrid convolutions, transposes and copies, matmul and attention parts).

The nest is read, not matched against a template: `blocks` finds its compute blocks,

    reduction    a loop directly around a scalar accumulator, set first, written by the loops
                 inside and stored once, last (`alloc acc; acc = init; for k.. { acc = acc +
                 ... }; y[..] = E(acc)`): pooling windows, a float depthwise pixel's taps, a
                 hybrid convolution's dot products
    elementwise  an innermost loop storing one element per iteration (no loop below it)

each with the chain of loops directly nested above it. Rules then derive the sketches that
apply (`sketches`), each a sequence of primitives:

    part          partition each loop of a block's chain where its padding tests are decided:
                  the longest run of iterations with the fewest tests left becomes a part of
                  its own, without them (the partition primitive; every copy of an inner loop
                  too), the border iterations keep them
    fuse          fuse the block's chain of loops from the outside in, wherever the fused
                  indices stay affine (no division or remainder): one long loop
    tile<T>       split the block's innermost loop by T (T divides it); a reduction block also
                  gets its accumulator as a tile of T (cache_write, placed as a local C
                  array: registers once unrolled) and its tile loop moved inside the
                  reduction loops (reorder), so each tap's address and padding test is shared
                  by T outputs; the tile loops are unrolled
    tile<T>@scratch  the same with the accumulator tile in the kernel's scratch (the cache
                  placement: an arena buffer instead of registers)
    unroll        unroll upward: every loop whose loops below are all unrolled and whose
                  extent is at most unroll_max_extent, up to MAX_UNROLL_STEPS straight-line
                  copies of a body (the default unrolls innermost loops only)
    tensorize     each loop that a micro-kernel of this core matches (schedule/tensorize.py's
                  registered intrinsics) becomes its call

"part+" and "fuse+" combine with the others, in that order. The space (family "sketch",
schedule/spaces.py) is the derived sketches times unroll_max_extent; its default point
(default_sketch: tensorize where a kernel of DEFAULT_TENSORIZE matches, else tile4 where a
reduction block takes it, a finding of the tuner folded into the default, else "lowered"; the
op's default unrolling) is the default schedule. Every sketch
keeps the order in which output elements are written and writes each one after the reads it
needs (only the innermost loop is tiled, a tile's outputs are written after all its reads, a
partition keeps the order of iterations), so the in-place rules of memory/inplace.py hold for
every point.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from ..tir.nodes import Allocate, BinOp, For, IntImm, PrimFunc, Select, SeqStmt, Store, substitute, walk
from .cache import LOCAL_TILE_MAX
from .loop_xform import _conjuncts, prune_selects
from .knobs import declare_knob
from .primitives import ScheduleError
from .depthwise_f32 import DEPTHWISE_F32_MVE
from .tensorize import TENSOR_INTRINS
from .trace import Schedule
from .unrolling import UNROLL_MAX_EXTENT_DOMAIN, default_unroll, unroll_short_loops
from .variants import kernel_set

SKETCH_TILES = (2, 4, 8, 16)
MAX_UNROLL_STEPS = 64          # straight-line copies of one body the "unroll" rule allows


def _names() -> tuple[str, ...]:
    bases = (["lowered", "unroll", "tensorize"] + [f"tile{t}" for t in SKETCH_TILES]
             + [f"tile{t}@scratch" for t in SKETCH_TILES])
    fused = tuple(bases) + tuple(f"fuse+{b}" for b in bases[1:]) + ("fuse",)
    return fused + tuple(f"part+{b}" for b in fused[1:]) + ("part",)


SKETCH_DOMAIN = declare_knob("sketch", _names(), "sketch: the template-free schedule derived from the loop nest "
                             "(schedule/sketch.py); each kernel's space holds the sketches that apply to it")


@dataclass(frozen=True)
class Block:
    loop: str                   # the innermost loop of the block
    extent: int
    chain: tuple[str, ...]      # the loops directly nested down to `loop`, outermost first
    acc: str | None = None      # a reduction block's accumulator


def blocks(func: PrimFunc) -> list[Block]:
    """The compute blocks of `func`'s nest, in program order."""
    out: list[Block] = []

    def visit(n, chain: tuple[For, ...]):
        if isinstance(n, For):
            chain = chain + (n,)
            body = n.body
            if isinstance(body, Allocate) and _simple_reduction(body):
                out.append(Block(n.var.name, n.extent, tuple(c.var.name for c in chain), body.buffer.name))
                return
            if not any(isinstance(c, (For, Allocate)) for c in walk(body)):
                out.append(Block(n.var.name, n.extent, tuple(c.var.name for c in chain)))
                return
            visit(body, chain if isinstance(body, For) else ())
            return
        for child in _children(n):
            visit(child, ())
    visit(func.body, ())
    return out


def _simple_reduction(alloc: Allocate) -> bool:
    """`alloc acc; acc = init; (loops that write acc only)...; one store of the result`: the
    accumulator set before anything reads it, loops in between, and the block's one output
    store last, after every read (what lets a tile keep the in-place rules: its outputs are
    written after all its reads)."""
    acc = alloc.buffer
    stmts = list(alloc.body.stmts) if isinstance(alloc.body, SeqStmt) else [alloc.body]
    if acc.shape != () or len(stmts) < 3 or any(isinstance(n, Allocate) for n in walk(alloc.body)):
        return False
    first, middle, last = stmts[0], stmts[1:-1], stmts[-1]
    if not (isinstance(first, Store) and first.buffer is acc and isinstance(last, Store)
            and last.buffer.scope != "local"):
        return False
    return all(isinstance(m, For) and all(w.buffer is acc for w in walk(m) if isinstance(w, Store)) for m in middle)


def _children(n) -> list:
    if hasattr(n, "stmts"):
        return list(n.stmts)
    return [c for c in (getattr(n, a, None) for a in ("body", "then_body", "else_body")) if c is not None]


def _loop_names(f: PrimFunc) -> list[str]:
    return [n.var.name for n in walk(f.body) if isinstance(n, For)]


def _affine_body(f: PrimFunc, loop: str) -> bool:
    """No division or remainder by a constant in `loop`'s body (a fuse that kept indices affine)."""
    node = next(n for n in walk(f.body) if isinstance(n, For) and n.var.name == loop)
    return not any(isinstance(n, BinOp) and n.op in ("div", "mod", "floordiv", "floormod") and
                   any(getattr(v, "name", None) == loop for v in walk(n)) for n in walk(node.body))


def _fuse_block(sch: Schedule, b: Block) -> str:
    """Fuse b's chain from the outside in where the indices stay affine; the innermost loop's new name."""
    current = b.chain[0]
    for inner in b.chain[1:]:
        before = set(_loop_names(sch.func))
        trial = Schedule(sch.func)
        trial.fuse(current, inner)
        fused = next(n for n in _loop_names(trial.func) if n not in before)
        if _affine_body(trial.func, fused):
            sch.fuse(current, inner)
            current = fused
        else:
            current = inner
    return current


def _open_terms(node: For, value: int) -> int:
    """Select terms (padding tests) left undecided in `node`'s body when its var is `value`."""
    body = prune_selects(substitute(node.body, {node.var: IntImm(value)}), {})
    return sum(len(_conjuncts(n.cond)) for n in walk(body) if isinstance(n, Select))


def _partition_loop(sch: Schedule, loop: str) -> list[str]:
    """Cut `loop` where its padding tests are decided: the longest run of values that leaves the
    fewest tests open becomes a part of its own (partition prunes them there). The loop's
    copies' names (one, or one per part)."""
    node = next(n for n in walk(sch.func.body) if isinstance(n, For) and n.var.name == loop)
    if node.extent < 3:
        return [loop]
    opens = [_open_terms(node, i) for i in range(node.extent)]
    least = min(opens)
    if least == max(opens):
        return [loop]
    best, start = (0, 0), None
    for i, k in enumerate(opens + [None]):
        if k == least and start is None:
            start = i
        elif k != least and start is not None:
            best = max(best, (i - start, -start))
            start = None
    lo = -best[1]
    hi = lo + best[0]
    cuts = [c for c in (lo, hi) if 0 < c < node.extent]
    before = set(_loop_names(sch.func))
    sch.apply("partition", loop, *cuts)
    return [loop] + [n for n in _loop_names(sch.func) if n not in before and n.startswith(f"{loop}_")]


def _is_copy(n: str, name: str) -> bool:
    rest = n[len(name):]
    return n.startswith(name) and len(rest) >= 3 and all(
        len(part) >= 2 and part[0] in "pqrstu" and part[1:].isdigit() for part in rest[1:].split("_")) \
        and rest[0] == "_"


def _partition_blocks(sch: Schedule) -> None:
    """Partition each block's chain of loops, outermost first, every copy of an inner loop too."""
    for b in blocks(sch.func):
        copies = [b.chain[0]]
        for depth, name in enumerate(b.chain):
            if depth:      # the copies of this loop that the cuts above made (suffixes _p1, _q2, ...)
                copies = [n for n in _loop_names(sch.func) if n == name or _is_copy(n, name)]
            for loop in copies:
                try:
                    _partition_loop(sch, loop)
                except ScheduleError:
                    continue


_PARTITIONS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _partitions(func: PrimFunc) -> tuple:
    """The partition decisions of the "part" rule on `func` (computed once per function)."""
    if func not in _PARTITIONS:
        sch = Schedule(func)
        _partition_blocks(sch)
        _PARTITIONS[func] = sch.trace.decisions
    return _PARTITIONS[func]


def _tile_block(sch: Schedule, b: Block, loop: str, extent: int, tile: int, scope: str) -> None:
    taken = set(_loop_names(sch.func))
    if f"{loop}_o" in taken or f"{loop}_i" in taken:
        raise ScheduleError(f"sketch tile: the names {loop}_o, {loop}_i are taken")
    sch.split(loop, tile)
    inner = f"{loop}_i"
    if b.acc is None:
        sch.unroll(inner)
        return
    before = set(_loop_names(sch.func))
    sch.cache_write(b.acc, inner, scope)
    tiles = [inner] + [n for n in _loop_names(sch.func) if n not in before]
    for name in tiles:
        node = next(n for n in walk(sch.func.body) if isinstance(n, For) and n.var.name == name)
        chain, body = [node.var.name], node.body
        while isinstance(body, For):
            chain.append(body.var.name)
            body = body.body
        if len(chain) > 1:                      # a reduction nest: the tile loop goes inside it
            sch.reorder(*chain[1:], chain[0])
        sch.unroll(name)


def _extent(f: PrimFunc, loop: str) -> int:
    return next(n.extent for n in walk(f.body) if isinstance(n, For) and n.var.name == loop)


def unroll_upward(sch: Schedule, max_extent: int) -> None:
    """Unroll, bottom up, every loop of extent 2..max_extent whose loops below are all unrolled,
    while the straight-line copies of its innermost body stay within MAX_UNROLL_STEPS."""
    if max_extent < 2:
        return
    loops = [n for n in walk(sch.func.body) if isinstance(n, For)]
    unrolled = {n.var.name for n in loops if n.kind == "unrolled"}
    chosen = []
    for n in reversed(loops):            # every loop after the loops below it
        if n.var.name in unrolled or not 1 < n.extent <= max_extent:
            continue
        inner = [c for c in walk(n.body) if isinstance(c, For)]
        if any(c.var.name not in unrolled for c in inner):
            continue
        steps = n.extent
        for c in inner:
            steps *= c.extent
        if steps <= MAX_UNROLL_STEPS:
            unrolled.add(n.var.name)
            chosen.append(n.var.name)
    for name in chosen:
        sch.unroll(name)


def _available(intrin: str, target) -> bool:
    """Whether `intrin`'s micro-kernel exists on `target`: its name says its kernel set
    (mc_..._c_..., _dsp_, _mve_, _fpu_); a name without one is a portable kernel."""
    tokens = set(intrin.split("_"))
    if "fpu" in tokens:
        return bool(getattr(target, "fpu", False))
    if {"mve", "f32"} <= tokens:              # Helium's float vectors (MVE-F)
        return bool(getattr(target, "mve_float", False))
    for ks in ("c", "dsp", "mve"):
        if ks in tokens:
            return kernel_set(target) == ks
    return True


def _tensorizable(f: PrimFunc, target) -> list[tuple[str, str]]:
    """(loop, intrinsic) for the outermost loops a micro-kernel of `target` matches."""
    out, covered = [], set()
    for n in walk(f.body):
        if not isinstance(n, For) or n.var.name in covered:
            continue
        for name, ti in sorted(TENSOR_INTRINS.items()):
            if _available(name, target) and ti.match(n) is not None:
                out.append((n.var.name, name))
                covered |= {c.var.name for c in walk(n) if isinstance(c, For)}
                break
    return out


_APPLIED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def apply_sketch(func: PrimFunc, target, sketch: str, unroll_max_extent: int) -> Schedule:
    """`func` scheduled by `sketch` (one of `sketches(func, target)`); ScheduleError when it does
    not apply. The innermost short loops are unrolled by apply_config afterwards. Each result is
    kept per function (default_sketch's check and the default schedule ask for the same one)."""
    key = (sketch, unroll_max_extent, kernel_set(target), bool(getattr(target, "fpu", False)),
           bool(getattr(target, "mve_float", False)))
    memo = _APPLIED.setdefault(func, {})
    if key not in memo:
        try:
            done = _apply_sketch(func, target, sketch, unroll_max_extent)
            memo[key] = (done.func, tuple(done.trace.decisions))
        except ScheduleError as e:
            memo[key] = e
    got = memo[key]
    if isinstance(got, ScheduleError):
        raise got
    sch = Schedule(func)                    # a fresh Schedule: callers go on scheduling it
    sch.func, sch._decisions = got[0], list(got[1])
    return sch


def _apply_sketch(func: PrimFunc, target, sketch: str, unroll_max_extent: int) -> Schedule:
    sch = Schedule(func)
    parts = sketch.split("+")
    part, fuse, rule = "part" in parts, "fuse" in parts, parts[-1]
    if part:
        cuts = _partitions(func)
        if not cuts:
            raise ScheduleError(f"sketch {sketch}: no loop has padding tests a partition decides")
        for d in cuts:
            sch.apply(d.primitive, *d.args)
    bs = blocks(sch.func)
    innermost = {}
    for b in bs:
        innermost[b] = _fuse_block(sch, b) if fuse and len(b.chain) > 1 else b.loop
    if rule.startswith("tile"):
        tile, _, scope = rule[4:].partition("@")
        tile, scope = int(tile), scope or "local"
        if scope == "local" and tile > LOCAL_TILE_MAX:
            raise ScheduleError(f"sketch {sketch}: a local tile of {tile} is over {LOCAL_TILE_MAX}")
        done = 0
        for b in bs:
            extent = _extent(sch.func, innermost[b])
            if extent % tile == 0 and extent > 1 and (b.acc is not None or scope == "local"):
                _tile_block(sch, b, innermost[b], extent, tile, scope)
                done += 1
        if not done:
            raise ScheduleError(f"sketch {sketch}: no block's innermost loop is a multiple of {tile}")
        unroll_upward(sch, unroll_max_extent)
    elif rule == "unroll":
        unroll_upward(sch, unroll_max_extent)
    elif rule == "tensorize":
        found = _tensorizable(sch.func, target)
        if not found:
            raise ScheduleError(f"sketch {sketch}: no loop matches a micro-kernel of this core")
        for loop, intrin in found:
            sch.tensorize(loop, intrin)
    elif rule not in ("lowered", "fuse", "part"):
        raise ScheduleError(f"unknown sketch {sketch!r}")
    if fuse and not any(d.primitive == "fuse" for d in sch.trace.decisions):
        raise ScheduleError(f"sketch {sketch}: no chain of loops fuses with affine indices")
    return sch


# Folded from the tuner (benchmarks/sketches.py on mps2-an386, docs/tuning.md): a reduction
# block whose innermost loop is a multiple of 4 takes tile4, four accumulators in registers
# sharing each tap's address and padding test: kws's float depthwise 501,170 -> 324,250
# instructions per layer, its hybrid convolutions 2,032,360 -> 1,220,600 and 3,013,100 ->
# 1,829,270, its 25x5 average pool 22,040 -> 17,880. Tiles of 8 won on some (the hybrid k=40
# convolution: 1,145,880) and lost on others (k=8000: 2,467,680, its eight sums spill), so 4.
DEFAULT_TILE = "tile4"


# Micro-kernels that are the default wherever one matches a loop of the kernel, by the
# `tensorize` sketch: Helium's float depthwise (kws's float twin on mps3-an547: 325,969 ->
# 101,188 instructions per depthwise layer, docs/performance.md).
DEFAULT_TENSORIZE = (DEPTHWISE_F32_MVE,)


def _default_tensorize(func: PrimFunc, target) -> bool:
    for name in DEFAULT_TENSORIZE:
        if _available(name, target):
            match = TENSOR_INTRINS[name].match
            if any(isinstance(n, For) and match(n) is not None for n in walk(func.body)):
                return True
    return False


def default_sketch(func: PrimFunc, target) -> str:
    """The default point's sketch: `tensorize` where a DEFAULT_TENSORIZE kernel matches, else
    DEFAULT_TILE where a reduction block's innermost loop is a multiple of 4 and the sketch
    applies, else "lowered" (the loops as lowered)."""
    if _default_tensorize(func, target):
        return "tensorize"
    if not any(b.acc is not None and b.extent % 4 == 0 for b in blocks(func)):
        return "lowered"
    try:
        apply_sketch(func, target, DEFAULT_TILE, default_unroll(func))
    except ScheduleError:
        return "lowered"
    return DEFAULT_TILE


_SKETCHES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def sketches(func: PrimFunc, target) -> tuple[str, ...]:
    """The sketches that apply to `func` on `target`, "lowered" first: each is tried, and kept
    when it applies and gives another nest than the ones kept before it (computed once per
    function and core: the knob space asks for it at every apply_config)."""
    per = _SKETCHES.setdefault(func, {})
    key = (kernel_set(target), bool(getattr(target, "fpu", False)), bool(getattr(target, "mve_float", False)))
    if key not in per:
        per[key] = _derive_sketches(func, target)
    return per[key]


def _derive_sketches(func: PrimFunc, target) -> tuple[str, ...]:
    kept, seen = ["lowered"], set()
    widest = max(UNROLL_MAX_EXTENT_DOMAIN)
    default = default_sketch(func, target)
    for name in SKETCH_DOMAIN:
        if name == "lowered":
            seen.add(_text(Schedule(func), func, widest))
            continue
        if name == default:              # the default point is always in the space
            seen.add(_text(apply_sketch(func, target, name, widest), func, widest))
            kept.append(name)
            continue
        try:
            sch = apply_sketch(func, target, name, widest)
        except ScheduleError:
            continue
        text = _text(sch, func, widest)
        if text not in seen:
            seen.add(text)
            kept.append(name)
    return tuple(kept)


def _text(sch: Schedule, func: PrimFunc, widest: int) -> str:
    from ..tir.printer import tir_str

    unroll_short_loops(sch, widest)
    return tir_str(sch.func)
